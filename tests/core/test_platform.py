"""The platform's frame: deploy checks, migrations, login, the project overview and the admin uploads."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from core.corpus.domain import CorpusRow
from core.corpus.services import corpus_rows_import
from core.models import GoldSegment
from injection.models import Candidate

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_migrations_are_complete():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_production_settings_pass_check_deploy(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},  # set only for the browser tests
        "DJANGO_ENV": "production",
        "SECRET_KEY": "pJkmBpYwa84FfEMd545hZHMiqppvJ1ISaoqDZU7qootdm1lp3wG8tWOpBdi_",  # random, for this test only
        "ALLOWED_HOSTS": "xqmeval.example.org",
        "XQMEVAL_DATA_DIR": str(tmp_path),
        "DEBUG": "",
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = {**os.environ, "DJANGO_ENV": "production", "SECRET_KEY": "", "DEBUG": "", "XQMEVAL_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and "SECRET_KEY must be set" in proc.stderr


@pytest.mark.parametrize("secret", ["", "dev-only-insecure-key-do-not-use-in-production-xqmeval-0123456789"])
def test_production_refuses_to_start_on_no_or_the_development_key_even_with_debug_on(tmp_path, secret):
    env = {
        **os.environ,
        "DJANGO_ENV": "production",
        "SECRET_KEY": secret,
        "DEBUG": "1",
        "XQMEVAL_DATA_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and "SECRET_KEY must be set to a secret of its own" in proc.stderr


DEV_KEY = "dev-only-insecure-key-do-not-use-in-production-xqmeval-0123456789"


@pytest.mark.parametrize(
    ("secret", "reason"),
    [
        (" ", "SECRET_KEY is blank"),
        (DEV_KEY + " ", "the development key or made from it"),
        (DEV_KEY.upper(), "the development key or made from it"),
        ("my-" + DEV_KEY[10:40] + "-Zq8#Lr2!vN5@kT", "the development key or made from it"),
        ("x", "fewer than the 50 required"),
        ("x" * 20 + "-production-secret-for-tests-0123456789abcdef", "too easy to guess"),
        ("0123456789" * 6, "too easy to guess"),
        ("password" * 8, "too easy to guess"),
    ],
    ids=["blank", "dev-plus-space", "dev-upper", "dev-part", "short", "repeats-and-words", "sequence", "word"],
)
def test_production_refuses_to_start_on_a_weak_key(tmp_path, secret, reason):
    """#48.4: the attacker's keys (a space, the development key plus a space, ``x``) and other guessable ones
    stop the process before it serves a request, whatever DEBUG says."""
    env = {
        **os.environ,
        "DJANGO_ENV": "production",
        "SECRET_KEY": secret,
        "DEBUG": "1",
        "XQMEVAL_DATA_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and "ImproperlyConfigured" in proc.stderr
    assert reason in proc.stderr
    assert len(secret) < 20 or secret.strip() not in proc.stderr  # the message never shows the key


@pytest.mark.parametrize("value", ["prod", "Production", "staging"])
def test_an_unknown_django_env_stops_the_start(tmp_path, value):
    """#48.4: DJANGO_ENV=prod (a typo) started with DEBUG on and the development key."""
    env = {**os.environ, "DJANGO_ENV": value, "SECRET_KEY": "", "DEBUG": "", "XQMEVAL_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    assert f"DJANGO_ENV must be one of development, production, not {value!r}" in proc.stderr


@pytest.mark.django_db
def test_pages_need_login(client):
    response = client.get("/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert client.get("/healthz").json() == {"status": "ok"}


@pytest.mark.django_db
def test_annotator_overview_shows_only_their_directions(client, project, annotator_de):
    corpus_rows_import(
        project=project, direction_code="en-de", rows=[CorpusRow("1", "Hello.", "Hallo.", "t")], source_name="t"
    )
    corpus_rows_import(
        project=project, direction_code="en-zh", rows=[CorpusRow("1", "Hello.", "你好。", "t")], source_name="t"
    )
    client.force_login(annotator_de)
    page = client.get("/").content.decode()
    assert "en-de" in page and "en-zh" not in page


@pytest.mark.django_db
def test_corpus_text_is_escaped_on_pages(client, project, admin_user):
    corpus_rows_import(
        project=project,
        direction_code="en-de",
        rows=[CorpusRow("1", "<script>alert(1)</script>", "<b>x</b>", "t")],
        source_name="t",
    )
    client.force_login(admin_user)
    response = client.get("/admin/core/goldsegment/")
    assert b"<script>alert(1)</script>" not in response.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content


@pytest.mark.django_db
def test_admin_corpus_upload_validates_like_the_command(client, project, admin_user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(admin_user)
    url = f"/admin/core/project/{project.pk}/import-corpus/"
    bad = SimpleUploadedFile("c.tsv", b"id\tsource\treference\n1\tHello\t\n")
    response = client.post(
        url,
        {
            "file": bad,
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
        },
        follow=True,
    )
    assert (
        "line 2: empty &#x27;reference&#x27;" in response.content.decode()
        or "line 2: empty 'reference'" in response.content.decode()
    )
    assert GoldSegment.objects.count() == 0
    good = SimpleUploadedFile("c.tsv", b"id\tsource\treference\n1\tHello\tHallo\n")
    response = client.post(
        url,
        {
            "file": good,
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
        },
        follow=True,
    )
    assert "1 gold segments imported" in response.content.decode()
    assert GoldSegment.objects.get().reference == "Hallo"


@pytest.mark.django_db
def test_admin_upload_is_admin_only(client, project, annotator_de):
    client.force_login(annotator_de)
    response = client.get(f"/admin/core/project/{project.pk}/import-corpus/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
@pytest.mark.shared_data
def test_admin_xqmeval_upload(client, admin_user, shared_data):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(admin_user)
    files = [
        SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((shared_data / "candidates").glob("en-zh-*.parquet"))
    ]
    response = client.post(
        "/admin/core/project/import-xqmeval/", {"project_name": "up", "candidate_files": files}, follow=True
    )
    assert "816 candidates" in response.content.decode()
    assert Candidate.objects.filter(segment__project__name="up").count() == 816
    assert Candidate.objects.filter(status="pending").count() == 816  # no decisions uploaded


@pytest.mark.django_db
def test_every_model_has_an_admin_changelist_with_filters(client, admin_user, project):
    """Issue 2: admin for every model; the list pages load for an admin and filter where the model has a
    project, direction or status."""
    from django.apps import apps
    from django.contrib import admin as django_admin

    client.force_login(admin_user)
    for model in apps.get_models():
        if model._meta.app_label not in ("core", "injection", "annotation", "exports"):
            continue
        model_admin = django_admin.site._registry.get(model)
        assert model_admin is not None, f"{model._meta.label} has no admin"
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert client.get(url).status_code == 200, url
        names = {f.name for f in model._meta.get_fields()}
        if names & {"project", "segment", "candidate", "release", "item", "run", "status"}:
            assert model_admin.list_filter, f"{model._meta.label} admin has no filters"


def test_records_the_pipeline_writes_are_read_only_in_the_admin(client, admin_user):
    """What a review, merge, release or trigger writes cannot be added or edited by hand; the rows the
    database's triggers keep (counters, change logs) cannot be deleted either."""
    from django.contrib import admin as django_admin

    from annotation.models import ReviewChange, ReviewDecision
    from core.admin_lists import KeptByTriggersMixin, ReadOnlyMixin
    from exports.models import BenchmarkChange, PseudoTranslation
    from injection.models import FlagChange

    client.force_login(admin_user)
    registry = django_admin.site._registry
    read_only = [model for model, model_admin in registry.items() if isinstance(model_admin, ReadOnlyMixin)]
    assert {ReviewDecision, PseudoTranslation, ReviewChange, FlagChange, BenchmarkChange} <= set(read_only)
    for model in read_only:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/"
        assert client.get(url).status_code == 403, url
    logs = [model for model in read_only if isinstance(registry[model], KeptByTriggersMixin)]
    assert {ReviewChange, FlagChange, BenchmarkChange} <= set(logs)
    for log in (ReviewChange, FlagChange, BenchmarkChange):
        row = log.objects.create(project_id=None)
        base = f"/admin/{log._meta.app_label}/{log._meta.model_name}/{row.pk}"
        assert client.get(f"{base}/change/").status_code == 200  # may be looked at
        assert client.post(f"{base}/change/", {"project_id": 7}).status_code == 403
        assert client.post(f"{base}/delete/", {"post": "yes"}).status_code == 403
        row.refresh_from_db()
        assert row.project_id is None
