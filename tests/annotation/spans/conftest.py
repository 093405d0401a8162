"""Fixtures of the span-annotation tests: an ESA and an MQM task over en-de and en-ar items."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.spans import services
from core.services import user_create


@pytest.fixture
def annotator_ar(db):
    return user_create(username="sara_ar", password="sara-pass-123", languages=["ar"])


@pytest.fixture
def second_de(db):
    return user_create(username="ben_de", password="ben-pass-123", languages=["de"])


ROWS_DE = [
    {"id": "1", "source": "The cat sat on the mat.", "text": "Die Katze saß auf der Matte.", "system": "sysA"},
    {"id": "2", "source": "The train leaves at noon.", "text": "Der Bus fährt mittags ab.", "system": "sysA"},
    {"id": "3", "source": "He bought three apples.", "text": "Er kaufte Äpfel.", "system": "sysA"},
]
ROWS_AR = [{"id": "1", "source": "The book is new.", "text": "الكتاب قديم.", "system": "sysA"}]


def make_task(project, admin, name="esa-1", protocol="esa", **kw):
    task = services.span_task_create(actor=admin, project=project, name=name, protocol=protocol, seed=7, **kw)
    services.span_items_import(task=task, direction_code="en-de", rows=[dict(r) for r in ROWS_DE], source_name="de.tsv")
    services.span_items_import(task=task, direction_code="en-ar", rows=[dict(r) for r in ROWS_AR], source_name="ar.tsv")
    return task


@pytest.fixture
def esa_task(project, admin_user):
    return make_task(project, admin_user)


@pytest.fixture
def mqm_task(project, admin_user):
    return make_task(project, admin_user, name="mqm-1", protocol="mqm", critical_weight=25)


def client_for(user, password):
    client = Client()
    assert client.login(username=user.username, password=password)
    return client
