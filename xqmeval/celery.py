"""Celery app. Without CELERY_BROKER_URL tasks run in-process (eager), so a fresh machine needs no broker.

Queues: ``default`` (imports, merging, releases, ingestion), ``llm`` (injection runs), ``gpu`` (scoring).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")

app = Celery("xqmeval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
