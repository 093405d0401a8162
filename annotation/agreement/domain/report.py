"""The agreement report: every table of the dashboard, the downloads and ``manage.py agreement``, built
from plain rows. Pure Python (no Django): ``annotation.agreement.selectors`` reads the rows from the
database and caches what ``compute_report`` returns.

Units of accept/reject agreement are (candidate, round) pairs: a round-2 re-review is a separate unit.
Decisions with no round count as round 1. Inter-annotator agreement uses only ``source=annotator``
decisions: imported decisions (no reviewer) are final decisions, not a rater, and adjudications are the
reference that annotators are compared with. Gold candidates are quality-control plants and are left out
of agreement and accept rates; they are scored separately.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from annotation.agreement.domain import statistics as ag

# The values stored by annotation.models (ReviewDecision.Decision, ReviewDecision.Source, LikertRating.DIMENSIONS);
# tests/annotation/agreement/test_report.py checks that they agree.
ACCEPT, REJECT = "accept", "reject"
ANNOTATOR, ADJUDICATION = "annotator", "adjudication"
DIMENSIONS: tuple[str, ...] = ("informativeness", "clarity", "plausibility", "faithfulness")
SCALE_POINTS = 5
ALL = "all"

# Tables an annotator or viewer may see (accept/reject aggregates over their own languages); the rest are
# admin-only: they name reviewers, or they hold Likert ratings, which stay blind: a rater may change her
# rating at any time, so any Likert figure (an item's mean, a dimension's agreement) would let her read the
# other raters' scores from her own and move towards them (docs/roles.md, "Blind ratings").
PUBLIC_TABLES = ("languages", "error_types", "rounds")
PRIVATE_TABLES = (
    "reviewer_pairs",
    "annotators",
    "likert_dimensions",
    "likert_composite",
    "likert_items",
    "likert_raters",
)
TABLES = PUBLIC_TABLES + PRIVATE_TABLES
TABLE_TITLES = {
    "languages": "Accept/reject agreement by language",
    "error_types": "Accept/reject agreement by error type",
    "rounds": "Round-to-round alignment",
    "likert_dimensions": "Likert agreement by task, language and dimension",
    "likert_composite": "Likert rwg(j) composite over the four dimensions",
    "likert_items": "Likert items: final label (raters' mean), rwg and rwg(j)",
    "reviewer_pairs": "Agreement per reviewer pair",
    "annotators": "Annotator quality",
    "likert_raters": "Likert raters: leniency and distance from co-raters",
}


@dataclass(frozen=True)
class DecisionRow:
    candidate: int
    language: str
    error_type: str
    is_gold: bool
    gold_answer: str
    reviewer: int | None
    reviewer_name: str
    round_number: int
    decision: str
    source: str
    time_ms: int | None


@dataclass(frozen=True)
class RatingRow:
    item: int
    task: str
    language: str
    external_id: str
    rater: int
    rater_name: str
    scores: tuple[int, ...]  # in DIMENSIONS order
    time_ms: int | None


def compute_report(
    decisions: list[DecisionRow],
    ratings: list[RatingRow],
    *,
    private: bool,
    resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, list[dict]]:
    boot = {"resamples": resamples, "seed": seed, "confidence": confidence}
    iaa = [d for d in decisions if d.source == ANNOTATOR and d.reviewer is not None and not d.is_gold]
    report = {
        "languages": _accept_reject_table(iaa, lambda d: (d.language,), ("language",), boot),
        "error_types": _accept_reject_table(
            iaa, lambda d: (d.language, d.error_type), ("language", "error_type"), boot, with_all_languages=True
        ),
        "rounds": _rounds_table(iaa, boot),
    }
    if private:
        report.update(_likert_tables(ratings, boot))
        report["reviewer_pairs"] = _reviewer_pairs_table(iaa, boot)
        report["annotators"] = _annotators_table(decisions)
        report["likert_raters"] = _likert_raters_table(ratings)
    return report


def _ci_columns(prefix: str, interval: ag.Interval) -> dict:
    return {prefix: interval.estimate, f"{prefix}_low": interval.low, f"{prefix}_high": interval.high}


def _units(rows: list[DecisionRow]) -> dict[tuple[int, int], dict[int, str]]:
    """(candidate, round) → {reviewer: decision}."""
    units: dict[tuple[int, int], dict[int, str]] = defaultdict(dict)
    for d in rows:
        units[(d.candidate, d.round_number)][d.reviewer] = d.decision
    return units


def _accept_reject_stats(rows: list[DecisionRow], boot: dict) -> dict:
    units = _units(rows)
    reviewers = {d.reviewer for d in rows}
    keys = sorted(units)
    # α from each unit's decisions, not a reviewers × units matrix: the rows over every language would
    # make that matrix every reviewer of the campaign × every unit (hundreds × hundreds of thousands).
    unit_lists = [list(units[k].values()) for k in keys]
    multi = [u for u in unit_lists if len(u) >= 2]
    fleiss_units = ag.fleiss_table(multi, [ACCEPT, REJECT], unequal="modal")[0].shape[0] if multi else 0
    return {
        "candidates": len({d.candidate for d in rows}),
        "units": len(units),
        "units_with_2_or_more": len(multi),
        "decisions": len(rows),
        "reviewers": len(reviewers),
        "accept_rate": sum(d.decision == ACCEPT for d in rows) / len(rows) if rows else None,
        **_ci_columns("percent_agreement", ag.percent_agreement_ci(unit_lists, **boot)),
        **_ci_columns(
            "krippendorff_alpha", ag.krippendorff_alpha_units_ci(unit_lists, "nominal", [ACCEPT, REJECT], **boot)
        ),
        **_ci_columns("fleiss_kappa", ag.fleiss_kappa_ci(multi, [ACCEPT, REJECT], "modal", **boot)),
        "fleiss_units": fleiss_units,
    }


def _accept_reject_table(
    rows: list[DecisionRow], group: Callable, names: tuple[str, ...], boot: dict, with_all_languages: bool = False
) -> list[dict]:
    groups: dict[tuple, list[DecisionRow]] = defaultdict(list)
    for d in rows:
        groups[group(d)].append(d)
        if with_all_languages:
            groups[(ALL, *group(d)[1:])].append(d)
    return [{**dict(zip(names, key)), **_accept_reject_stats(groups[key], boot)} for key in sorted(groups)]


def _reviewer_pairs_table(rows: list[DecisionRow], boot: dict) -> list[dict]:
    names = {d.reviewer: d.reviewer_name for d in rows}
    per_language: dict[str, dict[tuple[int, int], dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for d in rows:
        per_language[d.language][(d.candidate, d.round_number)][d.reviewer] = d.decision
    table = []
    for language in sorted(per_language):
        units = per_language[language]
        reviewers = sorted({r for u in units.values() for r in u}, key=lambda r: names[r])
        for a, b in ag.pairwise(reviewers):
            shared = [u for u in units.values() if a in u and b in u]
            if not shared:
                continue
            xs, ys = [u[a] for u in shared], [u[b] for u in shared]
            table.append(
                {
                    "language": language,
                    "reviewer_a": names[a],
                    "reviewer_b": names[b],
                    "units": len(shared),
                    **_ci_columns(
                        "percent_agreement", ag.percent_agreement_ci([[x, y] for x, y in zip(xs, ys)], **boot)
                    ),
                    **_ci_columns("cohen_kappa", ag.cohen_kappa_ci(xs, ys, None, [ACCEPT, REJECT], **boot)),
                }
            )
    return table


def own_agreement_table(rows: list[DecisionRow], me: int, boot: dict) -> list[dict]:
    """One reviewer's agreement with each other reviewer she shares units with, per language, the others
    anonymised: "reviewer 1", "reviewer 2", … numbered per language by shared units (most first), then by
    agreement, never by name or id. ``rows`` are annotator decisions (no gold items); only units ``me``
    decided count."""
    per_language: dict[str, dict[tuple[int, int], dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for d in rows:
        per_language[d.language][(d.candidate, d.round_number)][d.reviewer] = d.decision
    table = []
    for language in sorted(per_language):
        mine = {k: u for k, u in per_language[language].items() if me in u}
        others = {r for u in mine.values() for r in u if r != me}
        pairs = []
        for other in others:
            shared = [u for u in mine.values() if other in u]
            xs, ys = [u[me] for u in shared], [u[other] for u in shared]
            pairs.append(
                {
                    "units": len(shared),
                    **_ci_columns(
                        "percent_agreement", ag.percent_agreement_ci([[x, y] for x, y in zip(xs, ys)], **boot)
                    ),
                    **_ci_columns("cohen_kappa", ag.cohen_kappa_ci(xs, ys, None, [ACCEPT, REJECT], **boot)),
                }
            )
        pairs.sort(key=lambda p: (-p["units"], -(p["percent_agreement"] or 0), -(p["cohen_kappa"] or 0)))
        for n, pair in enumerate(pairs, start=1):
            table.append({"language": language, "other_reviewer": f"reviewer {n}", **pair})
    return table


def _rounds_table(rows: list[DecisionRow], boot: dict) -> list[dict]:
    # A round's outcome for a candidate is 'accept' when every reviewer of that round accepted it (SPEC §3's
    # unanimity rule), else 'reject'; alignment compares round 1's outcome with each later round's.
    language_of = {d.candidate: d.language for d in rows}
    outcome: dict[int, dict[int, str]] = defaultdict(dict)
    for (candidate, number), decisions in _units(rows).items():
        outcome[number][candidate] = ACCEPT if all(v == ACCEPT for v in decisions.values()) else REJECT
    table = []
    numbers = sorted(outcome)
    for later in numbers[1:]:
        first = outcome[numbers[0]]
        for language in [ALL, *sorted({language_of[c] for c in outcome[later]})]:
            second = {c: v for c, v in outcome[later].items() if language == ALL or language_of[c] == language}
            counts = ag.alignment_counts(first, second)
            table.append(
                {
                    "language": language,
                    "round_from": numbers[0],
                    "round_to": later,
                    "items": counts.items,
                    "same": counts.same,
                    **_ci_columns("alignment", ag.round_alignment_ci(first, second, **boot)),
                }
            )
    return table


# ---- Likert --------------------------------------------------------------------------------------


def scope_label(task: str, language: str) -> str:
    """A Likert table row's scope in words: "every rated item", "pseudo translation items", "pseudo
    translation items in ar" (the report's ``ALL`` read as "all all" on the project page, #46)."""
    what = "every rated item" if task == ALL else f"{task.replace('_', ' ')} items"
    return what if language == ALL else f"{what} in {language}"


def _likert_item_row(item_id: int, ratings: list[RatingRow]) -> dict:
    first = ratings[0]
    per_dim = [[r.scores[j] for r in ratings] for j in range(len(DIMENSIONS))]
    row = {
        "item": item_id,
        "task": first.task,
        "language": first.language,
        "external_id": first.external_id,
        "raters": len(ratings),
    }
    for j, dim in enumerate(DIMENSIONS):
        row[f"{dim}_mean"] = sum(per_dim[j]) / len(per_dim[j])  # the final label: the raters' mean (SPEC §4)
    for j, dim in enumerate(DIMENSIONS):
        row[f"{dim}_rwg"] = ag.rwg(per_dim[j], SCALE_POINTS)
    row["rwg_j_composite"] = ag.rwg_j(per_dim, SCALE_POINTS)
    return row


def _likert_dimension_row(task: str, language: str, j: int, dim: str, items: list[list[RatingRow]], boot: dict) -> dict:
    """Dimension ``j`` (``dim``) over ``items`` (each its ratings) of one task and language."""
    per_item = [[r.scores[j] for r in ratings] for ratings in items]
    by_rater = [
        list({r.rater: r.scores[j] for r in ratings}.values()) for ratings in items
    ]  # α per item, not raters × items
    rwgs = [ag.rwg(u, SCALE_POINTS) for u in per_item]
    scores = [x for u in per_item for x in u]
    return {
        "task": task,
        "language": language,
        "dimension": dim,
        "items": len(items),
        "items_with_2_or_more": sum(v is not None for v in rwgs),
        "ratings": len(scores),
        "mean_score": sum(scores) / len(scores),
        "mean_label": ag.mean_defined([sum(u) / len(u) for u in per_item]),
        **_ci_columns("mean_rwg", ag.mean_rwg_ci(per_item, SCALE_POINTS, **boot)),
        "share_rwg_at_least_0_7": (sum(v >= 0.7 for v in rwgs if v is not None) / sum(v is not None for v in rwgs))
        if any(v is not None for v in rwgs)
        else None,
        **_ci_columns(
            "krippendorff_alpha_ordinal",
            ag.krippendorff_alpha_units_ci(by_rater, "ordinal", list(range(1, SCALE_POINTS + 1)), **boot),
        ),
    }


def _likert_tables(rows: list[RatingRow], boot: dict) -> dict[str, list[dict]]:
    items: dict[int, list[RatingRow]] = defaultdict(list)
    for r in rows:
        items[r.item].append(r)
    item_table = [_likert_item_row(item_id, items[item_id]) for item_id in sorted(items)]

    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for item_id in sorted(items):
        first = items[item_id][0]
        for key in {(first.task, first.language), (first.task, ALL), (ALL, ALL)}:
            groups[key].append(item_id)

    dim_table, composite_table = [], []
    for task, language in sorted(groups):
        ids = groups[(task, language)]
        raters = sorted({r.rater for i in ids for r in items[i]})
        for j, dim in enumerate(DIMENSIONS):
            dim_table.append(_likert_dimension_row(task, language, j, dim, [items[i] for i in ids], boot))
        texts = [[[r.scores[j] for r in items[i]] for j in range(len(DIMENSIONS))] for i in ids]
        composite_table.append(
            {
                "task": task,
                "language": language,
                "items": len(ids),
                "raters": len(raters),
                **_ci_columns("mean_rwg_j_composite", ag.mean_rwg_j_ci(texts, SCALE_POINTS, **boot)),
            }
        )
    return {"likert_dimensions": dim_table, "likert_composite": composite_table, "likert_items": item_table}


# ---- annotator quality ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OutlierRule:
    """One reason to look at an annotator's work again: a name, a sentence, and the test on a table row."""

    name: str
    description: str
    applies: Callable[[dict], bool]


def _at_least(row: dict, count: str, n: int) -> bool:
    return (row.get(count) or 0) >= n


def _below(figure: str, floor: float, *, counted: str, at_least: int) -> Callable[[dict], bool]:
    """The rule: ``figure`` under ``floor``, judged once ``counted`` is at least ``at_least``."""
    return lambda r: _at_least(r, counted, at_least) and r[figure] < floor


# The rules by name: the sentence the page shows, and the test on a table row.
_OUTLIER_SENTENCES = {
    "accept_rate_vs_peers": "accept rate differs from same-language peers by more than 0.20 (at least 10 decisions)",
    "low_agreement": "agrees with other reviewers on fewer than 70% of shared items (at least 10 pairs)",
    "disagrees_with_adjudication": "matches adjudicated decisions on fewer than 70% (at least 5)",
    "too_fast": "median time per item under 3 s (at least 10 timed decisions)",
    "gold_failures": "gold score below 0.80 (at least 5 gold items)",
}
_OUTLIER_TESTS = {
    "accept_rate_vs_peers": lambda r: (
        _at_least(r, "decisions", 10)
        and r["peer_accept_rate"] is not None
        and abs(r["accept_rate"] - r["peer_accept_rate"]) > 0.20
    ),
    "low_agreement": _below("agreement_with_others", 0.70, counted="pairs_with_others", at_least=10),
    "disagrees_with_adjudication": _below("agreement_with_adjudication", 0.70, counted="adjudicated_items", at_least=5),
    "too_fast": _below("median_seconds_per_item", 3.0, counted="timed_decisions", at_least=10),
    "gold_failures": _below("gold_score", 0.80, counted="gold_items", at_least=5),
}
OUTLIER_RULES: tuple[OutlierRule, ...] = tuple(
    OutlierRule(name, sentence, _OUTLIER_TESTS[name]) for name, sentence in _OUTLIER_SENTENCES.items()
)


def _annotators_table(decisions: list[DecisionRow]) -> list[dict]:
    annot = [d for d in decisions if d.source == ANNOTATOR and d.reviewer is not None]
    regular = [d for d in annot if not d.is_gold]
    adjudicated: dict[int, str] = {d.candidate: d.decision for d in decisions if d.source == ADJUDICATION}
    units = _units(regular)
    by_annotator: dict[tuple[int, str], list[DecisionRow]] = defaultdict(list)
    gold_by_annotator: dict[tuple[int, str], list[DecisionRow]] = defaultdict(list)
    by_language: dict[str, list[DecisionRow]] = defaultdict(list)
    names: dict[int, str] = {}
    for d in annot:
        names[d.reviewer] = d.reviewer_name
        if d.is_gold:
            if d.gold_answer:
                gold_by_annotator[(d.reviewer, d.language)].append(d)
        else:
            by_annotator[(d.reviewer, d.language)].append(d)
            by_language[d.language].append(d)
    table = []
    for reviewer, language in sorted({(d.reviewer, d.language) for d in annot}, key=lambda k: (k[1], names[k[0]])):
        mine = by_annotator[(reviewer, language)]
        peers = [d for d in by_language[language] if d.reviewer != reviewer]
        gold = gold_by_annotator[(reviewer, language)]
        agree = pairs = 0
        for d in mine:
            for other, value in units[(d.candidate, d.round_number)].items():
                if other != reviewer:
                    pairs += 1
                    agree += value == d.decision
        adjudged = [d for d in mine if d.candidate in adjudicated]
        times = [d.time_ms for d in mine if d.time_ms is not None]
        row = {
            "annotator": names[reviewer],
            "language": language,
            "decisions": len(mine),
            "accept_rate": (sum(d.decision == ACCEPT for d in mine) / len(mine)) if mine else None,
            "peer_accept_rate": (sum(d.decision == ACCEPT for d in peers) / len(peers)) if peers else None,
            "pairs_with_others": pairs,
            "agreement_with_others": agree / pairs if pairs else None,
            "adjudicated_items": len(adjudged),
            "agreement_with_adjudication": (
                sum(d.decision == adjudicated[d.candidate] for d in adjudged) / len(adjudged)
            )
            if adjudged
            else None,
            "timed_decisions": len(times),
            "median_seconds_per_item": statistics.median(times) / 1000 if times else None,
            "gold_items": len(gold),
            "gold_correct": sum(d.decision == d.gold_answer for d in gold),
            "gold_score": (sum(d.decision == d.gold_answer for d in gold) / len(gold)) if gold else None,
        }
        flags = ";".join(rule.name for rule in OUTLIER_RULES if rule.applies(row))
        table.append(
            {"annotator": row.pop("annotator"), "language": row.pop("language"), "flags": flags, **row}
        )  # flags up front
    return table


# ---- who sees what -------------------------------------------------------------------------------


LENIENCY_LIMIT = 1.0  # scale points; a rater this far above or below co-raters on average is flagged
LENIENCY_MIN_ITEMS = 10


def _likert_raters_table(rows: list[RatingRow]) -> list[dict]:
    """Per rater and language: how their scores compare with the other raters of the same items.

    ``leniency`` is the mean over shared items and dimensions of (own score − co-raters' mean): positive
    means more lenient. ``mean_abs_difference`` is the same without the sign."""
    items: dict[int, list[RatingRow]] = defaultdict(list)
    for r in rows:
        items[r.item].append(r)
    stats: dict[tuple[int, str], dict] = {}
    for ratings in items.values():
        for r in ratings:
            entry = stats.setdefault(
                (r.rater, r.language), {"name": r.rater_name, "items": 0, "scores": [], "diffs": [], "times": []}
            )
            entry["items"] += 1
            entry["scores"].extend(r.scores)
            if r.time_ms is not None:
                entry["times"].append(r.time_ms)
            others = [o for o in ratings if o.rater != r.rater]
            if others:
                for j, own in enumerate(r.scores):
                    entry["diffs"].append(own - sum(o.scores[j] for o in others) / len(others))
    table = []
    for (_rater, language), e in sorted(stats.items(), key=lambda kv: (kv[0][1], kv[1]["name"])):
        shared = len(e["diffs"]) // len(DIMENSIONS)
        leniency = sum(e["diffs"]) / len(e["diffs"]) if e["diffs"] else None
        flagged = leniency is not None and shared >= LENIENCY_MIN_ITEMS and abs(leniency) > LENIENCY_LIMIT
        table.append(
            {
                "rater": e["name"],
                "language": language,
                "flags": ("lenient" if leniency > 0 else "severe") if flagged else "",
                "items": e["items"],
                "items_shared": shared,
                "mean_score": sum(e["scores"]) / len(e["scores"]),
                "leniency": leniency,
                "mean_abs_difference": (sum(abs(d) for d in e["diffs"]) / len(e["diffs"])) if e["diffs"] else None,
                "median_seconds_per_item": statistics.median(e["times"]) / 1000 if e["times"] else None,
            }
        )
    return table
