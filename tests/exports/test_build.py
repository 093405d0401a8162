"""build_benchmark on imported shared data: counts, exclusions, M2M, incremental rebuilds, the command."""
from __future__ import annotations

import io
from collections import Counter

import pytest
from django.core.management import call_command

from core.models import Project
from exports.benchmark import selectors, services
from exports.benchmark.domain import merge_segment
from exports.models import BenchmarkBuild, MergedSegment, PseudoTranslation
from injection.models import Candidate
from tests.exports.conftest import import_languages

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]


@pytest.fixture
def xq(db, shared_data):
    import_languages("xqm", shared_data, ["de", "zh"])
    return Project.objects.get(name="xqm")


def expected_from_files(shared_pools, language):
    counts, excluded = Counter(), set()
    for (lang, seg), (reference, pool) in shared_pools.items():
        if lang == language:
            result = merge_segment(reference, language, pool)
            counts.update(p.level for p in result.pseudo_translations)
            excluded |= {(seg, e.error_type) for e in result.exclusions}
    return counts, excluded


def test_build_matches_the_merge_of_the_files_and_excludes_unplaceable_candidates(xq, shared_pools):
    result = services.build_benchmark(xq)
    assert result.rebuilt == result.segments == 204
    for language in ("de", "zh"):
        counts, excluded = expected_from_files(shared_pools, language)
        stored = Counter(
            PseudoTranslation.objects.filter(segment__project=xq, segment__direction__code=f"en-{language}").values_list("level", flat=True)
        )
        assert stored == counts
        table = result.counts[f"en-{language}"]
        assert {int(k): v["total"] for k, v in table["levels"].items()} == {k: counts[k] for k in range(6)}
        rows = Candidate.objects.filter(segment__project=xq, segment__direction__code=f"en-{language}", status="excluded")
        assert {(c.segment.external_id, c.error_type) for c in rows} == excluded
        assert all(c.status_reason.startswith(services.EXCLUSION_PREFIX) and "differs from the reference" in c.status_reason for c in rows)
    assert selectors.excluded_candidates(xq)  # the release report sees them
    # every pseudo translation links exactly its k candidates, all from the pool of its own gold pair
    sample = PseudoTranslation.objects.filter(segment__project=xq).prefetch_related("candidates")[:400]
    for p in sample:
        linked = list(p.candidates.all())
        assert len(linked) == p.level == len(p.spans) == len(p.error_types)
        assert all(c.segment_id == p.segment_id and c.status == "accepted" for c in linked)
        assert sorted(c.id for c in linked) == sorted(s["candidate_id"] for s in p.spans)
        assert p.key == "-".join(str(i) for i in sorted(c.id for c in linked))


def test_rebuild_touches_only_the_gold_pairs_whose_pool_changed(xq):
    services.build_benchmark(xq)
    again = services.build_benchmark(xq)
    assert again.rebuilt == 0 and again.unchanged == 204 and again.pseudo_created == 0

    victim = Candidate.objects.filter(segment__project=xq, status="accepted", segment__direction__code="en-de").order_by("id").first()
    segment = victim.segment
    other_ids = set(PseudoTranslation.objects.filter(segment__project=xq).exclude(segment=segment).values_list("id", flat=True))
    before = PseudoTranslation.objects.filter(segment=segment).count()
    Candidate.objects.filter(pk=victim.pk).update(status="rejected")

    result = services.build_benchmark(xq)
    assert result.rebuilt == 1 and result.unchanged == 203
    assert set(PseudoTranslation.objects.filter(segment__project=xq).exclude(segment=segment).values_list("id", flat=True)) == other_ids
    after = PseudoTranslation.objects.filter(segment=segment)
    assert after.count() < before
    assert not after.filter(candidates=victim).exists()
    assert MergedSegment.objects.get(segment=segment).pseudo_count == after.count()


def test_gold_items_and_perturbations_never_enter_the_pool(xq):
    accepted = Candidate.objects.filter(segment__project=xq, status="accepted").order_by("id")
    gold, perturbation = accepted[0], accepted[1]
    Candidate.objects.filter(pk=gold.pk).update(is_gold=True)
    Candidate.objects.filter(pk=perturbation.pk).update(kind="perturbation")
    services.build_benchmark(xq)
    assert not PseudoTranslation.objects.filter(candidates__in=[gold, perturbation]).exists()
    assert PseudoTranslation.objects.filter(segment__project=xq, level=1).count() > 0


def test_command_prints_the_counts_table_and_records_the_build(xq):
    out = io.StringIO()
    call_command("build_benchmark", "xqm", stdout=out, verbosity=0)
    text = out.getvalue()
    build = BenchmarkBuild.objects.get(project=xq)
    assert build.status == "done" and build.pseudo_created == PseudoTranslation.objects.filter(segment__project=xq).count()
    assert build.excluded > 0 and build.percent == 100
    assert "204 gold pairs" in text and "en-de" in text and "en-zh" in text and "k=5" in text
    out = io.StringIO()
    call_command("build_benchmark", "xqm", stdout=out, verbosity=0)
    assert "0 rebuilt" in out.getvalue()


def test_unknown_project_is_a_clear_error(db):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("build_benchmark", "nope", verbosity=0)
