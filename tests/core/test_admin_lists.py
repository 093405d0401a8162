"""The admin lists of the tables that grow with the data (``core.admin_lists``): a view's queries do not
grow with the rows listed (no query per row), read no column's distinct values from the listed table, and
above a size count nothing: the page shows the planner's estimate, marked "about"."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from annotation.common.audit import audit_record
from annotation.models import AuditEvent, ReviewDecision, ReviewRound, ReviewSkip
from annotation.review import domain as rules
from core.admin_lists import LargeTableAdmin
from core.models import GoldSegment
from core.paging import EstimatedCountPaginator
from exports.models import PseudoTranslation
from injection.models import Candidate, InjectionRun
from tests.support.asserts import every

TYPES = ["Mistranslation", "Omission", "Addition", "Untranslated"]


def add_candidates(project, direction, n: int, start: int = 0, reviewer=None) -> list[Candidate]:
    """``n`` candidates, each with a decision (by ``reviewer`` in round 1 when given) and a pseudo translation."""
    round_1 = ReviewRound.objects.get_or_create(project=project, number=1)[0] if reviewer else None
    run, _ = InjectionRun.objects.get_or_create(project=project, name="lists", defaults={"backend": "rule"})
    segments = GoldSegment.objects.bulk_create(
        GoldSegment(
            project=project,
            direction=direction,
            external_id=f"s{i}",
            source=f"source {i}",
            reference=f"eins zwei drei {i}",
        )
        for i in range(start, start + n)
    )
    candidates = Candidate.objects.bulk_create(
        Candidate(
            run=run,
            segment=s,
            error_type=TYPES[i % len(TYPES)],
            position="head",
            text=f"eins ZWEI drei {i}",
            span_start=1,
            span_end=2,
            edit_text="ZWEI",
            backend="rule",
        )
        for i, s in enumerate(segments, start=start)
    )
    ReviewDecision.objects.bulk_create(
        ReviewDecision(
            candidate=c,
            reviewer=reviewer,
            round=round_1,
            decision="accept",
            source="annotator" if reviewer else "imported",
            is_final=reviewer is None,
        )
        for c in candidates
    )
    if reviewer:
        reason = sorted(rules.reason_codes(rules.SKIP_REASONS))[0]
        ReviewSkip.objects.bulk_create(
            ReviewSkip(candidate=c, reviewer=reviewer, round=round_1, reason=reason) for c in candidates
        )
    PseudoTranslation.objects.bulk_create(
        PseudoTranslation(segment=s, level=i % 3, key=f"k{i}", text="t", marked_text="t", mqm_penalty=5 * (i % 3))
        for i, s in enumerate(segments, start=start)
    )
    return candidates


LISTS = [
    "/admin/injection/candidate/",
    "/admin/annotation/reviewdecision/",
    "/admin/core/goldsegment/",
    "/admin/exports/pseudotranslation/",
    "/admin/annotation/auditevent/",
    "/admin/annotation/reviewskip/",
]


def audit_events(admin_user, candidates) -> None:
    for c in candidates:
        audit_record(
            actor=admin_user, action="candidate.status", obj=c, old={"status": "pending"}, new={"status": "accepted"}
        )


@pytest.mark.django_db
def test_queries_per_view_do_not_grow_with_the_rows(client, admin_user, project, languages):
    client.force_login(admin_user)
    candidates = add_candidates(project, languages["en-de"], 3, reviewer=admin_user)
    audit_events(admin_user, candidates)
    before = {}
    for url in LISTS:
        client.get(url)  # warm
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200, url
        before[url] = len(queries)
    more = add_candidates(project, languages["en-de"], 40, start=3, reviewer=admin_user)
    audit_events(admin_user, more)
    for url in LISTS:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200, url
        assert len(queries) == before[url], (url, before[url], [q["sql"][:120] for q in queries.captured_queries])


@pytest.mark.django_db
def test_list_filters_read_no_distinct_values_of_the_listed_table(client, admin_user, project, languages):
    client.force_login(admin_user)
    add_candidates(project, languages["en-de"], 8)
    for url in LISTS + ["/admin/injection/injectionitem/", "/admin/exports/metricscore/"]:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200, url
        distinct = [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"].upper()]
        table = url.strip("/").split("/")
        listed = f'"{table[1]}_{table[2]}"'
        assert not [sql for sql in distinct if re.search(rf"FROM {re.escape(listed)}", sql)], (url, distinct)


@pytest.mark.django_db
def test_filters_list_registered_values_and_filter(client, admin_user, project, languages):
    client.force_login(admin_user)
    add_candidates(project, languages["en-de"], 8)
    page = client.get("/admin/injection/candidate/").content.decode()
    assert every(f"?error_type={name}" in page for name in TYPES)
    omission = client.get("/admin/injection/candidate/?error_type=Omission")
    assert omission.context["cl"].result_count == 2
    assert {c.error_type for c in omission.context["cl"].result_list} == {"Omission"}
    levels = client.get("/admin/exports/pseudotranslation/").content.decode()
    assert "?level=0" in levels and "?level=10" in levels and "?level=11" not in levels
    level_1 = client.get("/admin/exports/pseudotranslation/?level=1")
    assert level_1.context["cl"].result_count == 3
    assert {p.level for p in level_1.context["cl"].result_list} == {1}
    audit = client.get("/admin/annotation/auditevent/").content.decode()
    assert every(f"?action={action}" in audit for action in AuditEvent.ACTIONS)


@pytest.mark.django_db
def test_small_lists_count_exactly(client, admin_user, project, languages):
    client.force_login(admin_user)
    add_candidates(project, languages["en-de"], 12)
    response = client.get("/admin/injection/candidate/")
    assert response.context["cl"].result_count == 12 and not response.context["cl"].paginator.estimated
    assert "12 candidates" in response.content.decode() and "about</span>" not in response.content.decode()


@pytest.mark.django_db
def test_large_lists_show_the_estimate_and_count_nothing(client, admin_user, project, languages):
    if connection.vendor != "postgresql":
        pytest.skip("the estimate is PostgreSQL's planner's (elsewhere lists count exactly)")
    client.force_login(admin_user)
    add_candidates(project, languages["en-de"], 300)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE injection_candidate")
    with override_settings(LIST_EXACT_COUNT_BELOW=100), CaptureQueriesContext(connection) as queries:
        response = client.get("/admin/injection/candidate/")
    cl = response.context["cl"]
    assert cl.paginator.estimated and 250 <= cl.result_count <= 350  # the planner's estimate after ANALYZE
    paginator = response.content.decode().split('class="paginator"')[1]
    assert re.search(rf"about</span> {cl.result_count} candidates", paginator)
    assert not [
        q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper() and "injection_candidate" in q["sql"]
    ]
    # narrowed by a filter below the threshold: counted exactly
    with override_settings(LIST_EXACT_COUNT_BELOW=100):
        narrowed = client.get(
            f"/admin/injection/candidate/?segment__direction__id__exact={languages['en-de'].pk}&error_type=Omission"
        )
    assert not narrowed.context["cl"].paginator.estimated
    for nothing in (Candidate.objects.none(), Candidate.objects.filter(pk__in=[])):
        paginator = EstimatedCountPaginator(nothing, 10)
        assert paginator.count == 0 and not paginator.estimated


def test_large_admins_are_the_growing_tables():
    """Every table that grows with candidates, decisions, pseudo translations or scores has a large-table admin."""
    from django.contrib import admin

    from annotation.models import LikertRating, ReviewLock, ReviewSkip, UsedIdempotencyKey
    from exports.models import MergedSegment, MetricScore, PseudoSystem
    from injection.models import InjectionItem

    for model in (
        Candidate,
        InjectionItem,
        ReviewDecision,
        ReviewSkip,
        ReviewLock,
        LikertRating,
        AuditEvent,
        UsedIdempotencyKey,
        GoldSegment,
        PseudoTranslation,
        MergedSegment,
        MetricScore,
        PseudoSystem,
    ):
        assert isinstance(admin.site._registry[model], LargeTableAdmin), model


@pytest.mark.django_db
def test_audit_refuses_an_unlisted_action(admin_user, project):
    with pytest.raises(ValueError, match="not in AuditEvent.ACTIONS"):
        audit_record(actor=admin_user, action="candidate.teleport", obj=project)
    assert not AuditEvent.objects.exists()


@pytest.mark.django_db
def test_pseudo_system_list_counts_triplets_in_the_database(client, admin_user, project, languages):
    """The pseudo system list shows each system's size without loading its triplet ids, in a number of
    queries that does not grow with the systems listed."""
    from exports.models import PseudoSystem, Release

    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)

    def add(start: int, n: int) -> None:
        PseudoSystem.objects.bulk_create(
            PseudoSystem(
                release=release,
                project=project,
                kind="monolingual",
                name=f"mono/{i}",
                direction=languages["en-de"],
                level=i % 3,
                repetition=0,
                seed=0,
                human_score=-5.0 * (i % 3),
                triplet_ids=[f"en-de:{i}:{j}" for j in range(i + 1)],
            )
            for i in range(start, start + n)
        )

    client.force_login(admin_user)
    add(0, 2)
    client.get("/admin/exports/pseudosystem/")
    with CaptureQueriesContext(connection) as few:
        client.get("/admin/exports/pseudosystem/")
    add(2, 20)
    with CaptureQueriesContext(connection) as many:
        response = client.get("/admin/exports/pseudosystem/")
    assert len(many) == len(few)
    listed = {obj.name: obj.triplet_count for obj in response.context["cl"].result_list}
    assert listed == {f"mono/{i}": i + 1 for i in range(22)}
    loaded = re.compile(
        r'(?<!length\()"exports_pseudosystem"\."triplet_ids"', re.IGNORECASE
    )  # the column, not its length
    assert not [q["sql"] for q in many.captured_queries if loaded.search(q["sql"].split(" FROM ")[0])]
