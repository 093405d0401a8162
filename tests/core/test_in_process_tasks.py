"""In-process (eager) tasks started from several threads at once, as concurrent requests start them on the
default setup without a broker. Celery's guard against joining inside a task is one flag for the whole
process, so unserialised threads raced on it: a thread's own join was refused ("Never call result.get()
within a task!", seen as 500s and releases stuck in 'building') and the flag could stay set afterwards."""

from __future__ import annotations

import threading
import time

import pytest
from celery import _state

from xqmeval.celery import app


@app.task(name="tests.core.echo_after_a_pause")
def echo_after_a_pause(value: int) -> int:
    time.sleep(0.0005)  # long enough for the threads to interleave inside Celery's eager apply
    return value


def test_tasks_run_in_process_from_several_threads_join_and_leave_the_guard_as_they_found_it():
    assert app.conf.task_always_eager  # the default without a broker, which this test is about
    errors: list[BaseException] = []

    def requests_in_one_thread() -> None:
        for i in range(150):
            try:
                assert echo_after_a_pause.delay(i).get() == i  # get() checks the join guard
            except BaseException as exc:  # every failure is the finding
                errors.append(exc)

    threads = [threading.Thread(target=requests_in_one_thread) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _state.task_join_will_block() is False


_holding = threading.Event()
_let_go = threading.Event()


@app.task(name="tests.core.hold_until_let_go")
def hold_until_let_go() -> None:
    _holding.set()
    assert _let_go.wait(10)


def test_a_finished_result_is_joined_while_another_thread_runs_a_task():
    """The race made certain: one thread is inside a task (Celery's process-wide guard is set) when another
    thread joins a result it already holds. The join waits for the task instead of being refused."""
    _holding.clear()
    _let_go.clear()
    finished = echo_after_a_pause.delay(7)
    inside = threading.Thread(target=hold_until_let_go.delay)
    inside.start()
    assert _holding.wait(10)
    timer = threading.Timer(0.2, _let_go.set)  # the join below waits for this, then for the task to end
    timer.start()
    try:
        assert finished.get() == 7
    finally:
        _let_go.set()
        timer.cancel()
        inside.join()
    assert _state.task_join_will_block() is False


@app.task(name="tests.core.join_a_subtask")
def join_a_subtask() -> int:
    return echo_after_a_pause.delay(3).get()


def test_inside_a_task_joining_a_subtask_is_still_refused():
    with pytest.raises(RuntimeError, match="Never call result.get"):
        join_a_subtask.delay().get()
    assert _state.task_join_will_block() is False
