"""Cancel interrupts an item being worked on (issue 36.5), not only the items not started yet: requests in flight
get a short grace (``llm_client.chat.CANCEL_GRACE_S``), then are dropped; their items stay pending, the run
records why, and a resume finishes it. Against the real OpenAI-compatible stub server over HTTP, answering
each request only after 600 s: longer than the test waits, so only the cancel can end the run (a wall-clock limit
on how soon it stops measured the machine's load, as it did in test_kill_resume.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun
from llm_client.chat import CANCEL_GRACE_S

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_ANSWER_S = 600.0
WAIT_S = 60.0  # how long the worker is given to stop: a tenth of an answer's delay


def test_cancel_during_slow_requests_stops_the_run_promptly_with_the_reason(project, segments, stub, llm_env):
    run = services.run_plan(
        spec=services.RunSpec(
            project=project,
            kind="mqm",
            backend="openai",
            directions=["en-de"],
            model="gpt-4o",
            base_url=stub.base_url,
            concurrency=2,
            retry_base_delay=0.01,
            timeout=SLOW_ANSWER_S * 2,
            max_attempts=1,
        )
    )
    stub.state.latency = SLOW_ANSWER_S
    outcome: dict = {}

    def work() -> None:
        try:
            outcome["run"] = services.run_execute(run_id=run.pk)
        finally:
            connection.close()

    worker = threading.Thread(target=work, daemon=True)  # a worker that missed the cancel is left behind
    worker.start()
    deadline = time.monotonic() + 30
    while len(stub.state.calls) < 2 and time.monotonic() < deadline:  # both requests are in flight
        time.sleep(0.05)
    assert len(stub.state.calls) == 2
    assert services.run_cancel(run=run)
    worker.join(timeout=WAIT_S)
    stub.state.latency = 0.0
    # Stopped on the cancel (the requests in flight dropped after CANCEL_GRACE_S), not by an answer: none comes
    # before SLOW_ANSWER_S, ten times what the worker was given.
    assert not worker.is_alive(), f"the run did not stop within {WAIT_S} s of the cancel (grace {CANCEL_GRACE_S} s)"
    run.refresh_from_db()
    assert outcome["run"].status == run.status == InjectionRun.Status.CANCELLED
    assert run.error == f"cancelled with {run.total} item(s) pending"
    assert run.items.filter(status=InjectionItem.Status.PENDING).count() == run.total and not Candidate.objects.exists()
    assert len(stub.state.calls) == 2  # no request started after the cancel

    services.run_resume(run=run)
    resumed = services.run_execute(run_id=run.pk)
    assert resumed.status == InjectionRun.Status.DONE and resumed.done == resumed.total == run.total
    assert resumed.error == ""
