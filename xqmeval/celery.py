"""Celery app. Without CELERY_BROKER_URL tasks run in-process (eager), so a fresh machine needs no broker.

Queues: ``default`` (imports, merging, releases, ingestion), ``llm`` (injection runs), ``gpu`` (scoring).
"""

import os
import threading

from celery import Celery, Task
from celery.result import EagerResult

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")

# In-process tasks run inside the request's thread. Celery guards an eager ``apply_async`` with a flag that is
# global to the process (``celery.result.denied_join_result`` sets it and restores it), so two threads running
# tasks at once race on it: one thread's chord then refuses its own join ("Never call result.get() within a
# task!") and the flag can stay set for the rest of the process. In-process tasks therefore run one at a time
# per process (reentrant: a task may start its subtasks in the same thread). Joining their results reads the
# same flag, so it waits for the lock too: otherwise a caller's ``get()`` in one thread sees the flag another
# thread's task has set and is refused. Tasks on workers are unaffected.
_IN_PROCESS = threading.RLock()


class InProcessResult(EagerResult):
    """An in-process task's result, joined under the lock (inside a task the guard still refuses the join)."""

    def get(self, *args, **kwargs):
        with _IN_PROCESS:
            return super().get(*args, **kwargs)


class InProcessSafeTask(Task):
    def apply_async(self, *args, **kwargs):
        if not self._get_app().conf.task_always_eager:
            return super().apply_async(*args, **kwargs)
        with _IN_PROCESS:
            result = super().apply_async(*args, **kwargs)
        if type(result) is EagerResult:
            result = InProcessResult(*result.__reduce_args__())
        return result


app = Celery("xqmeval", task_cls=InProcessSafeTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
