"""Keys bound to their endpoints (#36.1) and a start form that creates no run until the backend can start
(#37.6, #37.7): a real listener records every Authorization header it is sent."""

from __future__ import annotations

import re
import socket

import pytest
from django.urls import reverse

from injection import services
from injection.models import InjectionRun
from llm_client.endpoints import Endpoint
from tests.support.asserts import every
from tests.support.stub_openai import StubServer, _Handler

pytestmark = pytest.mark.django_db

SERVER_KEY = "sk-server-secret-7f3a9c"


class _Recording(_Handler):
    def do_POST(self):
        self.server.keys.append(self.headers.get("Authorization", ""))
        super().do_POST()

    def do_GET(self):
        self.server.keys.append(self.headers.get("Authorization", ""))
        super().do_GET()


class KeyRecordingStub(StubServer):
    handler_class = _Recording

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys: list[str] = []


@pytest.fixture
def listener():
    with KeyRecordingStub() as server:
        yield server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(client, segments, **fields):
    form = {
        "project": segments[0].project_id,
        "directions": ["en-de"],
        "kind": "mqm",
        "error_types": ["Addition"],
        "backend": "openai",
        "model": "gpt-4o",
        "concurrency": 2,
        "seed": 1,
        "temperature": 0.5,
        **fields,
    }
    return client.post(reverse("injection:runs"), form)


def test_the_server_key_never_reaches_a_url_typed_into_the_form(
    client, admin_user, segments, listener, settings, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    settings.LLM_ENDPOINTS = (Endpoint(name="openai", key_env="OPENAI_API_KEY"),)
    settings.LLM_ALLOW_CUSTOM_URL = True  # the operator allows typed URLs: they still get no key
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, segments, base_url=listener.base_url, name="typed-url")
    assert response.status_code == 302, response.content.decode()[-2000:]
    run = InjectionRun.objects.get(name="typed-url")
    assert run.done == run.total > 0  # the listener answered every request …
    assert set(listener.keys) - {""} == {"Bearer EMPTY"}  # … and never saw a server key (the probe sends none)
    assert not any(SERVER_KEY in key for key in listener.keys)


def test_a_configured_endpoint_gets_its_own_key_and_no_other(
    client, admin_user, segments, listener, settings, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    monkeypatch.setenv("LAB_KEY", "lab-key-123456")
    settings.LLM_ENDPOINTS = (
        Endpoint(name="openai", key_env="OPENAI_API_KEY"),
        Endpoint(name="lab", base_url=listener.base_url, key_env="LAB_KEY", models=("gpt-4o",)),
    )
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, segments, endpoint="lab", name="lab-run")
    assert response.status_code == 302
    run = InjectionRun.objects.get(name="lab-run")
    assert run.parameters["endpoint"] == "lab" and run.done == run.total > 0
    assert set(listener.keys) - {""} == {"Bearer lab-key-123456"}  # the probe sends none; the requests their own


def test_typed_urls_are_refused_unless_the_operator_allows_them(project, segments, listener, settings, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    settings.LLM_ENDPOINTS = (Endpoint(name="openai", key_env="OPENAI_API_KEY"),)
    spec = services.RunSpec(
        project=project,
        kind="mqm",
        backend="openai",
        directions=["en-de"],
        base_url=listener.base_url,
        custom_url_allowed=False,
    )
    with pytest.raises(services.RunRejected, match=r"--base-url: .* is not a configured endpoint"):
        services.run_plan(spec=spec)
    assert not InjectionRun.objects.exists() and not listener.keys


def test_the_form_has_no_url_field_unless_allowed_and_ignores_one_posted(client, admin_user, segments, settings):
    settings.LLM_ALLOW_CUSTOM_URL = False
    client.force_login(admin_user)
    page = client.get(reverse("injection:runs")).content.decode()
    assert 'name="endpoint"' in page and 'name="base_url"' not in page
    settings.LLM_ALLOW_CUSTOM_URL = True
    assert 'name="base_url"' in client.get(reverse("injection:runs")).content.decode()


def test_a_missing_key_is_a_form_error_naming_the_field_and_no_run_is_created(
    client, admin_user, segments, settings, monkeypatch, listener
):
    monkeypatch.delenv("LAB_KEY", raising=False)
    settings.LLM_ENDPOINTS = (Endpoint(name="lab", base_url=listener.base_url, key_env="LAB_KEY"),)
    client.force_login(admin_user)
    response = _post(client, segments, endpoint="lab")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Endpoint: endpoint lab needs LAB_KEY in the server&#x27;s environment" in page
    assert not re.search(r"--[a-z]", page.split("<main", 1)[-1])  # no command-line wording
    assert not InjectionRun.objects.exists()


def test_an_unreachable_endpoint_is_a_form_error_and_no_run_is_created(
    client, admin_user, segments, settings, monkeypatch
):
    monkeypatch.setenv("LAB_KEY", "lab-key-123456")
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    settings.LLM_ENDPOINTS = (Endpoint(name="lab", base_url=dead, key_env="LAB_KEY"),)
    client.force_login(admin_user)
    response = _post(client, segments, endpoint="lab")
    assert response.status_code == 200
    assert f"Endpoint: cannot reach {dead}" in response.content.decode()
    assert not InjectionRun.objects.exists()


def test_errors_name_the_fields_as_the_form_labels_them(client, admin_user, segments, settings, listener, monkeypatch):
    monkeypatch.setenv("LAB_KEY", "lab-key-123456")
    settings.LLM_ENDPOINTS = (Endpoint(name="lab", base_url=listener.base_url, key_env="LAB_KEY", models=("m1",)),)
    client.force_login(admin_user)
    page = _post(client, segments, endpoint="lab", model="gpt-4o").content.decode()
    assert "Model: &#x27;gpt-4o&#x27; is not a model of endpoint lab (m1)" in page and "--model" not in page
    assert not InjectionRun.objects.exists()


def test_the_form_shows_only_the_chosen_backends_fields_and_ignores_the_others(
    client, admin_user, segments, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    page = client.get(reverse("injection:runs")).content.decode()
    assert 'data-backends="openai batch"' in page and 'data-backends="vllm"' in page  # engine options: vllm only
    assert "js/injection-form.js" in page
    with django_capture_on_commit_callbacks(execute=True):  # the rule backend reads none of these
        response = _post(
            client,
            segments,
            backend="rule",
            rpm="not a number",
            engine_options="nonsense",
            endpoint="nowhere",
            name="rule-run",
        )
    assert response.status_code == 302, re.findall(r"role=\"alert\">(.*?)<", response.content.decode())
    assert InjectionRun.objects.get(name="rule-run").backend == "rule"


def test_the_form_offers_and_accepts_only_the_chosen_projects_directions(client, admin_user, project, segments):
    from core.services import project_create

    other = project_create(name="other-project", directions=["en-fr"])
    client.force_login(admin_user)
    page = client.get(reverse("injection:runs") + f"?project={project.name}").content.decode()
    assert every(f'value="{code}"' in page for code in project.directions.values_list("code", flat=True))
    assert 'value="en-fr"' not in page
    response = _post(client, segments, backend="rule", directions=["en-fr"])  # the other project's direction
    page = response.content.decode()
    assert "Directions: en-fr is not a direction of this project" in page and not InjectionRun.objects.exists()
    assert other.directions.filter(code="en-fr").exists()
