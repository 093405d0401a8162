"""Admin UI for runs (start, watch, cancel, retry failed), the candidate list with checks, the Django admin,
and who may see what (core.access)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun
from tests.support.asserts import every

pytestmark = pytest.mark.django_db


def _rule_run(project, **kw) -> InjectionRun:
    spec = dict(project=project, kind="mqm", backend="rule", directions=["en-de", "en-zh"])
    spec.update(kw)
    return services.run_execute(run_id=services.run_plan(spec=services.RunSpec(**spec)).pk)


def test_admin_starts_a_run_and_watches_it(client, admin_user, segments, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    assert client.get(reverse("injection:runs")).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):  # the Celery task runs eagerly (no broker in tests)
        response = client.post(
            reverse("injection:runs"),
            {
                "project": segments[0].project_id,
                "directions": ["en-de"],
                "kind": "mqm",
                "error_types": ["Omission", "Addition"],
                "backend": "rule",
                "concurrency": 4,
                "seed": 7,
                "temperature": 0.5,
                "name": "from-ui",
            },
        )
    run = InjectionRun.objects.get(name="from-ui")
    assert response.status_code == 302 and response.url == reverse("injection:run", args=[run.pk])
    run.refresh_from_db()
    assert run.status == "done" and run.total == 3 * 2 * 2 and run.done == run.total and run.created_by == admin_user
    page = client.get(reverse("injection:run", args=[run.pk])).content.decode()
    assert "12 done · 0 failed · 0 pending of 12" in page
    progress = client.get(reverse("injection:run_progress", args=[run.pk])).json()
    assert progress["done"] == 12 and progress["percent"] == 100.0


def test_the_start_form_sent_twice_plans_one_run(client, admin_user, segments, django_capture_on_commit_callbacks):
    """Each rendered form carries its own key; the same form sent again (a double click) shows the run it started."""
    import re

    client.force_login(admin_user)
    keys = [
        re.search(
            r'name="submission" value="([0-9a-f]{32})"', client.get(reverse("injection:runs")).content.decode()
        ).group(1)
        for _ in range(2)
    ]
    assert keys[0] != keys[1]
    body = {
        "project": segments[0].project_id,
        "directions": ["en-de"],
        "kind": "mqm",
        "error_types": ["Omission"],
        "backend": "rule",
        "concurrency": 4,
        "seed": 7,
        "temperature": 0.5,
        "submission": keys[0],
    }
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(reverse("injection:runs"), body)
    with django_capture_on_commit_callbacks() as enqueued:
        again = client.post(reverse("injection:runs"), body, follow=True)
    run = InjectionRun.objects.get()
    assert (
        first.url == reverse("injection:run", args=[run.pk])
        and again.redirect_chain[-1][0] == first.url
        and not enqueued
    )
    assert f"Run {run.name} was already started from this form." in again.content.decode()
    with django_capture_on_commit_callbacks(execute=True):  # another rendering of the form is another run
        client.post(reverse("injection:runs"), {**body, "submission": keys[1]})
    assert InjectionRun.objects.count() == 2


def test_a_run_whose_worker_is_gone_says_so_and_resumes(
    client, admin_user, segments, django_capture_on_commit_callbacks
):
    """Marked running, its lease lapsed: nobody works on it, and the page says so and offers to resume it."""
    from datetime import timedelta

    from django.utils import timezone

    run = services.run_plan(
        spec=services.RunSpec(project=segments[0].project, kind="mqm", directions=["en-de"], error_types=["Omission"])
    )
    client.force_login(admin_user)
    InjectionRun.objects.filter(pk=run.pk).update(
        status="running", lease_owner="gone@host", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    assert (
        'id="run-stalled"' not in client.get(reverse("injection:run", args=[run.pk])).content.decode()
    )  # a live lease: working
    InjectionRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    page = client.get(reverse("injection:run", args=[run.pk])).content.decode()
    assert (
        'id="run-stalled"' in page
        and "No worker has held this run since" in page
        and f"Resume {run.total} pending" in page
    )
    with django_capture_on_commit_callbacks(execute=True):  # no broker: the resumed run goes through in the request
        client.post(reverse("injection:run_retry", args=[run.pk]), {"resume": "1"})
    run.refresh_from_db()
    assert run.status == "done" and run.done == run.total and run.lease_owner != "gone@host"


def test_invalid_run_is_rejected_with_a_clear_error_and_nothing_written(client, admin_user, segments):
    client.force_login(admin_user)
    response = client.post(
        reverse("injection:runs"),
        {
            "project": segments[0].project_id,
            "kind": "perturbation",
            "error_types": ["Addition"],
            "backend": "rule",
            "concurrency": 4,
            "seed": 1,
            "temperature": 0.5,
        },
    )
    assert response.status_code == 200
    assert "unknown perturbation type" in response.content.decode()
    assert not InjectionRun.objects.exists() and not InjectionItem.objects.exists()


def test_cancel_and_retry_failed(client, admin_user, project, segments, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    run = services.run_plan(
        spec=services.RunSpec(project=project, kind="perturbation", backend="rule", directions=["en-de"])
    )
    client.post(reverse("injection:run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert services.run_execute(run_id=run.pk).done == 0  # a cancelled run does nothing until resumed
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("injection:run_retry", args=[run.pk]), {"resume": "1"})
    run.refresh_from_db()
    assert run.status == "done" and run.done + run.failed == run.total and run.failed > 0  # rules refuse Synonym & co.
    page = client.get(reverse("injection:run", args=[run.pk])).content.decode()
    assert "rule refused: Synonym needs lexical knowledge" in page
    one = run.items.filter(status="failed").first()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("injection:run_retry", args=[run.pk]), {"item": str(one.pk)})
    one.refresh_from_db()
    assert one.status == "failed" and one.attempts == 2  # retried alone, refused again with its reason
    assert Candidate.objects.filter(run=run).count() == run.done


def test_annotators_cannot_manage_runs(client, annotator_de, project, segments):
    run = _rule_run(project)
    client.force_login(annotator_de)
    for name, args in (("injection:runs", []), ("injection:run", [run.pk]), ("injection:run_progress", [run.pk])):
        assert client.get(reverse(name, args=args)).status_code == 403
    assert client.post(reverse("injection:run_cancel", args=[run.pk])).status_code == 403
    assert client.post(reverse("injection:run_retry", args=[run.pk])).status_code == 403
    assert client.get(reverse("admin:injection_injectionrun_changelist")).status_code == 302


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("injection:candidates"))
    assert response.status_code == 302 and "login" in response.url


def test_annotators_see_only_their_languages_candidates(client, annotator_de, annotator_zh, project, segments):
    run = _rule_run(project)
    client.force_login(annotator_de)
    page = client.get(reverse("injection:candidates"), {"run": run.pk}).content.decode()
    assert "en-de#0" in page and "en-zh#" not in page
    client.force_login(annotator_zh)
    page = client.get(reverse("injection:candidates"), {"run": run.pk}).content.decode()
    assert "en-zh#0" in page and "en-de#" not in page


def test_candidate_list_filters_by_flag_and_escapes_model_text(client, admin_user, project, segments):
    run = _rule_run(project, directions=["en-de"], error_types=["Addition"])
    evil = run.candidates.first()
    evil.edit_text = "<script>alert(1)</script>"
    evil.flags = ["length_ratio"]
    evil.checks = {"length_ratio": {"passed": False, "detail": "length ratio 1.90 outside 0.6–1.4"}}
    evil.save()
    client.force_login(admin_user)
    page = client.get(reverse("injection:candidates"), {"run": run.pk, "flag": "length_ratio"}).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "length ratio 1.90 outside" in page
    assert page.count("<mark") == 1  # only the flagged candidate


def test_django_admin_lists_and_filters(client, admin_user, project, segments):
    run = _rule_run(project, directions=["en-de"])
    flagged = run.candidates.first()
    flagged.flags = ["in_requested_half"]
    flagged.save()
    client.force_login(admin_user)
    for name in ("injectionrun", "injectionitem", "candidate"):
        assert client.get(reverse(f"admin:injection_{name}_changelist")).status_code == 200
    response = client.get(reverse("admin:injection_candidate_changelist"), {"flag": "in_requested_half"})
    assert response.status_code == 200 and response.context["cl"].result_count == 1
    response = client.get(reverse("admin:injection_candidate_changelist"), {"flag": "none"})
    assert response.context["cl"].result_count == run.candidates.count() - 1
    response = client.get(
        reverse("admin:injection_candidate_changelist"), {"segment__direction__id__exact": flagged.segment.direction_id}
    )
    assert response.context["cl"].result_count == run.candidates.count()


@pytest.mark.parametrize(
    ("backend", "engine_options", "message"),
    [
        ("vllm", "gpu_memory_utilization=0.5\nenforce_eager", "&#x27;enforce_eager&#x27; is not NAME=VALUE"),
    ],
)
def test_engine_options_are_validated_in_the_start_form(client, admin_user, segments, backend, engine_options, message):
    client.force_login(admin_user)
    response = client.post(
        reverse("injection:runs"),
        {
            "project": segments[0].project_id,
            "kind": "mqm",
            "backend": backend,
            "model": "m",
            "concurrency": 4,
            "seed": 1,
            "temperature": 0.5,
            "engine_options": engine_options,
        },
    )
    assert response.status_code == 200 and message in response.content.decode()
    assert not InjectionRun.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("backend", "field", "value"),
    [
        ("openai", "model", "m" * 201),
        ("openai", "base_url", "http://x/" + "a" * 500),
        ("rule", "seed", str(2**63)),
    ],
)
def test_start_form_values_that_do_not_fit_the_columns_are_form_errors(
    client, admin_user, segments, settings, backend, field, value
):
    settings.LLM_ALLOW_CUSTOM_URL = True
    client.force_login(admin_user)
    form = {
        "project": segments[0].project_id,
        "kind": "mqm",
        "backend": backend,
        "model": "m",
        "concurrency": 4,
        "seed": 1,
        "temperature": 0.5,
        "engine_options": "",
    }
    response = client.post(reverse("injection:runs"), {**form, field: value})
    page = response.content.decode()
    assert response.status_code == 200 and 'class="field has-error"' in page and 'class="error" role="alert"' in page
    assert not InjectionRun.objects.exists()


def test_flag_counts_are_the_flags_of_the_listed_candidates(client, admin_user, project, segments):
    """The run page's and the candidate list's flag counts (counted in the database on PostgreSQL, from the
    flagged candidates only) equal a count of every candidate's flags, per run and per filter."""
    from collections import Counter

    from injection import selectors

    run = _rule_run(project)
    other = _rule_run(project, name="other run")
    flags = [["length_ratio"], ["length_ratio", "single_region"], ["candidate_language"], [], ["single_region"]]
    for i, candidate in enumerate(Candidate.objects.order_by("id")):
        candidate.flags = flags[i % len(flags)]
        candidate.save(update_fields=["flags"])

    def python_counts(qs):
        counts = Counter(name for fl in qs.values_list("flags", flat=True) for name in fl)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    for qs in (
        Candidate.objects.all(),
        Candidate.objects.filter(run=run),
        Candidate.objects.filter(run=other),
        selectors.filter_candidates(Candidate.objects.all(), flag="single_region"),
        selectors.filter_candidates(Candidate.objects.all(), direction_code="en-zh", run=run.pk),
    ):
        assert selectors.flag_counts(qs) == python_counts(qs) and python_counts(qs)
    assert (
        selectors.flag_counts(Candidate.objects.none())
        == selectors.flag_counts(Candidate.objects.filter(pk__in=[]))
        == []
    )
    client.force_login(admin_user)
    page = client.get(reverse("injection:run", args=[run.pk])).content.decode()
    for name, n in selectors.flag_counts(Candidate.objects.filter(run=run)):
        assert f'flag={name}">{name}</a>: {n}</li>' in page


def test_flag_filter_lists_exactly_the_candidates_naming_the_flag(client, admin_user, project, segments):
    """The candidate list's and the admin's flag filter (JSON containment on PostgreSQL, the quoted name on
    SQLite) select the candidates whose flags name it: not a name it is part of ("region" in
    "single_region"), not another candidate's, and the same through the page as through the selector."""
    from django.db import connection

    from injection import selectors

    _rule_run(project)
    flags = [
        ["length_ratio"],
        ["length_ratio", "single_region"],
        ["candidate_language"],
        [],
        ["single_region"],
        ['we"ird'],
        ["prüfung"],
    ]
    for i, candidate in enumerate(Candidate.objects.order_by("id")):
        candidate.flags = flags[i % len(flags)]
        candidate.save(update_fields=["flags"])
    for name in ("length_ratio", "single_region", "candidate_language", "region", 'we"ird', "prüfung", "none_such"):
        expected = {pk for pk, fl in Candidate.objects.values_list("pk", "flags") if name in fl}
        assert set(selectors.with_flag(Candidate.objects.all(), name).values_list("pk", flat=True)) == expected
        assert (
            set(selectors.filter_candidates(Candidate.objects.all(), flag=name).values_list("pk", flat=True))
            == expected
        )
    assert not selectors.with_flag(Candidate.objects.all(), "region").exists()
    client.force_login(admin_user)
    page = client.get(reverse("injection:candidates"), {"flag": "candidate_language"}).content.decode()
    n = sum("candidate_language" in fl for fl in Candidate.objects.values_list("flags", flat=True))
    assert n and f">candidate_language</a> ({n})" in page and ">length_ratio</a>" not in page  # the listed ones' flags
    admin_page = client.get(reverse("admin:injection_candidate_changelist"), {"flag": "single_region"}).content.decode()
    ticked = {int(v) for v in __import__("re").findall(r'name="_selected_action" value="(\d+)"', admin_page)}
    assert ticked == {pk for pk, fl in Candidate.objects.values_list("pk", "flags") if "single_region" in fl}
    assert ticked and len(ticked) < Candidate.objects.count()
    if connection.vendor == "postgresql":  # the filter's statement is one the GIN index answers
        sql, params = selectors.with_flag(Candidate.objects.all(), "single_region").values("pk").query.sql_with_params()
        with connection.cursor() as cursor:
            # only a bitmap scan left: it needs an index condition, which only the GIN index can give here
            for path in ("seqscan", "indexscan", "indexonlyscan"):
                cursor.execute(f"SET LOCAL enable_{path} = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "candidate_flag_names" in plan, plan


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)  # the request commits, so its on_commit work runs inside it, as on the site
def test_start_and_retry_say_the_run_finished_without_a_broker_and_started_with_one(
    client, admin_user, segments, redis_url
):
    import redis as redis_lib

    from tests.support.celery_queue import tasks_queued_to

    client.force_login(admin_user)
    form = {
        "project": segments[0].project_id,
        "directions": ["en-de"],
        "kind": "mqm",
        "error_types": ["Omission"],
        "backend": "rule",
        "concurrency": 4,
        "seed": 7,
        "temperature": 0.5,
    }
    response = client.post(reverse("injection:runs"), {**form, "name": "eager"}, follow=True)
    assert _messages(response) == ["Run eager finished: 6 of 6 item(s) done, 0 failed."]  # ran in the request
    response = client.post(
        reverse("injection:run_retry", args=[InjectionRun.objects.get(name="eager").pk]), {"resume": "1"}, follow=True
    )
    assert _messages(response) == ["Run eager finished: 6 of 6 item(s) done, 0 failed."]

    queue = redis_lib.Redis.from_url(redis_url)
    queue.delete("llm")
    try:
        with tasks_queued_to(redis_url):
            response = client.post(reverse("injection:runs"), {**form, "name": "queued"}, follow=True)
        assert _messages(response) == ["Run queued started: 6 item(s)."]  # handed to a worker
        assert InjectionRun.objects.get(name="queued").status == "pending" and queue.llen("llm") == 1
    finally:
        queue.delete("llm")


def test_candidate_pages_link_with_the_filters_kept_and_one_page_parameter(client, admin_user, project, segments):
    import html as html_lib
    from urllib.parse import parse_qs, urlsplit

    for name in ("a", "b", "c", "d", "e"):
        _rule_run(project, name=name)
    assert Candidate.objects.count() > 100  # three pages of 50
    client.force_login(admin_user)

    def links(query):  # the pager's previous/next links
        page = client.get(reverse("injection:candidates"), query).content.decode()
        return [
            html_lib.unescape(h.split('"', 1)[0]) for h in page.split('<a href="')[1:] if "page=" in h.split('"', 1)[0]
        ]

    assert links({}) == ["?page=2"]  # no filter: not "?&page=2"
    parsed = [
        parse_qs(urlsplit(h).query, keep_blank_values=True)
        for h in links({"direction": "en-de", "page": "2", "flag": ""})
    ]
    assert parsed and parsed[0]["page"] == ["1"]  # previous
    assert every(
        p == {"direction": ["en-de"], "flag": [""], "page": [p["page"][0]]} for p in parsed
    )  # filters kept, one page


def test_candidate_list_pages_by_characters_as_well_as_rows(client, admin_user, project, segments, settings):
    """#48.2: 22 answers of 2.9 M characters made a 90 MB page. A page now stops at its character budget and
    links to the rest of the same row page; every candidate of the row page is shown once."""
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run = _rule_run(project, directions=["en-de"], error_types=["Addition"])
    ids = list(run.candidates.order_by("id").values_list("id", flat=True))
    assert len(ids) == 6
    long = "lang " * 120_000  # 600,000 characters
    Candidate.objects.filter(pk__in=ids[1:4]).update(edit_text=long, text=long)
    settings.CANDIDATE_PAGE_MAX_CHARS = 1_500_000
    client.force_login(admin_user)
    seen, query, sizes = [], {"run": run.pk}, []
    for _ in range(6):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("injection:candidates"), query)
        assert not [q for q in queries.captured_queries if "raw_output" in q["sql"]]  # never shown, never read
        sizes.append(len(response.content))
        seen += [c.pk for c, _ in response.context["rows"]]
        more = re.search(r'<a href="\?([^"]*from=\d+[^"]*)">the rest of page 1</a>', response.content.decode())
        if not more:
            break
        query = dict(pair.split("=") for pair in more.group(1).replace("&amp;", "&").split("&"))
    assert seen == ids  # in order, each once
    assert len(sizes) == 3  # [c1, c2] [c3] [c4, c5, c6]: no page holds two of the long texts' pairs
    assert max(sizes) < 1_500_000
