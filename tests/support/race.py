"""Writers started at the same moment, each in its own thread and database connection: review's and rating's
concurrency tests race them for the same rows, agreement's refresh test for one project's refresh."""

import threading

from django.db import connections


def race(users, work) -> None:
    """Start ``work(user)`` for every user at the same moment, each in its own thread and database
    connection; fail with whatever any of them raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(users))

    def run(user):
        try:
            barrier.wait()
            work(user)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
