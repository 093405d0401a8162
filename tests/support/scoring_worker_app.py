"""The scoring workers' Celery app (``scoring.worker``), for a test that kills a worker and waits for Redis to
hand its task to another: kombu sweeps the unacknowledged tasks whose visibility timeout has passed only every
``unacked_restore_interval`` s x ``unacked_restore_throttle`` calls (10 x 10: 100 s); here every second. The
worker, its tasks and the redelivery are those of production; only the sweep's period is shorter.

Started as ``celery -A tests.support.scoring_worker_app worker …`` (``tests/workers/processes.py``)."""

from __future__ import annotations

from scoring.worker import app

app.conf.broker_transport_options = {
    **app.conf.broker_transport_options,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
