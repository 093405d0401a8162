"""In-process (eager) tasks started from several threads at once, as concurrent requests start them on the
default setup without a broker. Celery's guard against joining inside a task is one flag for the whole
process, so unserialised threads raced on it: a thread's own join was refused ("Never call result.get()
within a task!", seen as 500s and releases stuck in 'building') and the flag could stay set afterwards."""

from __future__ import annotations

import threading
import time

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
