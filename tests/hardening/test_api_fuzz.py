"""Fuzz every API operation from its OpenAPI schema (schemathesis), as an annotator and as an admin, through the
WSGI app: no 500, and every documented response matches the schema. Bounded examples keep it under a minute."""

from __future__ import annotations

import base64
import json

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.annotation.review.factories import make_candidates

EXAMPLES = 15  # per operation and role
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]

# The fuzzing phase only (valid and invalid data, EXAMPLES per operation): the coverage phase enumerates every
# boundary case of every field and takes minutes. Out-of-range ids have their own tests (test_bad_requests.py).
CONFIG = SchemathesisConfig.from_dict(
    {
        "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        "generation": {"max-examples": EXAMPLES, "mode": "all", "deterministic": True},
    }
)
pytestmark = pytest.mark.slow

schema = schemathesis.openapi.from_dict(
    json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True))), config=CONFIG
)
APP = get_wsgi_application()


def _basic(username: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


@pytest.fixture
def keep_connection():
    """The WSGI app closes the database connection after each request (request_finished); the test's own
    transaction lives on it. Django's test client disconnects the same handler while it calls the app."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def accounts(db, project, languages, keep_connection):
    from core.services import user_create

    with_fast_hasher = {"PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"]}
    from django.test import override_settings

    with override_settings(**with_fast_hasher):
        make_candidates(project, languages, "en-de")
        user_create(username="fuzz_admin", password="fuzz-admin-pass-1", role="admin")
        user_create(username="fuzz_anna", password="fuzz-anna-pass-1", languages=["de"])
        yield {"admin": _basic("fuzz_admin", "fuzz-admin-pass-1"), "annotator": _basic("fuzz_anna", "fuzz-anna-pass-1")}


def _run(case, headers, project_name):
    if "project" in (case.path_parameters or {}):
        case.path_parameters["project"] = project_name  # a real project: answers with data, not only 404
    response = case.call_and_validate(app=APP, headers=headers, checks=CHECKS)
    assert response.status_code != 401, "the fuzz must reach the endpoint, authenticated"


FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


@schema.parametrize()
@FUZZ
def test_api_as_an_annotator(case, accounts, project, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    _run(case, accounts["annotator"], project.name)


@schema.parametrize()
@FUZZ
def test_api_as_an_admin(case, accounts, project, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    _run(case, accounts["admin"], project.name)
