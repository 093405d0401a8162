"""Agreement figures computed from stored rows (ORM), checked against the pure statistics on the known data."""

from __future__ import annotations

import statistics

import pytest

from annotation.agreement import selectors as sel
from annotation.agreement.domain import statistics as ag
from annotation.models import LikertRating, ReviewDecision
from tests.annotation.agreement.conftest import DE_R1, ZH_R1, A, R

TOL = 1e-9
DE_R2 = [(A, A), (R, R), (A, R), (A, A)]


def row(table, **match):
    hits = [r for r in table if all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1, (match, table)
    return hits[0]


def test_languages_table_matches_pure_statistics(world):
    report = sel.project_report(world.project, use_cache=False)
    de = row(report["languages"], language="de")
    units = [list(p) for p in DE_R1 + DE_R2]
    assert de["units"] == 16 and de["candidates"] == 12 and de["reviewers"] == 2
    assert de["decisions"] == 32  # adjudications and the imported decision are not rater decisions
    assert de["percent_agreement"] == pytest.approx(12 / 16, abs=TOL)
    assert de["krippendorff_alpha"] == pytest.approx(
        ag.krippendorff_alpha([[u[0] for u in units], [u[1] for u in units]], "nominal"), abs=TOL
    )
    assert de["fleiss_kappa"] == pytest.approx(ag.fleiss_kappa(units), abs=TOL)
    assert de["percent_agreement_low"] <= de["percent_agreement"] <= de["percent_agreement_high"]
    zh = row(report["languages"], language="zh")
    assert zh["percent_agreement"] == pytest.approx(7 / 8, abs=TOL)
    assert zh["accept_rate"] == pytest.approx(sum(x == A for p in ZH_R1 for x in p) / 16, abs=TOL)


def test_error_type_and_pair_tables(world):
    report = sel.project_report(world.project, use_cache=False)
    # German Addition candidates are indices 0, 4, 8 (round 1) and 0, 4 (round 2): all agree
    add = row(report["error_types"], language="de", error_type="Addition")
    assert add["units"] == 5 and add["percent_agreement"] == pytest.approx(1.0, abs=TOL)
    assert add["krippendorff_alpha"] is None  # everyone accepted: undefined, not 1
    omission_all = row(report["error_types"], language="all", error_type="Omission")
    # indices 1, 5, 9 in de round 1 (all disagree) + index 1, 5 in zh (agree, disagree)
    assert omission_all["units"] == 5 and omission_all["percent_agreement"] == pytest.approx(1 / 5, abs=TOL)
    pair = row(report["reviewer_pairs"], language="de")
    assert (pair["reviewer_a"], pair["reviewer_b"]) == ("anna_de", "ben_de")
    pairs = DE_R1 + DE_R2
    assert pair["cohen_kappa"] == pytest.approx(ag.cohen_kappa([p[0] for p in pairs], [p[1] for p in pairs]), abs=TOL)


def test_round_alignment(world):
    report = sel.project_report(world.project, use_cache=False)
    # round-1 outcomes (unanimous accept) of de 0, 2, 3, 4: accept, reject, accept, accept; round 2: accept, reject, reject, accept
    de = row(report["rounds"], language="de")
    assert (de["round_from"], de["round_to"], de["items"], de["same"]) == (1, 2, 4, 3)
    assert de["alignment"] == pytest.approx(0.75, abs=TOL)
    assert row(report["rounds"], language="all")["alignment"] == pytest.approx(0.75, abs=TOL)


def test_likert_tables(world):
    report = sel.project_report(world.project, use_cache=False)
    items = {r["external_id"]: r for r in report["likert_items"]}
    one = items["de-item-1"]  # three raters
    assert one["raters"] == 3
    assert one["informativeness_mean"] == pytest.approx(3.0, abs=TOL)  # final label: raters' mean
    assert one["informativeness_rwg"] == pytest.approx(0.5, abs=TOL)  # 2,4,3: s² = 1
    assert one["faithfulness_rwg"] == 0.0  # 1,5,3: s² = 4 > 2, truncated
    assert one["rwg_j_composite"] == pytest.approx(ag.rwg_j([[2, 4, 3], [3, 3, 3], [3, 2, 3], [1, 5, 3]], 5), abs=TOL)
    assert items["de-item-2"]["rwg_j_composite"] == pytest.approx(1.0, abs=TOL)  # constant ratings
    assert items["zh-item-0"]["informativeness_rwg"] == 0.0  # 1 vs 5
    dim = row(report["likert_dimensions"], task="system_output", language="de", dimension="clarity")
    # clarity: item0 4,4 → 1; item1 3,3,3 → 1; item2 3,3 → 1
    assert dim["mean_rwg"] == pytest.approx(1.0, abs=TOL)
    # 4,4 | 3,3,3 | 3,3: no disagreement within items, variation between them: α = 1 (defined)
    assert dim["krippendorff_alpha_ordinal"] == pytest.approx(1.0, abs=TOL)
    inf = row(report["likert_dimensions"], task="system_output", language="de", dimension="informativeness")
    by_rater = {}
    for item in world.items[:3]:
        for rating in LikertRating.objects.filter(item=item):
            by_rater.setdefault(rating.rater_id, {})[item.id] = rating.informativeness
    matrix = [[by_rater[r].get(i.id) for i in world.items[:3]] for r in sorted(by_rater)]
    assert inf["krippendorff_alpha_ordinal"] == pytest.approx(
        ag.krippendorff_alpha(matrix, "ordinal", range(1, 6)), abs=TOL
    )
    assert inf["mean_score"] == pytest.approx(statistics.mean([5, 4, 2, 4, 3, 3, 3]), abs=TOL)
    composite = row(report["likert_composite"], task="all", language="all")
    assert composite["items"] == 4
    assert composite["mean_rwg_j_composite"] == pytest.approx(
        ag.mean_defined([r["rwg_j_composite"] for r in report["likert_items"]]), abs=TOL
    )


def test_annotator_quality(world):
    report = sel.project_report(world.project, use_cache=False)
    anna = row(report["annotators"], annotator="anna_de", language="de")
    mine = [p[0] for p in DE_R1 + DE_R2]
    theirs = [p[1] for p in DE_R1 + DE_R2]
    assert anna["decisions"] == 16
    assert anna["accept_rate"] == pytest.approx(mine.count(A) / 16, abs=TOL)
    assert anna["peer_accept_rate"] == pytest.approx(theirs.count(A) / 16, abs=TOL)
    assert anna["agreement_with_others"] == pytest.approx(12 / 16, abs=TOL)
    # adjudicated 1 → accept, 5 → reject, 9 → reject; anna said A, R, A
    assert anna["adjudicated_items"] == 3 and anna["agreement_with_adjudication"] == pytest.approx(2 / 3, abs=TOL)
    assert anna["median_seconds_per_item"] == pytest.approx(
        statistics.median([4000 + 100 * i for i in range(12)]) / 1000, abs=TOL
    )
    assert anna["gold_items"] == 0 and anna["gold_score"] is None
    assert {r["annotator"] for r in report["annotators"]} == {
        "anna_de",
        "ben_de",
        "li_zh",
        "wang_zh",
    }  # not the admin adjudicator


def test_imported_decisions_are_not_raters(world):
    before = sel.project_report(world.project, use_cache=False)["languages"]
    ReviewDecision.objects.create(candidate=world.de[5], reviewer=None, decision=R, source="imported", is_final=True)
    after = sel.project_report(world.project, use_cache=False)["languages"]
    assert before == after


@pytest.fixture(params=["locmem", "redis"])
def agreement_cache(request, settings):
    """The report cache on both backends the platform runs with (Redis in production)."""
    from django.core.cache import cache

    if request.param == "redis":
        import uuid

        url = request.getfixturevalue("redis_url")
        # A fresh prefix per run instead of clear(): FLUSHDB would wipe other people's test keys.
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": f"agreement-test-{uuid.uuid4().hex}",
                "TIMEOUT": 300,
            }
        }
        settings.AGREEMENT_CACHE_SECONDS = 120  # test keys expire on their own
    else:
        cache.clear()
    return cache


def test_cache_follows_the_stored_rows(world, agreement_cache):
    first = sel.project_report(world.project)
    key = sel.report_cache_key(world.project)
    assert agreement_cache.get(key)["report"] == first  # stored under the digest of the current rows
    assert sel.project_report(world.project) == first
    # a new decision
    d = ReviewDecision.objects.create(
        candidate=world.zh[0], reviewer=world.users["anna_de"], round=world.rounds[1], decision=R
    )
    assert (
        sel.report_cache_key(world.project) != key and agreement_cache.get(sel.report_cache_key(world.project)) is None
    )
    second = sel.project_report(world.project)
    assert row(second["languages"], language="zh")["decisions"] == 17
    # a bulk update that bypasses save() and signals
    ReviewDecision.objects.filter(pk=d.pk).update(decision=A)
    third = sel.project_report(world.project)
    assert (
        row(third["languages"], language="zh")["accept_rate"] != row(second["languages"], language="zh")["accept_rate"]
    )
    # a deletion
    ReviewDecision.objects.filter(pk=d.pk).delete()
    assert sel.project_report(world.project) == first
    # a changed rating
    LikertRating.objects.filter(item=world.items[3]).update(informativeness=3)
    assert row(sel.project_report(world.project)["likert_items"], external_id="zh-item-0")[
        "informativeness_rwg"
    ] == pytest.approx(1.0)


def test_language_restricted_report_has_no_private_tables(world):
    report = sel.project_report(world.project, languages=["zh"], private=False, use_cache=False)
    assert set(report) == set(sel.PUBLIC_TABLES)
    assert {r["language"] for r in report["languages"]} == {"zh"}
    assert not [name for name in report if name.startswith("likert")]  # ratings stay blind


def test_scope_for(world, db):
    from core.services import user_create

    assert sel.scope_for(world.users["admin"], world.project) == sel.Scope(None, True)
    assert sel.scope_for(world.users["anna_de"], world.project) == sel.Scope(frozenset({"de"}), False)
    assert (
        sel.scope_for(user_create(username="fr_only", password="pw-123456x", languages=["fr"]), world.project) is None
    )


def test_likert_raters_table(world):
    report = sel.project_report(world.project, use_cache=False)
    anna = row(report["likert_raters"], rater="anna_de", language="de")
    # anna's scores vs co-raters' means on items 0, 1, 2 (the co-raters: ben, and on item 1 also the admin)
    diffs = []
    for own, others in [
        ((5, 4, 5, 4), [(4, 4, 5, 5)]),
        ((2, 3, 3, 1), [(4, 3, 2, 5), (3, 3, 3, 3)]),
        ((3, 3, 3, 3), [(3, 3, 3, 3)]),
    ]:
        diffs += [own[j] - sum(o[j] for o in others) / len(others) for j in range(4)]
    assert anna["items"] == 3 and anna["items_shared"] == 3
    assert anna["leniency"] == pytest.approx(sum(diffs) / len(diffs), abs=TOL)
    assert anna["mean_abs_difference"] == pytest.approx(sum(abs(d) for d in diffs) / len(diffs), abs=TOL)
    assert anna["flags"] == ""  # too few shared items to flag anyone
    assert "likert_raters" not in sel.project_report(world.project, languages=["de"], private=False, use_cache=False)


def test_pure_report_builder_uses_the_stored_vocabulary():
    """The report builder is Django-free, so it spells the stored values itself: they must be the models'."""
    from annotation.agreement.domain import report

    assert (report.ACCEPT, report.REJECT) == (ReviewDecision.Decision.ACCEPT, ReviewDecision.Decision.REJECT)
    assert (report.ANNOTATOR, report.ADJUDICATION) == (
        ReviewDecision.Source.ANNOTATOR,
        ReviewDecision.Source.ADJUDICATION,
    )
    assert report.DIMENSIONS == LikertRating.DIMENSIONS
