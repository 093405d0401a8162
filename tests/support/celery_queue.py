"""Send the platform's tasks to a real Redis broker for the length of a block (the tests run them eagerly
otherwise), as a web process with workers does; nothing consumes them unless the test starts a worker."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def tasks_queued_to(redis_url: str):
    from xqmeval.celery import app

    def forget_connections() -> None:
        # the app keeps its connection and producer pools from the configuration it first saw
        app._pool = None
        app.amqp._producer_pool = None

    saved = {k: app.conf.get(k) for k in ("broker_url", "task_always_eager")}
    forget_connections()
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    try:
        yield
    finally:
        forget_connections()
        app.conf.update(saved)
