"""Who may see and change what, for every URL the site serves (the Django admin apart: see the last test).

One row per endpoint and method. Each row is requested as five users: anonymous, an annotator of another
language (zh), the right annotator (de), a viewer of de and an admin, over a project whose only direction is
en-de. The expectation is a status class per user; every refused request must also leave the database as it
was and enqueue no task, and no non-admin response may carry text it must not show (the de project's texts
for the zh annotator and strangers, its candidate and rating texts for the viewer, who reads aggregates
only, another de reviewer's work for the de annotator).

A URL name the resolver serves and no row classifies fails ``test_every_url_has_a_permission_row``: add a
row here when you add an endpoint.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client, override_settings
from django.urls import URLResolver, get_resolver, reverse
from django.utils import timezone

from annotation.agreement.domain.report import TABLES
from annotation.models import RatingItem
from annotation.people import services as people_services
from annotation.rating import services as rating_services
from annotation.review import selectors as review_selectors
from annotation.review import services as review_services
from annotation.spans import services as span_services
from core.models import CorpusImport, Direction, Project
from core.services import direction_ensure, project_directions_add, project_ensure, user_create
from exports.models import MetricScore, PseudoSystem, Release
from exports.scores.services import scores_summarize
from injection.models import InjectionRun
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db

# Text only the de annotator and admins may read, and text only its author (ben) and admins may read.
DE_ONLY = ("Geheimprojekt", "Geheimwort", "Bewertungsgeheimnis")
# What the de viewer may not read of it: the items' texts (the project's title is an aggregate page's heading).
ITEM_TEXTS = DE_ONLY[1:]
BENS_OWN = ("ben-private-note",)

# Expectations per user, in the order other-language annotator, right annotator, viewer of de, admin:
# O: allowed (2xx, or a redirect that is not to the login page); D: refused (403 or 404).
# Anonymous users get, by the row's kind: "page" a redirect to the login page, "api" 401/403,
# "public" the same as everyone (pages that hold no data: health, login, the invitation link).
# "worker": the scoring and release workers' endpoints, opened by a worker token only (tests/workers): every session, the
# admin's included, and anonymous get 401 and change nothing.
PAGE, API, PUBLIC, WORKER = "page", "api", "public", "worker"


@dataclass
class Row:
    name: str  # the URL name, with its namespace
    method: str  # get, post (form), json (POST of a JSON body), put (a file's bytes)
    url: Callable  # world -> path
    expect: str  # other, own, viewer, admin: O or D each
    kind: str = PAGE
    body: Callable | None = None  # world -> form data or JSON body
    writes: bool = (
        False  # an allowed request with this body writes rows or enqueues a task (so refusals are meaningful)
    )
    note: str = ""


@dataclass
class World:
    project: Project
    users: dict = field(default_factory=dict)
    candidates: list = field(default_factory=list)
    item: RatingItem | None = None
    run: InjectionRun | None = None
    release: Release | None = None
    round: object = None
    invite: tuple = ()
    corpus_import: CorpusImport | None = None
    sessions: dict = field(default_factory=dict)  # who -> the key of a session signed in as them (``signed_in``)
    span_task: object = None  # an ESA task of the project, with anna's held item and ben's submitted one
    span_own: object = None
    span_ben: object = None


def _u(name, *args, query=""):
    return lambda w: reverse(name, args=[a(w) if callable(a) else a for a in args]) + query


P = lambda w: w.project.name  # noqa: E731
CAND = lambda w: w.candidates[0].pk  # noqa: E731
ITEM = lambda w: w.item.pk  # noqa: E731
TASK = lambda w: w.span_task.name  # noqa: E731
SPAN_OWN = lambda w: w.span_own.pk  # noqa: E731
SPAN_BEN = lambda w: w.span_ben.pk  # noqa: E731
RUN = lambda w: w.run.pk  # noqa: E731
REL = lambda w: w.release.pk  # noqa: E731
# The agreement tables a project's annotators and viewers may download: accept/reject aggregates. Written out
# here, not read from the code, so moving a table into the code's public list fails this test.
AGGREGATE_TABLES = ("languages", "error_types", "rounds")
SCORES = {"informativeness": 4, "clarity": 4, "plausibility": 3, "faithfulness": 5}

ROWS = [
    # ---- site ----
    Row("home", "get", _u("home"), "OOOO"),
    Row("healthz", "get", _u("healthz"), "OOOO", kind=PUBLIC),
    Row("login", "get", _u("login"), "OOOO", kind=PUBLIC),
    Row("logout", "post", _u("logout"), "OOOO", kind=PUBLIC),
    Row("api-schema", "get", _u("api-schema"), "OOOO", kind=API),
    Row("api-docs", "get", _u("api-docs"), "OOOO", kind=API),
    # ---- projects ----
    Row("projects:index", "get", _u("projects:index"), "OOOO", note="a redirect to the project list (home)"),
    Row("projects:new", "get", _u("projects:new"), "DDDO"),
    Row(
        "projects:new",
        "post",
        _u("projects:new"),
        "DDDO",
        writes=True,
        body=lambda w: {
            "title": "Neu",
            "name": "neu",
            "source_language": "en",
            "directions": "en-de",
            "reviewers_per_candidate": 2,
            "max_errors": 5,
        },
    ),
    Row("projects:detail", "get", _u("projects:detail", P), "DOOO"),
    Row("projects:stage", "get", _u("projects:stage", P, "review"), "DOOO"),
    Row("projects:metaeval_headline", "get", _u("projects:metaeval_headline", P), "DOOO"),
    Row("projects:corpus", "get", _u("projects:corpus", P), "DDDO"),
    Row(
        "projects:corpus",
        "post",
        _u("projects:corpus", P),
        "DDDO",
        writes=True,
        body=lambda w: {
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
            "file": SimpleUploadedFile("gold.tsv", b"id\tsource\treference\nnew-1\tA dog.\tEin Hund.\n"),
        },
    ),
    Row(
        "projects:corpus",
        "post",
        _u("projects:corpus", P),
        "DDDO",
        writes=True,
        note="a Hub dataset: the admin's request records the import and enqueues its task",
        body=lambda w: {
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
            "hf_dataset": "org/geheim-set",
            "hf_split": "devtest",
        },
    ),
    Row("projects:hub_imports", "get", _u("projects:hub_imports", P), "DDDO"),
    Row(
        "projects:hub_import_retry",
        "post",
        _u("projects:hub_import_retry", P, lambda w: w.corpus_import.pk),
        "DDDO",
        writes=True,
        note="a failed Hub import: the admin's Retry queues it again",
    ),
    Row("projects:rating_items", "get", _u("projects:rating_items", P), "DDDO"),
    Row(
        "projects:rating_items",
        "post",
        _u("projects:rating_items", P),
        "DDDO",
        writes=True,
        body=lambda w: {
            "source": "system-outputs",
            "direction": "en-de",
            "system": "sysM",
            "file": SimpleUploadedFile("outputs.tsv", b"id\tsource\ttext\nm-1\tA cat.\tEine Katze.\n"),
        },
    ),
    Row("projects:settings", "get", _u("projects:settings", P), "DDDO"),
    Row(
        "projects:settings",
        "post",
        _u("projects:settings", P),
        "DDDO",
        writes=True,
        body=lambda w: {"title": "Umbenannt", "reviewers_per_candidate": 3, "max_errors": 4},
    ),
    Row(
        "projects:assignments",
        "post",
        _u("projects:assignments", P),
        "DDDO",
        writes=True,
        body=lambda w: {"direction": "en-de", "assign-en-de-reviewers": [w.users["own"].username]},
    ),
    Row(
        "projects:direction_add",
        "post",
        _u("projects:direction_add", P),
        "DDDO",
        writes=True,
        body=lambda w: {"target": "fr", "confirmed": "on"},
    ),
    Row("projects:direction_action", "get", _u("projects:direction_action", P, "en-de", "retire"), "DDDO"),
    Row(
        "projects:direction_action", "post", _u("projects:direction_action", P, "en-de", "retire"), "DDDO", writes=True
    ),
    Row(
        "projects:xqmeval", "post", _u("projects:xqmeval", P), "DDDO", note="no files: the admin sees the form's errors"
    ),
    # ---- review screens ----
    Row("review:index", "get", _u("review:index"), "OOOO"),
    Row("review:mine", "get", _u("review:mine"), "OOOO"),
    Row("review:annotators", "get", _u("review:annotators"), "DDDO"),
    Row(
        "review:annotators",
        "post",
        _u("review:annotators"),
        "DDDO",
        writes=True,
        body=lambda w: {"action": "invite", "username": "sneaky_de", "reviews": ["de-only/en-de"]},
    ),  # an annotator inviting an account of their own
    Row("review:invite", "get", lambda w: reverse("review:invite", args=w.invite), "OOOO", kind=PUBLIC),
    Row("review:next", "get", _u("review:next", P), "DODO"),
    Row("review:next", "post", _u("review:next", P), "DODO", writes=True, body=lambda w: {}),  # takes a lock
    Row("review:candidate", "get", _u("review:candidate", P, CAND), "DODO"),
    Row(
        "review:candidate",
        "post",
        _u("review:candidate", P, CAND),
        "DODO",
        writes=True,
        body=lambda w: {"action": "accept", "idempotency_key": "form-decision"},
    ),
    Row("review:rate_next", "get", _u("review:rate_next", P), "DODO"),
    Row("review:rate", "get", _u("review:rate", ITEM), "DODO"),
    Row(
        "review:rate",
        "post",
        _u("review:rate", ITEM),
        "DODO",
        writes=True,
        body=lambda w: {**SCORES, "idempotency_key": "form-rating"},
    ),
    Row("review:manage", "get", _u("review:manage", P), "DDDO"),
    Row(
        "review:manage",
        "post",
        _u("review:manage", P),
        "DDDO",
        writes=True,
        body=lambda w: {"action": "pool_rule", "pool_rule": "adjudicated"},
    ),
    Row("review:adjudication", "get", _u("review:adjudication", P), "DDDO"),
    Row(
        "review:adjudication",
        "post",
        _u("review:adjudication", P),
        "DDDO",
        writes=True,
        body=lambda w: {"candidate": w.candidates[0].pk, "decision": "reject"},
    ),
    # ---- review API ----
    Row("review_api:next", "json", _u("review_api:next", P), "DODO", kind=API, body=lambda w: {}, writes=True),
    Row("review_api:progress", "get", _u("review_api:progress", P), "DODO", kind=API),
    Row("review_api:rating_next", "json", _u("review_api:rating_next", P), "DODO", kind=API, body=lambda w: {}),
    Row("review_api:candidate", "get", _u("review_api:candidate", CAND), "DODO", kind=API),
    Row("review_api:decisions", "get", _u("review_api:decisions"), "OOOO", kind=API),
    Row(
        "review_api:decisions",
        "json",
        _u("review_api:decisions"),
        "DODO",
        kind=API,
        writes=True,
        body=lambda w: {
            "candidate": w.candidates[1].pk,
            "decision": "reject",
            "reason": "wrong_type",
            "idempotency_key": "api-decision",
        },
    ),
    Row(
        "review_api:skips",
        "json",
        _u("review_api:skips"),
        "DODO",
        kind=API,
        writes=True,
        body=lambda w: {"candidate": w.candidates[1].pk, "reason": "unsure"},
    ),
    Row(
        "review_api:withdrawals",
        "json",
        _u("review_api:withdrawals"),
        "DODO",
        kind=API,
        # the caller's own work only: ben's decision stays (tests/annotation/review/test_undo.py withdraws what is stored)
        body=lambda w: {"candidate": w.candidates[0].pk},
    ),
    Row("review_api:rating_item", "get", _u("review_api:rating_item", ITEM), "DODO", kind=API),
    Row("review_api:ratings", "get", _u("review_api:ratings"), "OOOO", kind=API),
    Row(
        "review_api:ratings",
        "json",
        _u("review_api:ratings"),
        "DODO",
        kind=API,
        writes=True,
        body=lambda w: {"item": w.item.pk, "idempotency_key": "api-rating", **SCORES},
    ),
    Row(
        "review_api:adjudications",
        "json",
        _u("review_api:adjudications"),
        "DDDO",
        kind=API,
        writes=True,
        body=lambda w: {"candidate": w.candidates[0].pk, "decision": "reject"},
    ),
    # ---- agreement ----
    Row("agreement:index", "get", _u("agreement:index"), "OOOO"),
    Row("agreement:dashboard", "get", _u("agreement:dashboard", P), "DOOO"),
    Row("agreement:annotators", "get", _u("agreement:annotators", P), "DDDO"),
    # span agreement: aggregates, for whoever sees the direction
    Row("agreement:spans", "get", _u("agreement:spans", P, TASK), "DOOO"),
    Row(
        "agreement:annotators",
        "post",
        _u("agreement:annotators", P),
        "DDDO",
        writes=True,
        body=lambda w: {"rate": "0.5", "seed": "1"},
    ),
    # every table in both formats and every plot: accept/reject aggregates for the project's annotators and
    # viewers; tables naming reviewers, Likert figures (ratings stay blind) and gold scores for admins only
    *[
        Row(
            "agreement:download",
            "get",
            _u("agreement:download", P, table, fmt),
            "DOOO" if table in AGGREGATE_TABLES else "DDDO",
        )
        for table in (*TABLES, "gold")
        for fmt in ("csv", "json")
    ],
    *[
        Row(
            "agreement:plot",
            "get",
            _u("agreement:plot", P, plot),
            "DOOO" if plot in ("by-language", "by-error-type") else "DDDO",
        )
        for plot in ("by-language", "by-error-type", "rwg", "score-vs-agreement", "annotators")
    ],
    # ---- injection ----
    Row("injection:runs", "get", _u("injection:runs"), "DDDO"),
    Row(
        "injection:runs",
        "post",
        _u("injection:runs"),
        "DDDO",
        writes=True,
        body=lambda w: {
            "project": w.project.pk,
            "directions": ["en-de"],
            "kind": "mqm",
            "backend": "rule",
            "concurrency": 8,
            "seed": 42,
            "temperature": 0.5,
        },
    ),
    Row("injection:run", "get", _u("injection:run", RUN), "DDDO"),
    Row("injection:run_progress", "get", _u("injection:run_progress", RUN), "DDDO"),
    Row("injection:run_cancel", "post", _u("injection:run_cancel", RUN), "DDDO", writes=True, body=lambda w: {}),
    Row(
        "injection:run_retry",
        "post",
        _u("injection:run_retry", RUN),
        "DDDO",
        writes=True,
        body=lambda w: {"resume": "1"},
    ),
    Row("injection:candidates", "get", _u("injection:candidates"), "OOOO"),
    Row(
        "injection:candidates",
        "get",
        _u("injection:candidates", query="?direction=en-de"),
        "OOOO",
        note="a filter is no way in",
    ),
    # ---- benchmarks and releases ----
    Row("benchmarks:index", "get", _u("benchmarks:index"), "OOOO"),
    Row("benchmarks:project", "get", _u("benchmarks:project", P), "DOOO"),
    Row("benchmarks:status", "get", _u("benchmarks:status", P), "DOOO"),
    Row("benchmarks:counts_plot", "get", _u("benchmarks:counts_plot", P), "DOOO"),
    Row(
        "benchmarks:candidates_csv",
        "get",
        lambda w: reverse("benchmarks:candidates_csv", kwargs={"project": w.project.name, "table": "excluded"}),
        "DODO",
        note="a list of candidates: not for the viewer, who reads aggregates only (#48.5)",
    ),
    Row("benchmarks:build", "post", _u("benchmarks:build", P), "DDDO", writes=True, body=lambda w: {"confirm": "1"}),
    Row(
        "benchmarks:release",
        "post",
        _u("benchmarks:release", P),
        "DDDO",
        writes=True,
        body=lambda w: {"version": "2.0.0", "formats": ["jsonl"]},
    ),
    Row(
        "benchmarks:push",
        "post",
        lambda w: reverse("benchmarks:push", args=[w.project.name, w.release.version]),
        "DDDO",
        writes=True,
        body=lambda w: {"repo_id": "lab/geheim"},
    ),
    Row("benchmarks_api:project", "get", _u("benchmarks_api:project", P), "DOOO", kind=API),
    Row("workers:release_manifest", "get", _u("workers:release_manifest", REL), "DDDD", kind=WORKER),
    Row("workers:release_file", "get", _u("workers:release_file", REL, "en-de"), "DDDD", kind=WORKER),
    Row(
        "workers:upload_part",
        "put",
        _u("workers:upload_part", REL, "chrF++", "en-de"),
        "DDDD",
        kind=WORKER,
        note="a worker token with its job token opens it; tests/workers sends parts",
    ),
    Row(
        "workers:release_direction_rows",
        "get",
        _u("workers:release_direction_rows", REL, "en-de"),
        "DDDD",
        kind=WORKER,
        note="a worker token with its job token opens it; tests/workers/test_release_worker_api.py reads rows",
    ),
    Row(
        "workers:release_direction_staged",
        "put",
        _u("workers:release_direction_staged", REL, "en-de"),
        "DDDD",
        kind=WORKER,
        note="a worker token with its job token opens it; tests/workers sends staged directions",
    ),
    Row(
        "workers:release_direction_report",
        "json",
        _u("workers:release_direction_report", REL, "en-de"),
        "DDDD",
        kind=WORKER,
        body=lambda w: {"status": "failed", "error": "x"},
        note="a worker token with its job token opens it; tests/workers reports a failure",
    ),
    # ---- scores and meta-evaluation ----
    Row("scores:index", "get", _u("scores:index"), "OOOO"),
    Row("scores:release", "get", _u("scores:release", REL), "DOOO"),
    Row("scores:progress", "get", _u("scores:progress", REL), "DDDO"),
    Row("scores:trend_plot", "get", _u("scores:trend_plot", REL, query="?metric=chrF%2B%2B"), "DOOO"),
    Row("scores:metaeval", "get", _u("scores:metaeval", REL, query="?metric=chrF%2B%2B"), "DOOO"),
    Row("scores:leaderboard", "get", _u("scores:leaderboard", REL, query="?metrics=chrF%2B%2B,BLEU"), "DOOO"),
    # the world's release file is empty (no build records): the page says so in words to whoever sees the release
    Row("scores:diagnostics", "get", _u("scores:diagnostics", REL, query="?metrics=chrF%2B%2B"), "DOOO"),
    Row("scores:start", "post", _u("scores:start", REL), "DDDO", writes=True, body=lambda w: {"metric": ["chrF++"]}),
]


def url_names(patterns=None, namespace=""):
    """Every URL name the resolver serves, with its namespaces (``review:index``)."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from url_names(
                pattern.url_patterns, f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            )
        else:
            yield namespace + (pattern.name or f"<unnamed {pattern.pattern}>")


def test_every_url_has_a_permission_row():
    served = {name for name in url_names() if not name.startswith("admin:")}
    classified = {row.name for row in ROWS}
    missing = sorted(served - classified)
    assert not missing, f"URLs without a row in {__name__}.ROWS: {missing}; add one saying who may use each"
    assert not classified - served, f"rows for URLs the site no longer serves: {sorted(classified - served)}"


# ---- span annotation (ESA, MQM): annotators see only their own items, viewers the aggregates only ----
ROWS += [
    Row("spans:tasks", "get", _u("spans:tasks", P), "DOOO"),
    Row(
        "spans:tasks",
        "post",
        _u("spans:tasks", P),
        "DDDO",
        writes=True,
        body=lambda w: {"name": "neu-spans", "protocol": "esa"},
    ),
    Row("spans:start", "get", _u("spans:start", P, TASK), "DODO"),
    Row(
        "spans:start",
        "post",
        _u("spans:start", P, TASK),
        "DODO",
        note="anna resumes her held item; the admin is handed one",
    ),
    Row("spans:done", "get", _u("spans:done", P, TASK), "DODO"),
    Row("spans:annotate", "get", _u("spans:annotate", SPAN_OWN), "DODD", note="anna's own item: nobody else's screen"),
    Row(
        "spans:annotate",
        "get",
        _u("spans:annotate", SPAN_BEN),
        "DDDD",
        note="ben's item: not even another de annotator",
    ),
    Row("spans:quality", "get", _u("spans:quality", P, TASK), "DDDO"),
    Row(
        "spans:annotator_action",
        "post",
        _u("spans:annotator_action", P, TASK, lambda w: w.span_ben.annotator_id),
        "DDDO",
        writes=True,
        body=lambda w: {"action": "retrain", "reason": "re-read"},
    ),
    Row(
        "spans:crowd",
        "get",
        lambda w: (
            reverse("spans:crowd", args=[w.span_task.pk, w.span_task.crowd_token])
            + "?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1"
        ),
        "OOOO",
        kind=PUBLIC,
        note="the Prolific link signs in the study's one-campaign annotator, whoever opens it (its secret is the key)",
    ),
    Row("projects:span_items", "get", _u("projects:span_items", P, TASK), "DDDO"),
    Row(
        "projects:span_items",
        "post",
        _u("projects:span_items", P, TASK),
        "DDDO",
        writes=True,
        body=lambda w: {
            "source": "system-outputs",
            "direction": "en-de",
            "file": SimpleUploadedFile("spans.tsv", b"id\tsource\ttext\nn-1\tA dog.\tEin Hund.\n"),
        },
    ),
    Row("spans_api:next", "json", _u("spans_api:next", lambda w: w.span_task.pk), "DODO", kind=API, body=lambda w: {}),
    Row("spans_api:summary", "get", _u("spans_api:summary", lambda w: w.span_task.pk), "DOOO", kind=API),
    Row("spans_api:annotation", "get", _u("spans_api:annotation", SPAN_OWN), "DODD", kind=API),
    Row("spans_api:annotation", "get", _u("spans_api:annotation", SPAN_BEN), "DDDD", kind=API),
    Row(
        "spans_api:submit",
        "json",
        _u("spans_api:submit", SPAN_OWN),
        "DODD",
        kind=API,
        writes=True,
        body=lambda w: {
            "spans": [{"side": "target", "start": 0, "end": 3, "severity": "major"}],
            "score": 50,
            "idempotency_key": "api-spans",
        },
    ),
    Row(
        "spans_api:submit",
        "json",
        _u("spans_api:submit", SPAN_BEN),
        "DDDD",
        kind=API,
        body=lambda w: {"spans": [], "score": 50, "idempotency_key": "api-spans-ben"},
    ),
]


# ---- the world every row is requested in ----------------------------------------------------------------


# Scoring is refused without a broker; with one, its tasks are sent on commit, which these tests capture
# without running: nothing is sent.
WORLD_SETTINGS = {
    "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
    "AGREEMENT_BOOTSTRAP_RESAMPLES": 20,
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/11",
}


@pytest.fixture(scope="module")
def shared_world(module_data, tmp_path_factory) -> World:
    """The world, written once for the module (``module_data``): each test changes it only inside its own
    transaction, which is rolled back after it. Building it must enqueue nothing: a callback waiting for the
    commit would run here, where in a test's transaction it never runs."""
    folder = tmp_path_factory.mktemp("world")

    def build() -> World:
        with override_settings(RELEASES_DIR=folder / "releases", **WORLD_SETTINGS), transaction.atomic():
            made = build_world(folder)
            assert not connection.run_on_commit, "building the world enqueued work: build it inside each test"
        return made

    return module_data(build)


@pytest.fixture
def world(db, settings, tmp_path, shared_world) -> World:
    """The module's world as its rows are (a copy: a test may change the objects it holds), with the settings
    the requests run under and an empty cache, so no figure cached by an earlier test's requests is read."""
    for name, value in WORLD_SETTINGS.items():
        setattr(settings, name, value)
    settings.RELEASES_DIR = tmp_path / "releases"
    cache.clear()
    return copy.deepcopy(shared_world)


def build_world(folder: Path) -> World:
    de, zh = direction_ensure(code="en-de"), direction_ensure(code="en-zh")
    project, _ = project_ensure(name="de-only", title="Geheimprojekt")
    project_directions_add(project=project, codes=["en-de"])
    # room for ben, the de annotator and the admin on each candidate and rating item (a full one is a 409)
    project.reviewers_per_candidate, project.options = 3, {"raters_per_item": 3}
    project.save()
    other_project, _ = project_ensure(name="zh-only", title="Chinese project")  # the zh annotator's own work lives here
    project_directions_add(project=other_project, codes=["en-zh"])
    users = {
        "other": user_create(username="li_zh", password="pw-li-123", languages=["zh"]),
        "own": user_create(username="anna_de", password="pw-anna-123", languages=["de"]),
        "viewer": user_create(username="vera_de", password="pw-vera-123", role="viewer", languages=["de"]),
        "admin": user_create(username="root", password="pw-root-123", role="admin"),
    }
    ben = user_create(username="ben_de", password="pw-ben-123", languages=["de"])
    # a run whose worker died (lease lapsed): its page, Cancel and Resume have something to act on, and it does
    # not hold the project's one live run, so the start form's row can start one
    run = InjectionRun.objects.create(
        project=project,
        name="geheim-run",
        backend="rule",
        status=InjectionRun.Status.RUNNING,
        lease_expires_at=timezone.now() - timedelta(minutes=1),
    )
    candidates = [
        make_candidate(
            project,
            de,
            "The word is secret.",
            "Das Wort ist geheim.",
            "Das Geheimwort ist geheim.",
            run=run,
            external_id="de-1",
        ),
        make_candidate(
            project,
            de,
            "He bought three apples.",
            "Er kaufte drei Äpfel.",
            "Er kaufte Äpfel.",
            run=run,
            external_id="de-2",
            error_type="Omission",
        ),
    ]
    make_candidate(other_project, zh, "He bought three apples.", "他买了三个苹果。", "他买了苹果。", external_id="zh-1")
    item = RatingItem.objects.create(
        project=project,
        direction=de,
        kind="system_output",
        source="Hi.",
        reference="Hallo.",
        text="Hallo Bewertungsgeheimnis!",
        system="s1",
    )
    rnd = review_selectors.first_round(project)
    review_services.decision_submit(
        user=ben,
        candidate_id=candidates[0].pk,
        decision="reject",
        reason="wrong_type",
        comment=BENS_OWN[0],
        idempotency_key="ben-1",
    )
    rating_services.rating_submit(user=ben, item_id=item.pk, scores=SCORES, idempotency_key="ben-r1")
    release_dir = folder / "release-1.0.0"
    (release_dir / "en-de").mkdir(parents=True)
    (release_dir / "en-de" / "test.parquet").touch()  # the scoring start reads only which directions there are
    release = Release.objects.create(
        project=project, version="1.0.0", status=Release.Status.READY, path=str(release_dir)
    )
    for k in range(3):
        ids = [f"en-de/{k}/{i}" for i in range(4)]
        for i, tid in enumerate(ids):
            MetricScore.objects.create(
                release=release, metric="chrF++", direction=de, triplet_id=tid, level=k, score=80.0 - 8 * k + i
            )
            MetricScore.objects.create(
                release=release, metric="BLEU", direction=de, triplet_id=tid, level=k, score=40.0 - 4 * k - i
            )
        for r in range(2):
            PseudoSystem.objects.create(
                release=release,
                project=project,
                kind="monolingual",
                name=f"mono/en-de/k{k}/r{r}",
                direction=de,
                level=k,
                repetition=r,
                seed=r,
                human_score=-5.0 * k,
                triplet_ids=ids,
            )
    scores_summarize(release=release)
    span_task = span_services.span_task_create(
        actor=users["admin"],
        project=project,
        name="geheim-spans",
        protocol="esa",
        annotators_per_item=3,
        seed=1,
        is_crowd=True,
    )
    span_services.span_items_import(
        task=span_task,
        direction_code="en-de",
        rows=[{"id": str(i), "source": "A secret word.", "text": f"Ein Geheimwort Nummer {i}."} for i in range(3)],
        source_name="spans.tsv",
    )
    span_ben = span_services.span_annotation_take_next(user=ben, task=span_task)
    span_services.span_annotation_submit(
        user=ben, annotation_id=span_ben.pk, spans=[], score=70, idempotency_key="ben-s1"
    )
    span_own = span_services.span_annotation_take_next(user=users["own"], task=span_task)
    _user, uid, token = people_services.annotator_invite(admin=users["admin"], username="new_de")
    # a session of each user, signed in as force_login signs in (written with the world, so a test's requests
    # use it without signing in again: most of a row's time went to the four sign-ins)
    sessions = {}
    for who, user in users.items():
        client = Client()
        client.force_login(user)
        sessions[who] = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return World(
        project=project,
        users=users,
        candidates=candidates,
        item=item,
        run=run,
        release=release,
        round=rnd,
        invite=(uid, token),
        corpus_import=CorpusImport.objects.create(
            project=project, direction=de, dataset="org/geheimwort-set", status="failed", error="the Hub did not answer"
        ),
        sessions=sessions,
        span_task=span_task,
        span_own=span_own,
        span_ben=span_ben,
    )


def signed_in(client: Client, world: World, who: str) -> Client:
    """``client`` with the world's session of ``who`` (a test's changes to it are rolled back with the rest)."""
    client.cookies[django_settings.SESSION_COOKIE_NAME] = world.sessions[who]
    return client


def database_state() -> dict:
    """Every row of the project's tables and of the users', auth's and their many-to-many tables, by table.
    On PostgreSQL in one query (each table's rows as JSON, every column, in primary-key order): the matrix
    takes this snapshot ten times a row, and a query per table made it most of the module's time."""
    models = [
        model
        for label in ("auth", "core", "injection", "annotation", "exports")
        for model in apps.get_app_config(label).get_models(include_auto_created=True)
    ]
    if connection.vendor != "postgresql":
        return {model._meta.db_table: list(model._base_manager.order_by("pk").values_list()) for model in models}
    qn = connection.ops.quote_name
    tables = [
        f"(SELECT coalesce(json_agg(snapshot_row ORDER BY snapshot_row.{qn(m._meta.pk.column)}), '[]')::text "
        f"FROM {qn(m._meta.db_table)} snapshot_row)"
        for m in models
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(tables))
        return dict(zip([m._meta.db_table for m in models], cursor.fetchone()))


def request(client: Client, row: Row, world: World, who: str):
    url = row.url(world)
    body = row.body(world) if row.body else {}
    if "idempotency_key" in body:  # a key is its user's: another user's request with it is a conflict
        body["idempotency_key"] += f"-{who}"
    if row.method == "get":
        return client.get(url)
    if row.method == "json":
        return client.post(url, data=json.dumps(body), content_type="application/json")
    if row.method == "put":  # a part file's bytes
        return client.put(url, data=b"PAR1", content_type="application/octet-stream")
    return client.post(url, data=body)


def allowed(response) -> bool:
    if response.status_code in (200, 201):
        return True
    return response.status_code == 302 and "/accounts/login/" not in response["Location"]


def to_login(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


def body_text(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.method} {r.name} {i}" for i, r in enumerate(ROWS)])
def test_permission_matrix(row, world, django_capture_on_commit_callbacks):
    users = {"anonymous": None, **world.users}
    expected = dict(zip(("other", "own", "viewer", "admin"), row.expect))
    for who, user in users.items():
        client = Client()
        if user is not None:
            signed_in(client, world, who)
        before = database_state()
        with django_capture_on_commit_callbacks() as enqueued:
            response = request(client, row, world, who)
        where = f"{row.method.upper()} {row.url(world)} as {who}"
        refused = False
        if row.kind == WORKER:
            assert response.status_code == 401, f"{where}: {response.status_code}, expected 401 (no worker token)"
            refused = True
        elif who == "anonymous" and row.kind != PUBLIC:
            if row.kind == PAGE:
                assert to_login(response), f"{where}: {response.status_code}, expected a redirect to the login page"
            else:
                assert response.status_code in (401, 403), f"{where}: {response.status_code}, expected 401/403"
            refused = True
        elif expected.get(who, "O") == "D":
            assert response.status_code in (403, 404), f"{where}: {response.status_code}, expected 403/404"
            refused = True
        else:
            ok = (
                response.status_code < 400 if row.kind == PUBLIC else allowed(response)
            )  # logging out lands on the login page
            assert ok, f"{where}: {response.status_code}, expected to be allowed"
        if refused:
            assert database_state() == before, f"{where} was refused but changed the database"
            assert not enqueued, f"{where} was refused but enqueued a task"
        elif row.writes:
            assert database_state() != before or enqueued, (
                f"{where}: the row's body wrote nothing; the refusals prove nothing"
            )
        if who != "admin":
            text = body_text(response)
            hidden = BENS_OWN + (DE_ONLY if who in ("anonymous", "other") else ITEM_TEXTS if who == "viewer" else ())
            shown = [marker for marker in hidden if marker in text]
            assert not shown, f"{where}: the response shows {shown}"


REFUSED_ROWS = [r for r in ROWS if "D" in r.expect[:3] and r.kind != WORKER]
CSRF_MASK = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


def _answer(response) -> tuple:
    """Status, type and body; the CSRF token's value apart, which Django masks afresh on every render."""
    body = body_text(response).encode()
    return (
        response.status_code,
        response.get("Content-Type"),
        CSRF_MASK.sub(b'name="csrfmiddlewaretoken" value=""', body),
    )


@pytest.mark.parametrize("row", REFUSED_ROWS, ids=[f"{r.method} {r.name} {i}" for i, r in enumerate(REFUSED_ROWS)])
def test_what_a_user_may_not_see_answers_as_a_missing_thing(row, world):
    """Every refused request, made again after the project (and with it its candidates, items, runs and
    releases) is deleted, gets the same answer byte for byte: no status, message or page tells a user that
    a thing they may not see exists."""
    clients = {}
    for who in ("other", "own", "viewer"):
        if dict(zip(("other", "own", "viewer"), row.expect))[who] == "D":
            clients[who] = signed_in(Client(), world, who)
    hidden = {who: _answer(request(client, row, world, who)) for who, client in clients.items()}
    url, pk = row.url(world), world.project.pk
    world.project.delete()
    world.project.pk = pk  # a form that names the project by id names the deleted one
    for who, client in clients.items():
        missing = _answer(request(client, row, world, who))
        assert hidden[who][0] in (403, 404), f"{url} as {who}: {hidden[who][0]}"
        assert hidden[who] == missing, (
            f"{row.method.upper()} {url} as {who}: the hidden thing answers {hidden[who][:2]}, a missing one {missing[:2]}"
        )


def test_the_right_annotator_sees_the_marked_text(world):
    """The leak check above can fail: the markers are in what the de annotator and admins are shown."""
    client = Client()
    client.force_login(world.users["own"])
    assert DE_ONLY[1] in client.get(reverse("review_api:candidate", args=[world.candidates[0].pk])).content.decode()
    assert DE_ONLY[2] in client.get(reverse("review:rate", args=[world.item.pk])).content.decode()
    assert DE_ONLY[0] in client.get(reverse("home")).content.decode()
    admin = Client()
    admin.force_login(world.users["admin"])
    assert BENS_OWN[0] in admin.get(reverse("review_api:decisions")).content.decode()


def test_non_staff_cannot_enter_the_django_admin(world):
    admin_login = reverse("admin:login")
    for who in ("anonymous", "other", "own"):
        client = Client()
        if who != "anonymous":
            client.force_login(world.users[who])
        for url in (
            reverse("admin:index"),
            reverse("admin:annotation_reviewdecision_changelist"),
            reverse("admin:auth_user_change", args=[world.users["own"].pk]),
        ):
            response = client.get(url)
            assert response.status_code == 302 and response["Location"].startswith(admin_login), f"{url} as {who}"
        before = database_state()
        client.post(
            reverse("admin:auth_user_change", args=[world.users["own"].pk]),
            {"username": world.users["own"].username, "is_staff": "on"},
        )
        assert database_state() == before, f"a POST to the admin as {who} changed the database"
    assert not get_user_model().objects.get(pk=world.users["own"].pk).is_staff
    client = Client()
    client.force_login(world.users["admin"])
    assert client.get(reverse("admin:annotation_reviewdecision_changelist")).status_code == 200


def test_admin_only_release_endpoints_answer_annotators_alike_for_any_id(world):
    """The admin check comes before the lookup: a 404 for a missing id and a 403 for an existing one would
    tell a non-admin which releases exist."""
    client = Client()
    client.force_login(world.users["own"])
    for name, method in (("scores:progress", "get"), ("scores:start", "post")):
        answers = {
            getattr(client, method)(reverse(name, args=[pk])).status_code
            for pk in (world.release.pk, world.release.pk + 1000)
        }
        assert answers == {403}, name


# ---- untrusted text on every page ------------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script>\"'&"
FORMULA = '=HYPERLINK("http://x","y")'


def test_hostile_text_is_escaped_on_every_page_and_neutralised_in_every_csv(world):
    """Text a user, an imported file or an LLM wrote (project title and description, gold pair, candidate,
    check detail, rating item, decision comment, run error) in every GET the matrix makes, as the admin
    (who sees everything) and the de annotator: never raw markup in HTML or SVG, never a live formula in CSV."""
    de = Direction.objects.get(code="en-de")
    Project.objects.filter(pk=world.project.pk).update(title=f"Titel {HOSTILE}", description=f"{HOSTILE} {FORMULA}")
    hostile = make_candidate(
        world.project,
        de,
        f"Source {HOSTILE}",
        f"{FORMULA} Das {HOSTILE} Haus",
        f"{FORMULA} Das {HOSTILE} Hausboot",
        run=world.run,
        external_id=FORMULA,
        checks={"local_edit": {"passed": False, "detail": HOSTILE}},
        flags=["local_edit"],
    )
    world.candidates[0] = hostile
    RatingItem.objects.filter(pk=world.item.pk).update(text=f"{FORMULA} {HOSTILE}", system=HOSTILE, source=HOSTILE)
    review_services.decision_submit(
        user=world.users["own"],
        candidate_id=hostile.pk,
        decision="reject",
        reason="wrong_type",
        comment=HOSTILE,
        idempotency_key="hostile",
    )
    InjectionRun.objects.filter(pk=world.run.pk).update(error=HOSTILE)  # a run's failure, as an LLM or server worded it
    escaped_seen = False
    for who in ("admin", "own"):
        client = Client()
        client.force_login(world.users[who])
        for row in (r for r in ROWS if r.method == "get"):
            response = request(client, row, world, who)
            if response.status_code != 200:
                continue
            kind = response.get("Content-Type", "")
            text = body_text(response)
            where = f"GET {row.url(world)} as {who} ({kind})"
            if "html" in kind or "svg" in kind:
                assert "<script>alert(1)</script>" not in text, f"{where}: raw markup from data"
                escaped_seen |= "&lt;script&gt;alert(1)&lt;/script&gt;" in text
            elif "csv" in kind:
                cells = [cell for line in csv.reader(io.StringIO(text)) for cell in line]
                assert not [c for c in cells if c[:1] in ("=", "+", "-", "@") and not _number(c)], (
                    f"{where}: a live formula"
                )
    assert escaped_seen, "the hostile text was shown nowhere: the check above proves nothing"


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
