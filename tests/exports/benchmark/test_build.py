"""build_benchmark on imported shared data: counts, exclusions, M2M, incremental rebuilds, the command."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from django.core.management import call_command

from core.domain.units import Edit, apply_edit, split_units
from core.models import Project
from exports.benchmark import selectors, services
from exports.benchmark.domain import TRANSPLANTED, PoolCandidate, merge_segment
from exports.models import BenchmarkBuild, CandidatePlacement, MergedSegment, PseudoTranslation
from injection.models import Candidate
from tests.exports.conftest import import_languages, locatable_anywhere, without_drift
from tests.support.asserts import every

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]


@pytest.fixture(scope="module")
def xq_imported(module_data, shared_data):
    """The import is the same for every test here (each test's changes are rolled back after it)."""
    return module_data(lambda: import_languages("xqm", shared_data, ["de", "zh"]))


@pytest.fixture
def xq(db, xq_imported):
    return Project.objects.get(name="xqm")


def expected_from_files(shared_pools, language):
    counts, excluded, transplanted = Counter(), set(), set()
    for (lang, seg), (reference, pool) in shared_pools.items():
        if lang == language:
            result = merge_segment(reference, language, pool)
            counts.update(p.level for p in result.pseudo_translations)
            excluded |= {(seg, e.error_type) for e in result.exclusions}
            transplanted |= {(seg, c.error_type, c.edit.start, c.edit.end) for c in result.placed if c.drift}
    return counts, excluded, transplanted


def test_build_matches_the_merge_of_the_files_and_excludes_unplaceable_candidates(xq, shared_pools):
    result = services.build_run(project=xq)
    assert result.rebuilt == result.segments == 204
    for language in ("de", "zh"):
        counts, excluded, transplanted = expected_from_files(shared_pools, language)
        stored = Counter(
            PseudoTranslation.objects.filter(
                segment__project=xq, segment__direction__code=f"en-{language}"
            ).values_list("level", flat=True)
        )
        assert stored == counts
        table = result.counts[f"en-{language}"]
        assert {int(k): v["total"] for k, v in table["levels"].items()} == {k: counts[k] for k in range(6)}
        rows = CandidatePlacement.objects.filter(
            candidate__segment__project=xq, candidate__segment__direction__code=f"en-{language}", outcome="excluded"
        ).select_related("candidate__segment")
        assert {(p.candidate.segment.external_id, p.candidate.error_type) for p in rows} == excluded
        # a language may exclude none (its set above is then empty too)
        assert not [p for p in rows if not ("cannot be located" in p.reason and p.candidate.status == "accepted")]
        # candidates placed despite drift: recorded with the span their edit was placed at
        listed = {
            (t["segment_id"], t["error_type"], t["span_start"], t["span_end"])
            for t in selectors.transplanted_candidates(xq)
            if t["direction"] == f"en-{language}"
        }
        assert listed == transplanted
    assert selectors.transplanted_candidates(xq)  # the release report sees them
    assert len(result.transplanted) == len(selectors.transplanted_candidates(xq))
    # every pseudo translation links exactly its k candidates, all from the pool of its own gold pair
    sample = PseudoTranslation.objects.filter(segment__project=xq).prefetch_related("candidates")[:400]
    for p in sample:
        linked = list(p.candidates.all())
        assert len(linked) == p.level == len(p.spans) == len(p.error_types)
        assert not [c for c in linked if not (c.segment_id == p.segment_id and c.status == "accepted")]  # k = 0: none
        assert sorted(c.id for c in linked) == sorted(s["candidate_id"] for s in p.spans)
        assert p.key == "-".join(str(i) for i in sorted(c.id for c in linked))


def test_rebuild_touches_only_the_gold_pairs_whose_pool_changed(xq):
    services.build_run(project=xq)
    again = services.build_run(project=xq)
    assert again.rebuilt == 0 and again.unchanged == 204 and again.pseudo_created == 0

    victim = (
        Candidate.objects.filter(segment__project=xq, status="accepted", segment__direction__code="en-de")
        .order_by("id")
        .first()
    )
    segment = victim.segment
    other_ids = set(
        PseudoTranslation.objects.filter(segment__project=xq).exclude(segment=segment).values_list("id", flat=True)
    )
    before = PseudoTranslation.objects.filter(segment=segment).count()
    Candidate.objects.filter(pk=victim.pk).update(status="rejected")

    result = services.build_run(project=xq)
    assert result.rebuilt == 1 and result.unchanged == 203
    assert (
        set(PseudoTranslation.objects.filter(segment__project=xq).exclude(segment=segment).values_list("id", flat=True))
        == other_ids
    )
    after = PseudoTranslation.objects.filter(segment=segment)
    assert after.count() < before
    assert not after.filter(candidates=victim).exists()
    assert MergedSegment.objects.get(segment=segment).pseudo_count == after.count()


def test_a_first_build_deletes_nothing_and_a_forced_rebuild_replaces_every_row(xq):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    table = PseudoTranslation._meta.db_table
    with CaptureQueriesContext(connection) as first:
        services.build_run(project=xq)
    # nothing was written before, so no DELETE (each would scan the whole young table at scale)
    assert not [q for q in first.captured_queries if q["sql"].startswith("DELETE") and table in q["sql"]]
    rows = Counter(PseudoTranslation.objects.filter(segment__project=xq).values_list("segment_id", "level", "key"))
    links = PseudoTranslation.candidates.through.objects.filter(pseudotranslation__segment__project=xq).count()
    old_ids = set(PseudoTranslation.objects.filter(segment__project=xq).values_list("id", flat=True))

    with CaptureQueriesContext(connection) as forced:
        result = services.build_run(project=xq, force=True)
    assert result.rebuilt == 204 and result.pseudo_deleted == sum(rows.values())
    assert [q for q in forced.captured_queries if q["sql"].startswith("DELETE") and table in q["sql"]]
    # the same rows again (no duplicates, none left over), under new ids, each with its own links
    assert (
        Counter(PseudoTranslation.objects.filter(segment__project=xq).values_list("segment_id", "level", "key")) == rows
    )
    assert not old_ids & set(PseudoTranslation.objects.filter(segment__project=xq).values_list("id", flat=True))
    assert PseudoTranslation.candidates.through.objects.filter(pseudotranslation__segment__project=xq).count() == links
    for p in PseudoTranslation.objects.filter(segment__project=xq).prefetch_related("candidates")[:300]:
        assert p.key == "-".join(str(i) for i in sorted(c.id for c in p.candidates.all()))


def test_a_build_leaves_planner_statistics_for_what_it_wrote(xq):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    services.build_run(project=xq)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, attname FROM pg_stats WHERE tablename IN (%s, %s) AND attname IN ('segment_id', 'pseudotranslation_id')",
            [PseudoTranslation._meta.db_table, PseudoTranslation.candidates.through._meta.db_table],
        )
        analysed = set(cursor.fetchall())
    # without them the release's reads of 100 gold pairs at a time plan as sequential scans of the table
    assert analysed == {
        (PseudoTranslation._meta.db_table, "segment_id"),
        (PseudoTranslation.candidates.through._meta.db_table, "pseudotranslation_id"),
    }


def test_an_earlier_builds_exclusion_is_placed_again_and_the_transplant_follows_the_candidate(xq):
    services.build_run(project=xq)
    transplants = CandidatePlacement.objects.filter(
        candidate__segment__project=xq, outcome="transplanted"
    ).select_related("candidate")
    assert transplants and every(
        p.drift and p.span_start is not None and p.span_end >= p.span_start for p in transplants
    )
    record = transplants[0]
    cand = record.candidate
    # what an earlier build that could not place it left behind: excluded, no pseudo translations
    record.delete()
    CandidatePlacement.objects.create(
        candidate=cand, outcome="excluded", reason="the candidate's text outside span [0, 1) differs"
    )
    PseudoTranslation.objects.filter(candidates=cand).delete()
    MergedSegment.objects.filter(segment=cand.segment).update(fingerprint="stale")
    result = services.build_run(project=xq)
    record = CandidatePlacement.objects.get(candidate=cand)
    assert result.restored == 1 and record.outcome == "transplanted" and record.drift and record.reason == ""
    pseudo = PseudoTranslation.objects.filter(candidates=cand)
    assert pseudo.exists() and every(p.flags == [TRANSPLANTED] for p in pseudo)
    # the drift is repaired: the candidate is placed exactly, and its record goes
    reference, language = cand.segment.reference, cand.segment.direction.target.code
    start, end = record.span_start, record.span_end
    Candidate.objects.filter(pk=cand.pk).update(
        text=apply_edit(reference, Edit(start, end, tuple(split_units(cand.edit_text, language))), language),
        span_start=start,
        span_end=end,
    )
    services.build_run(project=xq)
    assert not CandidatePlacement.objects.filter(candidate=cand).exists()
    assert every(p.flags == [] for p in PseudoTranslation.objects.filter(candidates=cand))


def test_a_candidate_review_takes_out_after_a_build_leaves_the_builds_lists_and_its_record_goes_with_the_next(xq):
    # content outside its span that differs cannot be located (en-de and en-zh of the shared data only drift)
    victim = (
        Candidate.objects.filter(
            segment__project=xq, status="accepted", segment__direction__code="en-de", span_start__gt=0
        )
        .order_by("id")
        .first()
    )
    Candidate.objects.filter(pk=victim.pk).update(text="Anders " + victim.text.split(" ", 1)[1])
    services.build_run(project=xq)
    record = CandidatePlacement.objects.select_related("candidate__segment").get(candidate=victim, outcome="excluded")
    listed = {(r["segment_id"], r["external_id"]) for r in selectors.excluded_candidates(xq)}
    assert record is not None and (record.candidate.segment.external_id, record.candidate.external_id) in listed
    before = selectors.excluded_count(xq)
    Candidate.objects.filter(pk=record.candidate_id).update(status="rejected", status_reason="2/2 rejected")
    assert selectors.excluded_count(xq) == before - 1  # the lists read the pool as it is now
    services.build_run(project=xq)
    assert not CandidatePlacement.objects.filter(candidate_id=record.candidate_id).exists()
    assert selectors.excluded_count(xq) == before - 1


@pytest.mark.slow
def test_whole_shared_data_transplants_drift_and_excludes_only_edits_that_cannot_be_located(db, shared_data):
    """Through the real importer and build: every accepted candidate whose text outside its span differs
    from the reference (the importer's ``local_edit``) is either placed with the flag — its edit giving the
    candidate up to drift — or excluded, and excluded only where no span of the reference takes its edit."""
    import_languages("xqall", shared_data, ["de", "es", "fr", "id", "ja", "lo", "si", "vi", "zh"])
    project = Project.objects.get(name="xqall")
    result = services.build_run(project=project)
    drifting = [
        c
        for c in Candidate.objects.filter(segment__project=project, kind="mqm")
        .exclude(status="rejected")
        .select_related("segment__direction__target")
        if "local_edit" in c.flags
    ]
    assert drifting
    unlocatable, transplanted = set(), {}
    for c in drifting:
        language = c.segment.direction.target.code
        pool = PoolCandidate(
            c.pk, c.error_type, Edit(c.span_start, c.span_end, tuple(split_units(c.edit_text, language))), "", c.text
        )
        if locatable_anywhere(c.segment.reference, language, pool):
            transplanted[c.pk] = c
        else:
            unlocatable.add(c.pk)
    excluded = set(
        CandidatePlacement.objects.filter(candidate__segment__project=project, outcome="excluded").values_list(
            "candidate_id", flat=True
        )
    )
    assert excluded == unlocatable and len(excluded) < len(drifting)
    assert {cid for cid, _ in result.transplanted} == set(transplanted)
    recorded = set(
        CandidatePlacement.objects.filter(candidate__segment__project=project, outcome="transplanted").values_list(
            "candidate_id", flat=True
        )
    )
    assert recorded == set(transplanted)
    assert set(Candidate.objects.filter(pk__in=[*transplanted, *excluded]).values_list("status", flat=True)) == {
        "accepted"
    }
    # every pseudo translation with a transplanted edit keeps the reference outside its edited spans, and
    # each transplanted edit gives its candidate's text up to drift
    flagged = [
        p
        for p in PseudoTranslation.objects.filter(segment__project=project, level__gt=0).select_related(
            "segment__direction__target"
        )
        if p.flags
    ]
    assert flagged and every(p.flags == [TRANSPLANTED] for p in flagged)
    for p in flagged:
        language = p.segment.direction.target.code
        ref, own = split_units(p.segment.reference, language), split_units(p.text, language)
        spans = sorted(p.spans, key=lambda s: s["ref_start"])
        ref_cuts, own_cuts = [0], [0]
        for s in spans:
            ref_cuts += [s["ref_start"], s["ref_end"]]
            own_cuts += [s["mt_start"], s["mt_end"]]
        ref_cuts.append(len(ref))
        own_cuts.append(len(own))
        outside_ref = [ref[a:b] for a, b in zip(ref_cuts[::2], ref_cuts[1::2])]
        outside_own = [own[a:b] for a, b in zip(own_cuts[::2], own_cuts[1::2])]
        assert outside_own == outside_ref, p.key
        assert any(s.get("flags") == [TRANSPLANTED] for s in spans)
        for s in spans:
            if s.get("flags"):
                c = transplanted[s["candidate_id"]]
                assert own[s["mt_start"] : s["mt_end"]] == split_units(c.edit_text, language)
                alone = apply_edit(
                    p.segment.reference,
                    Edit(s["ref_start"], s["ref_end"], tuple(split_units(c.edit_text, language))),
                    language,
                )
                assert without_drift(alone) == without_drift(c.text)
    # those are exactly the pseudo translations that contain a transplanted candidate
    with_transplanted = set(
        PseudoTranslation.objects.filter(candidates__in=list(transplanted)).values_list("id", flat=True)
    )
    assert {p.id for p in flagged} == with_transplanted


def test_gold_items_and_perturbations_never_enter_the_pool(xq):
    accepted = Candidate.objects.filter(segment__project=xq, status="accepted").order_by("id")
    gold, perturbation = accepted[0], accepted[1]
    Candidate.objects.filter(pk=gold.pk).update(is_gold=True)
    Candidate.objects.filter(pk=perturbation.pk).update(kind="perturbation")
    services.build_run(project=xq)
    assert not PseudoTranslation.objects.filter(candidates__in=[gold, perturbation]).exists()
    assert PseudoTranslation.objects.filter(segment__project=xq, level=1).count() > 0


def test_command_prints_the_counts_table_and_records_the_build(xq):
    out = io.StringIO()
    call_command("build_benchmark", "xqm", stdout=out, verbosity=0)
    text = out.getvalue()
    build = BenchmarkBuild.objects.get(project=xq)
    assert (
        build.status == "done" and build.pseudo_created == PseudoTranslation.objects.filter(segment__project=xq).count()
    )
    assert build.transplanted > 0 and build.percent == 100
    assert f"{build.transplanted} placed by transplanting their edit (flag 'transplanted')" in text
    assert "204 gold pairs" in text and "en-de" in text and "en-zh" in text and "k=5" in text
    out = io.StringIO()
    call_command("build_benchmark", "xqm", stdout=out, verbosity=0)
    assert "0 rebuilt" in out.getvalue()


def test_unknown_project_is_a_clear_error(db):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("build_benchmark", "nope", verbosity=0)
