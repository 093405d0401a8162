"""Cancel interrupts an item being worked on (issue 36.5), not only the items not started yet: requests in flight
get a short grace (``llm_client.chat.CANCEL_GRACE_S``), then are dropped; their items stay pending, the run
records why, and a resume finishes it. Against the real OpenAI-compatible stub server over HTTP, answering
each request only after 30 s."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun
from llm_client.chat import CANCEL_GRACE_S

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_ANSWER_S = 30.0


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

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 30
    while len(stub.state.calls) < 2 and time.monotonic() < deadline:  # both requests are in flight
        time.sleep(0.05)
    assert len(stub.state.calls) == 2
    assert services.run_cancel(run=run)
    cancelled_at = time.monotonic()
    worker.join(timeout=SLOW_ANSWER_S + 10)
    stopped_after = time.monotonic() - cancelled_at
    stub.state.latency = 0.0
    # Within the grace, a look at the cancel flag (every second) and slack; not when the answers come (30 s).
    assert not worker.is_alive() and stopped_after < CANCEL_GRACE_S + 4, stopped_after
    run.refresh_from_db()
    assert outcome["run"].status == run.status == InjectionRun.Status.CANCELLED
    assert run.error == f"cancelled with {run.total} item(s) pending"
    assert run.items.filter(status=InjectionItem.Status.PENDING).count() == run.total and not Candidate.objects.exists()
    assert len(stub.state.calls) == 2  # no request started after the cancel

    services.run_resume(run=run)
    resumed = services.run_execute(run_id=run.pk)
    assert resumed.status == InjectionRun.Status.DONE and resumed.done == resumed.total == run.total
    assert resumed.error == ""
