"""Who may see and change what, for every URL the site serves (the Django admin apart: see the last test).

One row per endpoint and method. Each row is requested as four users: anonymous, an annotator of another
language (zh), the right annotator (de) and an admin, over a project whose only direction is en-de. The
expectation is a status class per user; every refused request must also leave the database as it was and
enqueue no task, and no non-admin response may carry text it must not show (the de project's texts for
the zh annotator and strangers, another de reviewer's work for the de annotator).

A URL name the resolver serves and no row classifies fails ``test_every_url_has_a_permission_row``: add a
row here when you add an endpoint.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Callable

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse

from annotation.models import RatingItem
from annotation.review import selectors as review_selectors
from annotation.review import services as review_services
from core.models import Direction, Project
from core.services import add_directions, create_user, ensure_direction, ensure_project
from exports.models import MetricScore, PseudoSystem, Release
from exports.scores.services import summarize_scores
from injection.models import InjectionRun
from tests.review.factories import make_candidate

pytestmark = pytest.mark.django_db

# Text only the de annotator and admins may read, and text only its author (ben) and admins may read.
DE_ONLY = ("Geheimprojekt", "Geheimwort", "Bewertungsgeheimnis")
BENS_OWN = ("ben-private-note",)

# Expectations per user, in the order other-language annotator, right annotator, admin:
# O: allowed (2xx, or a redirect that is not to the login page); D: refused (403 or 404).
# Anonymous users get, by the row's kind: "page" a redirect to the login page, "api" 401/403,
# "public" the same as everyone (pages that hold no data: health, login, the invitation link).
PAGE, API, PUBLIC = "page", "api", "public"


@dataclass
class Row:
    name: str  # the URL name, with its namespace
    method: str  # get, post (form), json (POST of a JSON body)
    url: Callable  # world -> path
    expect: str  # other, own, admin: O or D each
    kind: str = PAGE
    body: Callable | None = None  # world -> form data or JSON body
    writes: bool = False  # an allowed request with this body writes rows or enqueues a task (so refusals are meaningful)
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


def _u(name, *args, query=""):
    return lambda w: reverse(name, args=[a(w) if callable(a) else a for a in args]) + query


P = lambda w: w.project.name  # noqa: E731
CAND = lambda w: w.candidates[0].pk  # noqa: E731
ITEM = lambda w: w.item.pk  # noqa: E731
RUN = lambda w: w.run.pk  # noqa: E731
REL = lambda w: w.release.pk  # noqa: E731
SCORES = {"informativeness": 4, "clarity": 4, "plausibility": 3, "faithfulness": 5}

ROWS = [
    # ---- site ----
    Row("home", "get", _u("home"), "OOO"),
    Row("healthz", "get", _u("healthz"), "OOO", kind=PUBLIC),
    Row("login", "get", _u("login"), "OOO", kind=PUBLIC),
    Row("logout", "post", _u("logout"), "OOO", kind=PUBLIC),
    Row("api-schema", "get", _u("api-schema"), "OOO", kind=API),
    Row("api-docs", "get", _u("api-docs"), "OOO", kind=API),
    # ---- projects ----
    Row("projects:index", "get", _u("projects:index"), "OOO", note="a redirect to the project list (home)"),
    Row("projects:new", "get", _u("projects:new"), "DDO"),
    Row("projects:new", "post", _u("projects:new"), "DDO", writes=True, body=lambda w: {
        "title": "Neu", "name": "neu", "source_language": "en", "directions": "en-de", "reviewers_per_candidate": 2, "max_errors": 5}),
    Row("projects:detail", "get", _u("projects:detail", P), "DOO"),
    Row("projects:stage", "get", _u("projects:stage", P, "review"), "DOO"),
    Row("projects:metaeval_headline", "get", _u("projects:metaeval_headline", P), "DOO"),
    Row("projects:corpus", "get", _u("projects:corpus", P), "DDO"),
    Row("projects:corpus", "post", _u("projects:corpus", P), "DDO", writes=True, body=lambda w: {
        "direction": "en-de", "id_column": "id", "source_column": "source", "reference_column": "reference",
        "file": SimpleUploadedFile("gold.tsv", "id\tsource\treference\nnew-1\tA dog.\tEin Hund.\n".encode())}),
    Row("projects:settings", "get", _u("projects:settings", P), "DDO"),
    Row("projects:settings", "post", _u("projects:settings", P), "DDO", writes=True,
        body=lambda w: {"title": "Umbenannt", "reviewers_per_candidate": 3, "max_errors": 4}),
    Row("projects:assignments", "post", _u("projects:assignments", P), "DDO", writes=True,
        body=lambda w: {"direction": "en-de", "assign-en-de-reviewers": [w.users["own"].username]}),
    Row("projects:direction_add", "post", _u("projects:direction_add", P), "DDO", writes=True,
        body=lambda w: {"target": "fr", "confirmed": "on"}),
    Row("projects:direction_action", "get", _u("projects:direction_action", P, "en-de", "retire"), "DDO"),
    Row("projects:direction_action", "post", _u("projects:direction_action", P, "en-de", "retire"), "DDO", writes=True),
    Row("projects:xqmeval", "post", _u("projects:xqmeval", P), "DDO", note="no files: the admin sees the form's errors"),
    # ---- review screens ----
    Row("review:index", "get", _u("review:index"), "OOO"),
    Row("review:mine", "get", _u("review:mine"), "OOO"),
    Row("review:annotators", "get", _u("review:annotators"), "DDO"),
    Row("review:annotators", "post", _u("review:annotators"), "DDO", writes=True,
        body=lambda w: {"action": "assign", "user": w.users["own"].pk, "languages": "de zh"}),  # an annotator giving themselves a language
    Row("review:invite", "get", lambda w: reverse("review:invite", args=w.invite), "OOO", kind=PUBLIC),
    Row("review:next", "get", _u("review:next", P), "DOO"),
    Row("review:candidate", "get", _u("review:candidate", P, CAND), "DOO"),
    Row("review:candidate", "post", _u("review:candidate", P, CAND), "DOO", writes=True,
        body=lambda w: {"action": "accept", "idempotency_key": "form-decision"}),
    Row("review:rate_next", "get", _u("review:rate_next", P), "DOO"),
    Row("review:rate", "get", _u("review:rate", ITEM), "DOO"),
    Row("review:rate", "post", _u("review:rate", ITEM), "DOO", writes=True, body=lambda w: {**SCORES, "idempotency_key": "form-rating"}),
    Row("review:manage", "get", _u("review:manage", P), "DDO"),
    Row("review:manage", "post", _u("review:manage", P), "DDO", writes=True, body=lambda w: {"action": "pool_rule", "pool_rule": "adjudicated"}),
    Row("review:adjudication", "get", _u("review:adjudication", P), "DDO"),
    Row("review:adjudication", "post", _u("review:adjudication", P), "DDO", writes=True,
        body=lambda w: {"candidate": w.candidates[0].pk, "decision": "reject"}),
    # ---- review API ----
    Row("review_api:next", "json", _u("review_api:next", P), "DOO", kind=API, body=lambda w: {}, writes=True),
    Row("review_api:progress", "get", _u("review_api:progress", P), "DOO", kind=API),
    Row("review_api:rating_next", "json", _u("review_api:rating_next", P), "DOO", kind=API, body=lambda w: {}),
    Row("review_api:candidate", "get", _u("review_api:candidate", CAND), "DOO", kind=API),
    Row("review_api:decisions", "get", _u("review_api:decisions"), "OOO", kind=API),
    Row("review_api:decisions", "json", _u("review_api:decisions"), "DOO", kind=API, writes=True,
        body=lambda w: {"candidate": w.candidates[1].pk, "decision": "reject", "reason": "wrong_type", "idempotency_key": "api-decision"}),
    Row("review_api:skips", "json", _u("review_api:skips"), "DOO", kind=API, writes=True,
        body=lambda w: {"candidate": w.candidates[1].pk, "reason": "unsure"}),
    Row("review_api:rating_item", "get", _u("review_api:rating_item", ITEM), "DOO", kind=API),
    Row("review_api:ratings", "get", _u("review_api:ratings"), "OOO", kind=API),
    Row("review_api:ratings", "json", _u("review_api:ratings"), "DOO", kind=API, writes=True,
        body=lambda w: {"item": w.item.pk, "idempotency_key": "api-rating", **SCORES}),
    Row("review_api:adjudications", "json", _u("review_api:adjudications"), "DDO", kind=API, writes=True,
        body=lambda w: {"candidate": w.candidates[0].pk, "decision": "reject"}),
    # ---- agreement ----
    Row("agreement:index", "get", _u("agreement:index"), "OOO"),
    Row("agreement:dashboard", "get", _u("agreement:dashboard", P), "DOO"),
    Row("agreement:annotators", "get", _u("agreement:annotators", P), "DDO"),
    Row("agreement:annotators", "post", _u("agreement:annotators", P), "DDO", writes=True, body=lambda w: {"rate": "0.5", "seed": "1"}),
    Row("agreement:download", "get", _u("agreement:download", P, "languages", "csv"), "DOO"),
    Row("agreement:download", "get", _u("agreement:download", P, "annotators", "json"), "DDO", note="names reviewers"),
    Row("agreement:download", "get", _u("agreement:download", P, "gold", "csv"), "DDO", note="gold scores"),
    Row("agreement:plot", "get", _u("agreement:plot", P, "by-language"), "DOO"),
    Row("agreement:plot", "get", _u("agreement:plot", P, "annotators"), "DDO", note="names reviewers"),
    # ---- injection ----
    Row("injection:runs", "get", _u("injection:runs"), "DDO"),
    Row("injection:runs", "post", _u("injection:runs"), "DDO", writes=True, body=lambda w: {
        "project": w.project.pk, "directions": ["en-de"], "kind": "mqm", "backend": "rule", "concurrency": 8, "seed": 42, "temperature": 0.5}),
    Row("injection:run", "get", _u("injection:run", RUN), "DDO"),
    Row("injection:run_progress", "get", _u("injection:run_progress", RUN), "DDO"),
    Row("injection:run_cancel", "post", _u("injection:run_cancel", RUN), "DDO", writes=True, body=lambda w: {}),
    Row("injection:run_retry", "post", _u("injection:run_retry", RUN), "DDO", writes=True, body=lambda w: {"resume": "1"}),
    Row("injection:candidates", "get", _u("injection:candidates"), "OOO"),
    Row("injection:candidates", "get", _u("injection:candidates", query="?direction=en-de"), "OOO", note="a filter is no way in"),
    # ---- benchmarks and releases ----
    Row("benchmarks:index", "get", _u("benchmarks:index"), "OOO"),
    Row("benchmarks:project", "get", _u("benchmarks:project", P), "DOO"),
    Row("benchmarks:status", "get", _u("benchmarks:status", P), "DOO"),
    Row("benchmarks:counts_plot", "get", _u("benchmarks:counts_plot", P), "DOO"),
    Row("benchmarks:candidates_csv", "get", lambda w: reverse("benchmarks:candidates_csv", kwargs={"project": w.project.name, "table": "excluded"}), "DOO"),
    Row("benchmarks:build", "post", _u("benchmarks:build", P), "DDO", writes=True, body=lambda w: {"confirm": "1"}),
    Row("benchmarks:release", "post", _u("benchmarks:release", P), "DDO", writes=True, body=lambda w: {"version": "2.0.0", "formats": ["jsonl"]}),
    Row("benchmarks:push", "post", lambda w: reverse("benchmarks:push", args=[w.project.name, w.release.version]), "DDO", writes=True,
        body=lambda w: {"repo_id": "lab/geheim"}),
    Row("benchmarks_api:project", "get", _u("benchmarks_api:project", P), "DOO", kind=API),
    # ---- scores and meta-evaluation ----
    Row("scores:index", "get", _u("scores:index"), "OOO"),
    Row("scores:release", "get", _u("scores:release", REL), "DOO"),
    Row("scores:progress", "get", _u("scores:progress", REL), "DDO"),
    Row("scores:trend_plot", "get", _u("scores:trend_plot", REL, query="?metric=chrF%2B%2B"), "DOO"),
    Row("scores:metaeval", "get", _u("scores:metaeval", REL, query="?metric=chrF%2B%2B"), "DOO"),
    Row("scores:start", "post", _u("scores:start", REL), "DDO", writes=True, body=lambda w: {"metric": ["chrF++"]}),
]


def url_names(patterns=None, namespace=""):
    """Every URL name the resolver serves, with its namespaces (``review:index``)."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from url_names(pattern.url_patterns, f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace)
        else:
            yield namespace + (pattern.name or f"<unnamed {pattern.pattern}>")


def test_every_url_has_a_permission_row():
    served = {name for name in url_names() if not name.startswith("admin:")}
    classified = {row.name for row in ROWS}
    missing = sorted(served - classified)
    assert not missing, f"URLs without a row in {__name__}.ROWS: {missing}; add one saying who may use each"
    assert not classified - served, f"rows for URLs the site no longer serves: {sorted(classified - served)}"


# ---- the world every row is requested in ----------------------------------------------------------------

@pytest.fixture
def world(db, settings, tmp_path) -> World:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.RELEASES_DIR = tmp_path / "releases"
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 20
    # Scoring is refused without a broker; with one, its tasks are sent on commit, which these tests capture
    # without running: nothing is sent.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/11"
    de, zh = ensure_direction("en-de"), ensure_direction("en-zh")
    project, _ = ensure_project("de-only", title="Geheimprojekt")
    add_directions(project, ["en-de"])
    # room for ben, the de annotator and the admin on each candidate and rating item (a full one is a 409)
    project.reviewers_per_candidate, project.options = 3, {"raters_per_item": 3}
    project.save()
    other_project, _ = ensure_project("zh-only", title="Chinese project")  # the zh annotator's own work lives here
    add_directions(other_project, ["en-zh"])
    users = {
        "other": create_user("li_zh", "pw-li-123", languages=["zh"]),
        "own": create_user("anna_de", "pw-anna-123", languages=["de"]),
        "admin": create_user("root", "pw-root-123", role="admin"),
    }
    ben = create_user("ben_de", "pw-ben-123", languages=["de"])
    run = InjectionRun.objects.create(project=project, name="geheim-run", backend="rule", status=InjectionRun.Status.RUNNING)
    candidates = [
        make_candidate(project, de, "The word is secret.", "Das Wort ist geheim.", "Das Geheimwort ist geheim.", run=run, external_id="de-1"),
        make_candidate(project, de, "He bought three apples.", "Er kaufte drei Äpfel.", "Er kaufte Äpfel.", run=run, external_id="de-2",
                       error_type="Omission"),
    ]
    make_candidate(other_project, zh, "He bought three apples.", "他买了三个苹果。", "他买了苹果。", external_id="zh-1")
    item = RatingItem.objects.create(project=project, direction=de, kind="system_output", source="Hi.", reference="Hallo.",
                                     text="Hallo Bewertungsgeheimnis!", system="s1")
    rnd = review_selectors.first_round(project)
    review_services.submit_decision(ben, candidates[0].pk, "reject", reason="wrong_type", comment=BENS_OWN[0], idempotency_key="ben-1")
    review_services.submit_rating(ben, item.pk, SCORES, idempotency_key="ben-r1")
    release_dir = tmp_path / "release-1.0.0"
    (release_dir / "en-de").mkdir(parents=True)
    (release_dir / "en-de" / "test.parquet").touch()  # the scoring start reads only which directions there are
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY, path=str(release_dir))
    for k in range(3):
        ids = [f"en-de/{k}/{i}" for i in range(4)]
        for i, tid in enumerate(ids):
            MetricScore.objects.create(release=release, metric="chrF++", direction=de, triplet_id=tid, level=k, score=80.0 - 8 * k + i)
        for r in range(2):
            PseudoSystem.objects.create(release=release, project=project, kind="monolingual", name=f"mono/en-de/k{k}/r{r}", direction=de,
                                        level=k, repetition=r, seed=r, human_score=-5.0 * k, triplet_ids=ids)
    summarize_scores(release)
    _user, uid, token = review_services.invite_annotator(users["admin"], "new_de", languages=["de"])
    return World(project=project, users=users, candidates=candidates, item=item, run=run, release=release, round=rnd, invite=(uid, token))


def database_state() -> dict:
    """Every row of the project's tables and of the users', auth's and their many-to-many tables."""
    state = {}
    for label in ("auth", "core", "injection", "annotation", "exports"):
        for model in apps.get_app_config(label).get_models(include_auto_created=True):
            state[model._meta.db_table] = list(model.objects.order_by("pk").values_list())
    return state


def request(client: Client, row: Row, world: World, who: str):
    url = row.url(world)
    body = row.body(world) if row.body else {}
    if "idempotency_key" in body:  # a key is its user's: another user's request with it is a conflict
        body["idempotency_key"] += f"-{who}"
    if row.method == "get":
        return client.get(url)
    if row.method == "json":
        return client.post(url, data=json.dumps(body), content_type="application/json")
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
    expected = dict(zip(("other", "own", "admin"), row.expect))
    for who, user in users.items():
        client = Client()
        if user is not None:
            client.force_login(user)
        before = database_state()
        with django_capture_on_commit_callbacks() as enqueued:
            response = request(client, row, world, who)
        where = f"{row.method.upper()} {row.url(world)} as {who}"
        refused = False
        if who == "anonymous" and row.kind != PUBLIC:
            if row.kind == PAGE:
                assert to_login(response), f"{where}: {response.status_code}, expected a redirect to the login page"
            else:
                assert response.status_code in (401, 403), f"{where}: {response.status_code}, expected 401/403"
            refused = True
        elif expected.get(who, "O") == "D":
            assert response.status_code in (403, 404), f"{where}: {response.status_code}, expected 403/404"
            refused = True
        else:
            ok = response.status_code < 400 if row.kind == PUBLIC else allowed(response)  # logging out lands on the login page
            assert ok, f"{where}: {response.status_code}, expected to be allowed"
        if refused:
            assert database_state() == before, f"{where} was refused but changed the database"
            assert not enqueued, f"{where} was refused but enqueued a task"
        elif row.writes:
            assert database_state() != before or enqueued, f"{where}: the row's body wrote nothing; the refusals prove nothing"
        if who != "admin":
            text = body_text(response)
            hidden = BENS_OWN + (DE_ONLY if who in ("anonymous", "other") else ())
            shown = [marker for marker in hidden if marker in text]
            assert not shown, f"{where}: the response shows {shown}"


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
        for url in (reverse("admin:index"), reverse("admin:annotation_reviewdecision_changelist"),
                    reverse("admin:auth_user_change", args=[world.users["own"].pk])):
            response = client.get(url)
            assert response.status_code == 302 and response["Location"].startswith(admin_login), f"{url} as {who}"
        before = database_state()
        client.post(reverse("admin:auth_user_change", args=[world.users["own"].pk]), {"username": world.users["own"].username, "is_staff": "on"})
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
        answers = {getattr(client, method)(reverse(name, args=[pk])).status_code for pk in (world.release.pk, world.release.pk + 1000)}
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
    hostile = make_candidate(world.project, de, f"Source {HOSTILE}", f"{FORMULA} Das {HOSTILE} Haus", f"{FORMULA} Das {HOSTILE} Hausboot",
                             run=world.run, external_id=FORMULA, checks={"local_edit": {"passed": False, "detail": HOSTILE}}, flags=["local_edit"])
    world.candidates[0] = hostile
    RatingItem.objects.filter(pk=world.item.pk).update(text=f"{FORMULA} {HOSTILE}", system=HOSTILE, source=HOSTILE)
    review_services.submit_decision(world.users["own"], hostile.pk, "reject", reason="wrong_type", comment=HOSTILE, idempotency_key="hostile")
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
                assert not [c for c in cells if c[:1] in ("=", "+", "-", "@") and not _number(c)], f"{where}: a live formula"
    assert escaped_seen, "the hostile text was shown nowhere: the check above proves nothing"


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
