"""Flag counts of the run page and the candidate list (``selectors.flag_counts``): on PostgreSQL kept in the
cache under the flag change log's tokens, equal to a count of every listed candidate's flags after each kind
of write that could change them (new, deleted, re-flagged, moved candidates; a segment moved to another
direction; an annotator's languages), and not recounted while nothing of that changed (a review's status
updates included). Elsewhere counted on every call, to the same figures."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.models import GoldSegment
from core.services import language_ensure, project_directions_add, project_ensure, user_create
from injection import selectors
from injection.models import Candidate, FlagChange, InjectionRun

pytestmark = pytest.mark.django_db

FLAGS = ["length_ratio", "single_region", "candidate_language", "edit_size"]


def counted(qs) -> list[tuple[str, int]]:
    counts = Counter(name for flags in qs.values_list("flags", flat=True) for name in flags)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def reads_candidates(queries) -> bool:
    return any(re.search(r'FROM "injection_candidate"', q["sql"]) for q in queries.captured_queries)


@pytest.fixture
def candidates(project, languages):
    rng = random.Random(11)
    runs = [InjectionRun.objects.create(project=project, name=f"run {i}", backend="rule") for i in range(2)]
    rows = []
    for code in ("en-de", "en-zh", "en-ja"):
        for i in range(12):
            segment = GoldSegment.objects.create(
                project=project, direction=languages[code], external_id=f"{code}-{i}", source="s", reference="r"
            )
            for etype in ("Omission", "Addition"):
                rows.append(
                    Candidate(
                        run=rng.choice(runs),
                        segment=segment,
                        error_type=etype,
                        position="head",
                        text="t",
                        span_start=0,
                        span_end=1,
                        flags=rng.sample(FLAGS, rng.choice([0, 0, 0, 1, 2])),
                    )
                )
    Candidate.objects.bulk_create(rows)
    return runs


def test_flag_counts_equal_the_listed_flags_after_every_change(project, languages, candidates, annotator_de):
    rng = random.Random(5)
    runs = candidates
    visible = lambda: selectors.visible_candidates(annotator_de)  # noqa: E731
    views = {
        "all": lambda: Candidate.objects.all(),
        "run 0": lambda: Candidate.objects.filter(run=runs[0]),
        "run 1, en-zh": lambda: selectors.filter_candidates(
            Candidate.objects.all(), run=runs[1].pk, direction_code="en-zh"
        ),
        "Addition flagged edit_size": lambda: selectors.filter_candidates(
            Candidate.objects.all(), error_type="Addition", flag="edit_size"
        ),
        "annotator de": visible,
    }

    def check(step):
        for name, qs in views.items():
            assert selectors.flag_counts(qs()) == counted(qs()), (step, name)
            assert selectors.flag_counts(qs()) == counted(qs()), (step, name, "kept")

    check("start")
    assert counted(Candidate.objects.all()) and counted(visible())
    ids = list(Candidate.objects.values_list("id", flat=True))
    other = GoldSegment.objects.filter(direction=languages["en-ja"]).first()
    changes = [
        (
            "re-flagged (update)",
            lambda: Candidate.objects.filter(id__in=rng.sample(ids, 8)).update(flags=["single_region"]),
        ),
        (
            "re-flagged (save)",
            lambda: [
                setattr(c, "flags", c.flags + ["candidate_language"]) or c.save()
                for c in Candidate.objects.filter(id__in=rng.sample(ids, 3))
            ],
        ),
        (
            "re-flagged (bulk_update)",
            lambda: Candidate.objects.bulk_update(
                [setattr(c, "flags", []) or c for c in Candidate.objects.filter(id__in=rng.sample(ids, 6))], ["flags"]
            ),
        ),
        ("moved to the other run", lambda: Candidate.objects.filter(id__in=rng.sample(ids, 6)).update(run=runs[1])),
        (
            "error type changed",
            lambda: Candidate.objects.filter(id__in=rng.sample(ids, 12), error_type="Addition").update(
                error_type="Untranslated"
            ),
        ),
        (
            "new candidates",
            lambda: Candidate.objects.bulk_create(
                [
                    Candidate(
                        run=runs[0],
                        segment=other,
                        error_type="Mistranslation",
                        position=p,
                        text="t",
                        span_start=0,
                        span_end=1,
                        flags=["edit_size"],
                    )
                    for p in ("head", "end")
                ]
            ),
        ),
        ("deleted", lambda: Candidate.objects.filter(id__in=rng.sample(ids, 4)).delete()),
        (
            "segment to another direction",
            lambda: GoldSegment.objects.filter(direction=languages["en-zh"]).update(direction=languages["en-de"]),
        ),
        ("annotator's languages", lambda: annotator_de.profile.languages.add(language_ensure(code="ja"))),
        ("annotator's languages again", lambda: annotator_de.profile.languages.remove(language_ensure(code="de"))),
    ]
    for step, change in changes:
        change()
        ids = list(Candidate.objects.values_list("id", flat=True))
        check(step)


def test_kept_counts_are_read_without_the_candidates_and_survive_reviews(project, candidates):
    if connection.vendor != "postgresql":
        pytest.skip("the flag change log is kept by PostgreSQL triggers")
    run = candidates[0]
    qs = lambda: Candidate.objects.filter(run=run)  # noqa: E731
    first = selectors.flag_counts(qs())
    with CaptureQueriesContext(connection) as queries:
        assert selectors.flag_counts(qs()) == first
    assert not reads_candidates(queries)
    # a review changes statuses, not flags: the counts are still those kept
    Candidate.objects.filter(run=run).update(status=Candidate.Status.ACCEPTED, status_reason="reviewed")
    with CaptureQueriesContext(connection) as queries:
        assert selectors.flag_counts(qs()) == first
    assert not reads_candidates(queries)
    # a re-check that flags one more candidate is counted again
    clean = Candidate.objects.filter(run=run, flags=[]).first()
    Candidate.objects.filter(pk=clean.pk).update(flags=["edit_size"])
    with CaptureQueriesContext(connection) as queries:
        assert selectors.flag_counts(qs()) == counted(qs()) != first
    assert reads_candidates(queries)


def test_a_long_log_is_pruned_when_counted(project, candidates):
    if connection.vendor != "postgresql":
        pytest.skip("the flag change log is kept by PostgreSQL triggers")
    run = candidates[0]
    pks = list(Candidate.objects.filter(run=run).values_list("pk", flat=True))
    for i in range(selectors.PRUNE_ABOVE + 5):  # one statement each, as an LLM run writes its candidates
        Candidate.objects.filter(pk=pks[i % len(pks)]).update(flags=[FLAGS[i % len(FLAGS)]])
    assert FlagChange.objects.filter(project_id=project.pk).count() > selectors.PRUNE_ABOVE
    assert selectors.flag_counts(Candidate.objects.filter(run=run)) == counted(Candidate.objects.filter(run=run))
    assert FlagChange.objects.filter(project_id=project.pk).count() == 1
    Candidate.objects.filter(pk=pks[0]).update(flags=["candidate_language", "edit_size"])  # after pruning, still moved
    assert selectors.flag_counts(Candidate.objects.filter(run=run)) == counted(Candidate.objects.filter(run=run))


def test_an_annotator_sees_counts_of_their_languages_only(client, project, candidates):
    annotator = user_create(username="ana", password="ana-pass-123", languages=["zh"])
    zh_only = counted(Candidate.objects.filter(segment__direction__target__code="zh"))
    assert selectors.flag_counts(selectors.visible_candidates(annotator)) == zh_only
    client.force_login(annotator)
    page = client.get("/injection/candidates/").content.decode()
    for name, n in zh_only:
        assert f">{name}</a> ({n})" in page
    annotator.profile.languages.set([language_ensure(code="de")])
    de_only = counted(Candidate.objects.filter(segment__direction__target__code="de"))
    assert de_only != zh_only and selectors.flag_counts(selectors.visible_candidates(annotator)) == de_only


def test_a_runs_counts_are_kept_through_another_projects_writes(client, admin_user, project, languages, candidates):
    if connection.vendor != "postgresql":
        pytest.skip("the flag change log is kept by PostgreSQL triggers")
    other, _ = project_ensure(name="other")
    project_directions_add(project=other, codes=["en-de"])
    other_run = InjectionRun.objects.create(project=other, name="elsewhere", backend="rule")
    segment = GoldSegment.objects.create(
        project=other, direction=languages["en-de"], external_id="o-1", source="s", reference="r"
    )
    run = candidates[0]
    client.force_login(admin_user)
    pages = {
        "run page": f"/injection/runs/{run.pk}/",
        "list of the run": f"/injection/candidates/?run={run.pk}",
        "whole list": "/injection/candidates/",
    }

    def counted_again(url) -> bool:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return any("jsonb_array_elements_text" in q["sql"] for q in queries.captured_queries)

    for url in pages.values():
        counted_again(url)
    Candidate.objects.create(
        run=other_run,
        segment=segment,
        error_type="Omission",
        position="head",
        text="t",
        span_start=0,
        span_end=1,
        flags=["edit_size"],
    )
    assert {name: counted_again(url) for name, url in pages.items()} == {
        "run page": False,
        "list of the run": False,
        "whole list": True,
    }
    Candidate.objects.filter(run=run).exclude(flags=[]).update(flags=["single_region"])  # the run's own project
    assert counted_again(pages["run page"]) and counted_again(pages["whole list"])
    html = client.get(pages["run page"]).content.decode()
    assert (
        [(name, int(n)) for name, n in re.findall(r">([\w ]+)</a>: (\d+)</li>", html)]
        == counted(Candidate.objects.filter(run=run))
        != []
    )
