"""Every HTML form the site serves, answered with bad input: a table of bad submissions per form.

For each row: never a 5xx; the answer is the form again (200) with the error on the field, or a redirect
whose error message names the field; the database is as it was (every row of the project's tables, as the
permission matrix compares them) and no task was enqueued; hostile text in the page is escaped. A form's
rows share one world (``test_permissions_matrix.world``): a row that writes nothing leaves it as it was,
and a row that writes fails. A second submit of a valid form (a double click) writes nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django import forms as django_forms
from django.contrib.messages import constants as message_levels
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import ReviewRound
from annotation.review import services as review_services
from core.services import project_ensure
from tests.annotation.review.factories import make_candidate
from tests.hardening import test_permissions_matrix as matrix
from tests.hardening.test_permissions_matrix import SCORES, World, database_state

pytestmark = pytest.mark.django_db
# the permission matrix's world (fixtures): its users, project, candidates, run, release, written once a module
world, shared_world = matrix.world, matrix.shared_world

MISSING = object()  # the field left out of the body
EMPTY, BLANK, LONG = "", "   ", "x" * 10_000
HOSTILE = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://x","y")'
HUGE = "99999999999999999999"  # over PostgreSQL's bigint
NUMBERS = ("abc", "-1", "1e309", "NaN", HUGE, "2.5")


@dataclass
class Form:
    url: Callable[[World], str]
    valid: Callable[[World], dict]  # a body the form accepts (it writes or enqueues)
    who: str = "admin"
    login: bool = True
    prepare: Callable[[World], None] | None = None  # makes the world one the valid body is accepted in
    writes: str = ""  # the table the valid body must write a row into ("": any change, or a task enqueued)


def _upload(name="gold.tsv", text="id\tsource\treference\nnew-1\tA dog.\tEin Hund.\n"):
    return SimpleUploadedFile(name, text.encode())


# French references filed as en-de: the language check refuses them (the override is another test's)
FRENCH_INTO_DE = (
    "id\tsource\treference\nfr-1\tThe cat sat on the mat and slept all afternoon.\t"
    "Le chat était assis sur le tapis et a dormi tout l'après-midi.\n"
)


def _one_accepted_candidate(w: World) -> None:
    """A reviewed candidate (the admin's final accept) for a later round to sample: the world has none."""
    review_services.candidate_adjudicate(admin=w.users["admin"], candidate_id=w.candidates[1].pk, decision="accept")


def _stale_round(w: World) -> int:
    rnd = ReviewRound.objects.create(project=w.project, number=99)
    pk = rnd.pk
    rnd.delete()
    return pk


def _stale_candidate(w: World) -> int:
    cand = make_candidate(w.project, w.candidates[0].segment.direction, "Gone.", "Weg.", "Wег.", external_id="gone")
    pk = cand.pk
    cand.segment.delete()
    return pk


def _stale_project(w: World) -> int:
    project, _ = project_ensure(name="gone", title="Gone")
    pk = project.pk
    project.delete()
    return pk


FORMS = {
    "projects:new": Form(
        lambda w: reverse("projects:new"),
        lambda w: {
            "title": "Neu",
            "name": "neu",
            "source_language": "en",
            "directions": "en-de",
            "reviewers_per_candidate": "2",
            "max_errors": "5",
        },
    ),
    "projects:corpus": Form(
        lambda w: reverse("projects:corpus", args=[w.project.name]),
        lambda w: {
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
            "file": _upload(),
        },
    ),
    "projects:settings": Form(
        lambda w: reverse("projects:settings", args=[w.project.name]),
        lambda w: {"title": "Umbenannt", "reviewers_per_candidate": "3", "max_errors": "4"},
    ),
    "projects:assignments": Form(
        lambda w: reverse("projects:assignments", args=[w.project.name]),
        lambda w: {"direction": "en-de", "assign-en-de-reviewers": [w.users["own"].username]},
    ),
    "projects:direction_add": Form(
        lambda w: reverse("projects:direction_add", args=[w.project.name]),
        lambda w: {"target": "fr", "confirmed": "on"},
    ),
    "projects:xqmeval": Form(lambda w: reverse("projects:xqmeval", args=[w.project.name]), lambda w: {}),
    "review:invite": Form(
        lambda w: reverse("review:annotators"),
        lambda w: {"action": "invite", "username": "neu_de", "reviews": ["de-only/en-de"]},
    ),
    "review:candidate": Form(
        lambda w: reverse("review:candidate", args=[w.project.name, w.candidates[1].pk]),
        lambda w: {"action": "reject", "reason": "wrong_type", "idempotency_key": "form-decision-1"},
        who="own",
    ),
    "review:skip": Form(
        lambda w: reverse("review:candidate", args=[w.project.name, w.candidates[1].pk]),
        lambda w: {"action": "skip", "skip_reason": "unsure"},
        who="own",
    ),
    "review:rate": Form(
        lambda w: reverse("review:rate", args=[w.item.pk]),
        lambda w: {**SCORES, "idempotency_key": "form-rating-1"},
        who="own",
    ),
    "review:open_round": Form(
        lambda w: reverse("review:manage", args=[w.project.name]),
        lambda w: {"action": "open_round", "sample_size": "1", "seed": "1", "languages": "de"},
        prepare=_one_accepted_candidate,
        writes="annotation_reviewround",
    ),
    "review:close_round": Form(
        lambda w: reverse("review:manage", args=[w.project.name]),
        lambda w: {"action": "close_round", "round": w.round.pk},
    ),
    "review:pool_rule": Form(
        lambda w: reverse("review:manage", args=[w.project.name]),
        lambda w: {"action": "pool_rule", "pool_rule": "adjudicated"},
    ),
    "review:adjudication": Form(
        lambda w: reverse("review:adjudication", args=[w.project.name]),
        lambda w: {"candidate": w.candidates[0].pk, "decision": "reject"},
    ),
    "agreement:gold": Form(
        lambda w: reverse("agreement:annotators", args=[w.project.name]), lambda w: {"rate": "0.5", "seed": "1"}
    ),
    "injection:runs": Form(
        lambda w: reverse("injection:runs"),
        lambda w: {
            "project": w.project.pk,
            "directions": ["en-de"],
            "kind": "mqm",
            "backend": "rule",
            "concurrency": "8",
            "seed": "42",
            "temperature": "0.5",
            "submission": "d4c1e6f0a9b84c2b8f0e3a7d5c9b1e2f",
        },
    ),
    "injection:run_retry": Form(lambda w: reverse("injection:run_retry", args=[w.run.pk]), lambda w: {}),
    "benchmarks:release": Form(
        lambda w: reverse("benchmarks:release", args=[w.project.name]),
        lambda w: {"version": "2.0.0", "formats": ["jsonl"]},
    ),
    "benchmarks:push": Form(
        lambda w: reverse("benchmarks:push", args=[w.project.name, w.release.version]),
        lambda w: {"repo_id": "lab/bench"},
    ),
    "scores:start": Form(lambda w: reverse("scores:start", args=[w.release.pk]), lambda w: {"metric": ["chrF++"]}),
    "invite:password": Form(
        lambda w: reverse("review:invite", args=w.invite),
        lambda w: {"new_password1": "a-long-Passw0rd!", "new_password2": "a-long-Passw0rd!"},
        who="anonymous",
        login=False,
    ),
    "login": Form(
        lambda w: reverse("login"),
        lambda w: {"username": "anna_de", "password": "pw-anna-123"},
        who="anonymous",
        login=False,
    ),
}


@dataclass
class Bad:
    form: str
    field: str
    value: object  # MISSING, a string, a list (the field repeated) or world -> value
    names: str = ""  # what the error must name; the field by default
    extra: dict | None = None  # other fields of the body changed with it
    page_status: int = 0  # the page answers this status instead (a bad id in a link the page itself is built from)

    @property
    def label(self) -> str:
        value = "MISSING" if self.value is MISSING else getattr(self.value, "__name__", None) or repr(self.value)
        return f"{self.field}={value[:30]}"


def bad(form: str, field: str, *values, names: str = "", extra: dict | None = None, page_status: int = 0) -> list[Bad]:
    return [Bad(form, field, v, names or field, extra, page_status) for v in values]


TEXT = (MISSING, EMPTY, BLANK, LONG, HOSTILE)

ROWS: list[Bad] = [
    # ---- projects ----
    *bad("projects:new", "title", *TEXT[:4]),
    *bad("projects:new", "name", *TEXT, "a b", FORMULA),
    *bad("projects:new", "source_language", *TEXT, "xx"),
    *bad("projects:new", "directions", *TEXT, "en-xx", "de-en", "en-de, en-de, " + HOSTILE),
    *bad("projects:new", "error_types", ["Bogus"], [HOSTILE]),
    *bad("projects:new", "perturbations", ["Bogus"]),
    *bad("projects:new", "reviewers_per_candidate", MISSING, EMPTY, *NUMBERS, "0", ["2", "x"]),
    *bad("projects:new", "max_errors", MISSING, *NUMBERS, "0", "1000000"),
    # a direction is chosen among the project's: a well-formed one it lacks (en-fr) is refused too
    *bad("projects:corpus", "direction", *TEXT, "en-xx", "de-en", "en-fr", FORMULA),
    *bad("projects:corpus", "file", lambda w: _upload(text=FRENCH_INTO_DE), names="read as de"),
    *bad("projects:corpus", "file", MISSING),
    *bad(
        "projects:corpus",
        "file",
        lambda w: _upload(text="id\tsource\n1\tA dog.\n"),
        lambda w: _upload("gold.exe", "MZ"),
        lambda w: _upload(text=f"id\tsource\treference\n{HOSTILE}\t\tEin Hund.\n"),
        names="gold",
    ),
    *bad("projects:corpus", "id_column", EMPTY, BLANK, LONG, HOSTILE, names="id"),
    *bad("projects:corpus", "source_column", EMPTY, "nope", names="source"),
    *bad("projects:settings", "title", *TEXT[:4]),
    *bad("projects:settings", "reviewers_per_candidate", MISSING, EMPTY, *NUMBERS, "0", "11", names="reviewers"),
    *bad("projects:settings", "max_errors", MISSING, *NUMBERS, "0", "11", names="errors"),
    *bad("projects:settings", "error_types", ["Bogus"], [HOSTILE], names="error"),
    *bad("projects:assignments", "direction", MISSING, EMPTY, "en-fr", HOSTILE, LONG, names="direction"),
    *bad("projects:assignments", "assign-en-de-reviewers", ["ghost"], [HOSTILE], names="reviewers"),
    *bad(
        "projects:direction_add", "target", *TEXT, "xx", "en", "de", FORMULA, names="target"
    ),  # en: the source; de: present
    *bad(
        "projects:xqmeval",
        "candidate_files",
        MISSING,
        lambda w: SimpleUploadedFile("en-de-Addition.parquet", b"not parquet"),
        lambda w: SimpleUploadedFile(f"{HOSTILE}.parquet", b"PAR1"),
        names="parquet",
    ),
    # ---- review: annotators ----
    *bad("review:invite", "username", *TEXT, FORMULA, "anna_de", names="username"),
    *bad("review:invite", "email", "not-an-email", LONG, HOSTILE),
    *bad("review:invite", "reviews", "xx", HOSTILE, LONG, "de-only/en-fr", "zh-only/en-de"),
    *bad("review:invite", "action", "bogus", HOSTILE),
    # ---- review: decisions, skips, ratings ----
    *bad("review:candidate", "action", MISSING, EMPTY, "bogus", HOSTILE, names="decision"),
    *bad("review:candidate", "reason", "bogus", HOSTILE),  # none is allowed
    *bad("review:candidate", "idempotency_key", MISSING, EMPTY, LONG, names="idempotency"),
    *bad(
        "review:candidate", "time_spent_ms", "abc", "1e309", "NaN", names="time"
    ),  # -1 and huge ones are capped, by design
    *bad("review:candidate", "round", "abc", HUGE, _stale_round, page_status=400),
    *bad("review:candidate", "comment", LONG),
    *bad("review:skip", "skip_reason", MISSING, "bogus", HOSTILE, names="reason"),
    *bad("review:skip", "comment", LONG),
    *bad("review:skip", "round", "abc", HUGE, _stale_round, page_status=400),
    *bad("review:rate", "clarity", MISSING, EMPTY, "0", "6", "3.5", "NaN", "1e309", HUGE, HOSTILE, ["3", "4"]),
    *bad("review:rate", "idempotency_key", MISSING, EMPTY, LONG, names="idempotency"),
    *bad("review:rate", "time_spent_ms", "abc", "NaN", names="time"),
    # ---- review: admin ----
    *bad("review:open_round", "sample_size", MISSING, EMPTY, *NUMBERS, "0", names="sample size"),
    *bad("review:open_round", "seed", "abc", "1e309", HUGE),
    *bad("review:open_round", "languages", "xx", HOSTILE, names="language"),
    *bad("review:open_round", "action", MISSING, "bogus", HOSTILE),
    *bad("review:close_round", "round", MISSING, EMPTY, "abc", HUGE, "-1", _stale_round),
    *bad("review:pool_rule", "pool_rule", MISSING, EMPTY, "bogus", HOSTILE, names="pool rule"),
    *bad("review:adjudication", "candidate", MISSING, EMPTY, "abc", HUGE, "-1", _stale_candidate),
    *bad("review:adjudication", "decision", MISSING, EMPTY, "bogus", HOSTILE),
    *bad("review:adjudication", "comment", LONG),
    # ---- agreement: planting gold items ----
    *bad("agreement:gold", "rate", MISSING, EMPTY, BLANK, *NUMBERS, "inf", "-0.5", "2"),
    *bad("agreement:gold", "seed", "abc", "1e309", HUGE, "2.5"),
    # ---- injection ----
    *bad("injection:runs", "project", MISSING, EMPTY, "abc", HUGE, "-1", _stale_project),
    *bad("injection:runs", "directions", ["xx"], ["en-zh"], [HOSTILE]),
    *bad("injection:runs", "kind", MISSING, "bogus", HOSTILE),
    *bad("injection:runs", "backend", MISSING, "bogus", HOSTILE),
    # the LLM fields are the openai backend's (the rule backend ignores them); an empty concurrency is the default;
    # the typed URL field exists only with LLM_ALLOW_CUSTOM_URL (tests/injection/test_views.py)
    *bad("injection:runs", "concurrency", *NUMBERS, "0", "513", ["8", "x"], extra={"backend": "openai"}),
    *bad("injection:runs", "seed", "abc", HUGE, "1e309"),
    *bad("injection:runs", "temperature", "abc", "NaN", "1e309", "-1", "3", extra={"backend": "openai"}),
    *bad("injection:runs", "rpm", "abc", "NaN", "1e309", "0", extra={"backend": "openai"}),
    *bad("injection:runs", "name", "a b", LONG, HOSTILE),
    *bad("injection:runs", "model", LONG, extra={"backend": "openai"}),
    *bad("injection:runs", "endpoint", "nowhere", HOSTILE, extra={"backend": "openai"}),
    *bad("injection:runs", "error_types", ["Bogus"], [HOSTILE]),
    *bad("injection:run_retry", "item", "abc", HUGE, "-1"),
    # ---- releases ----
    *bad("benchmarks:release", "version", *TEXT, "../etc", FORMULA),  # an existing one is written again, by design
    *bad("benchmarks:release", "formats", ["bogus"], [HOSTILE]),
    *bad("benchmarks:release", "push_repo", BLANK + "x", "a/b/c", LONG, HOSTILE, names="repo"),
    *bad("benchmarks:push", "repo_id", *TEXT, "a/b/c", names="repo"),
    # ---- scores ----
    *bad("scores:start", "metric", MISSING, EMPTY, "bogus", HOSTILE),
    *bad("scores:start", "judge_max_usd", "abc", "NaN", "1e309", "-1", "inf", names="budget"),
    *bad("scores:start", "judge_url", "not a url", HOSTILE, names="judge", extra={"metric": ["gemba-mqm"]}),
    *bad("scores:start", "judge_max_usd", "-1", "NaN", names="budget", extra={"metric": ["gemba-mqm"]}),
    # ---- accounts ----
    *bad("invite:password", "new_password1", MISSING, EMPTY),
    *bad("invite:password", "new_password1", "short", LONG, names="password"),  # the mismatch is new_password2's error
    *bad("invite:password", "new_password2", MISSING, "a-different-Passw0rd!"),
    *bad("login", "username", MISSING, HOSTILE, names="username"),
    *bad("login", "password", MISSING, names="password"),
]


def _client(world: World, who: str) -> Client:
    client = Client(raise_request_exception=False)  # a 500 is an answer to assert, not an exception
    if who != "anonymous":
        client.force_login(world.users[who])
    return client


def _body(world: World, row: Bad) -> dict:
    body = FORMS[row.form].valid(world) | (row.extra or {})
    if row.value is MISSING:
        body.pop(row.field, None)
    else:
        body[row.field] = row.value(world) if callable(row.value) else row.value
    return body


def _errors_shown(response, client: Client) -> tuple[str, str]:
    """(the page's text, every error it shows): the form's field errors and error messages, after
    following a redirect."""
    if response.status_code == 302:
        response = client.get(response["Location"])
    text = response.content.decode("utf-8", "replace")
    errors = []
    for context in response.context or []:
        for value in context.flatten().values():
            if isinstance(value, django_forms.BaseForm) and value.is_bound:
                errors += [
                    f"{name}: {label} {' '.join(errs)}"
                    for name, errs in value.errors.items()
                    for label in [str(value.fields[name].label or "") if name in value.fields else ""]
                ]
        break
    messages = response.context.get("messages") if response.context else None
    errors += [str(m) for m in messages or [] if m.level >= message_levels.WARNING]
    return text, "\n".join(errors)


def _row_count(state: dict, table: str) -> int:
    rows = state[table]  # JSON text on PostgreSQL, a list of tuples elsewhere
    return len(json.loads(rows) if isinstance(rows, str) else rows)


def _prepared_client(world: World, spec: Form) -> Client:
    """The form's world made ready and its user signed in: both before any snapshot, since a sign-in writes
    (``last_login``) and would read as the body's write."""
    if spec.prepare:
        spec.prepare(world)
    return _client(world, spec.who)


def check_refused(world: World, row: Bad, capture, client: Client) -> str:
    """'' when the row is refused as it must be, else what went wrong."""
    spec = FORMS[row.form]
    body = _body(world, row)
    before = database_state()
    with capture() as enqueued:
        response = client.post(spec.url(world), body)
    if response.status_code >= 500:
        return f"{response.status_code}"
    if database_state() != before:
        return f"{response.status_code}, and the database changed"
    if enqueued:
        return f"{response.status_code}, and {len(enqueued)} task(s) enqueued"
    if response.status_code not in (200, 302, row.page_status):
        return f"{response.status_code}, not the form again or a redirect with a message"
    text, errors = _errors_shown(response, client)
    if response.status_code == row.page_status:
        errors = text
    if HOSTILE in text:
        return "the page shows the hostile text unescaped"
    if row.names.lower() not in errors.lower():
        return f"{response.status_code}, no error naming {row.names!r}: {errors[:300]!r}"
    return ""


@pytest.mark.parametrize("form", sorted({row.form for row in ROWS}))
def test_bad_submissions_are_refused_naming_the_field(form, world, settings, django_capture_on_commit_callbacks):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/10"
    wrong = {}
    client = _prepared_client(world, FORMS[form])
    for row in (r for r in ROWS if r.form == form):
        problem = check_refused(world, row, django_capture_on_commit_callbacks, client)
        if problem:
            wrong[row.label] = problem
    assert not wrong, f"{form}: " + "\n".join(f"{label}: {problem}" for label, problem in wrong.items())


@pytest.mark.parametrize(
    "form", sorted(set(FORMS) - {"projects:xqmeval", "login", "invite:password", "injection:run_retry"})
)
def test_the_valid_body_is_accepted(form, world, settings, django_capture_on_commit_callbacks):
    """The rows above change one field of this body each: it must be a body the form takes, or they prove nothing."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/10"
    spec = FORMS[form]
    client = _prepared_client(world, spec)
    before = database_state()
    with django_capture_on_commit_callbacks() as enqueued:
        response = client.post(spec.url(world), spec.valid(world))
    assert response.status_code in (200, 302), (form, response.status_code)
    after = database_state()
    if spec.writes:
        assert _row_count(after, spec.writes) == _row_count(before, spec.writes) + 1, f"{form}: no {spec.writes} row"
    assert after != before or enqueued, f"{form}: the valid body wrote nothing"


# A release of an existing version is written again (versions regenerate, byte-identical), so a second one is queued.
# The start-a-run form carries a one-time key (``submission``): sent twice, it plans one run.
DOUBLE_SUBMITS = sorted(
    set(FORMS) - {"projects:xqmeval", "login", "invite:password", "injection:run_retry", "benchmarks:release"}
)


@pytest.mark.parametrize("form", DOUBLE_SUBMITS)
def test_a_second_submit_writes_nothing_more(form, world, settings, django_capture_on_commit_callbacks):
    """A double click: the same body again is no 5xx, writes nothing and enqueues nothing."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/10"
    spec = FORMS[form]
    client = _prepared_client(world, spec)
    url = spec.url(world)
    with django_capture_on_commit_callbacks():
        client.post(url, spec.valid(world))
    after_first = database_state()
    with django_capture_on_commit_callbacks() as enqueued:
        response = client.post(url, spec.valid(world))
    assert response.status_code < 500, (form, response.status_code)
    changed = {table for table, rows in database_state().items() if rows != after_first[table]}
    assert not changed, f"{form}: the second submit wrote again, into {sorted(changed)}"
    assert not enqueued, f"{form}: the second submit enqueued again"
