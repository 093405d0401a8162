"""Meta-evaluation of a scored release: reads MetricScore and PseudoSystem rows, computes with
``exports.metaeval.domain`` (pure). Scores are oriented so that higher is better before any τ (MetricX is
negated); cross-lingual CV is computed on the metric's own scale."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from exports.metaeval import domain as metaeval
from exports.models import MetricScore, PseudoSystem, Release
from exports.scores.selectors import scored_directions, scores_digest
from scoring.registry import MetricError, get_metric


class MetaEvaluationError(ValueError):
    pass


def _orientation(metric: str) -> tuple[str, float]:
    try:
        direction = get_metric(metric).direction
    except MetricError:
        direction = "higher"
    return direction, (-1.0 if direction == "lower" else 1.0)


def _iter_systems(release: Release, kind: str, directions: set[str] | None):
    """The release's pseudo systems of ``kind``, one at a time (a multilingual system of 90 directions holds
    9,180 triplet ids; a thousand of them held together were most of the meta-evaluation's memory)."""
    rows = PseudoSystem.objects.filter(release=release, kind=kind).select_related("direction").order_by("repetition", "name")
    for row in rows.iterator(chunk_size=50):
        sample = metaeval.SystemSample(
            row.name, row.repetition, row.human_score, row.triplet_ids, row.direction.code if row.direction else None, row.level
        )
        if directions is not None and {metaeval.direction_of(t) for t in sample.triplet_ids} - directions:
            continue  # a system with triplets outside the visible directions
        yield sample


def _systems(release: Release, kind: str, directions: set[str] | None) -> list[metaeval.SystemSample]:
    return list(_iter_systems(release, kind, directions))


class _Oriented(Mapping):
    """The scores oriented so that higher is better, read through from the raw ones (the same floats as
    a copy: the sign is ±1.0), so the scores are held once."""

    def __init__(self, raw: dict[str, float], sign: float):
        self.raw, self.sign = raw, sign

    def __getitem__(self, triplet: str) -> float:
        return self.sign * self.raw[triplet]

    def __iter__(self):
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


META_EVALUATION_STEPS = ("scores read", "triplet-level τ", "monolingual systems", "multilingual systems")


def release_meta_evaluation(release: Release, metric: str, *, directions: list[str] | None = None, variant: str = "b",
                            progress=None) -> dict:
    """Triplet-level τ per direction, monolingual system-level τ per direction (mean over repetitions),
    cross-lingual CV per level, and the multilingual study (plain averaging vs LGN, paired t-test) when every
    direction of the release is visible and scored. ``progress(step)`` is called as each of
    ``META_EVALUATION_STEPS`` ends (the command's progress bar)."""
    step = progress or (lambda name: None)
    if variant not in metaeval.TAU_STATISTICS:
        raise MetaEvaluationError(f"unknown τ variant {variant!r}; choose one of {', '.join(metaeval.TAU_STATISTICS)}")
    better, sign = _orientation(metric)
    qs = MetricScore.objects.filter(release=release, metric=metric)
    if directions is not None:
        qs = qs.filter(direction__code__in=directions)
    # Streamed (server-side cursor on PostgreSQL): no list of row tuples beside the score dictionaries.
    raw: dict[str, float] = {}
    per_direction: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for triplet, direction, level, score in qs.values_list("triplet_id", "direction__code", "level", "score").iterator(chunk_size=20_000):
        raw[triplet] = score
        if level is not None:
            per_direction[direction][0].append(sign * score)
            per_direction[direction][1].append(-5.0 * level)
    if not raw:
        raise MetaEvaluationError(f"release {release}: no {metric} scores")
    oriented = _Oriented(raw, sign)
    step(META_EVALUATION_STEPS[0])
    result: dict = {"metric": metric, "better": better, "variant": variant, "label": metaeval.STATISTIC_LABELS[variant], "triplet_level": [], "system_level": {}, "cv": [], "multilingual": None}
    for direction, (metric_scores, human) in sorted(per_direction.items()):
        tau = metaeval.tau_statistic(metric_scores, human, variant)
        result["triplet_level"].append({"direction": direction, "tau": tau.value, "n": tau.n, "epsilon": tau.epsilon})
    scored = set(per_direction)
    del per_direction  # every score is in ``raw``; the per-direction copies were for the triplet-level τ
    step(META_EVALUATION_STEPS[1])

    visible = scored if directions is not None else None
    mono = [s for s in _systems(release, PseudoSystem.Kind.MONOLINGUAL, visible) if all(t in raw for t in s.triplet_ids)]
    if mono:
        result["system_level"] = metaeval.monolingual_system_tau(mono, oriented, variant)
        # Cross-lingual CV at each level: the monolingual system scores of the directions, on the metric's
        # own scale, averaged over repetitions first (SPEC §9; sample std).
        means: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for system in mono:
            means[system.level][system.direction].append(metaeval.system_score(system, raw))
        for level in sorted(means):
            per_dir = {d: float(np.mean(v)) for d, v in means[level].items()}
            cv = metaeval.coefficient_of_variation(list(per_dir.values())) if len(per_dir) >= 2 else None
            result["cv"].append({"level": level, "cv": cv, "directions": len(per_dir), "std": "sample"})

    step(META_EVALUATION_STEPS[2])
    all_directions = scored_directions(release)
    multi: list[metaeval.SystemMeans] = []
    if mono and visible in (None, all_directions):
        # one system at a time, kept as its per-direction means (a few floats): the same numbers as the
        # study over the systems held together (multilingual_study), without their triplet ids
        for system in _iter_systems(release, PseudoSystem.Kind.MULTILINGUAL, visible):
            if not all(t in raw for t in system.triplet_ids):
                multi = []
                break
            multi.append(metaeval.system_means(system, oriented))
    if multi:
        try:
            lgn = metaeval.lgn_from_systems(mono, oriented)
        except ValueError as exc:  # a direction whose systems all score the same: LGN is undefined
            result["multilingual_error"] = str(exc)
            step(META_EVALUATION_STEPS[3])
            return result
        study = metaeval.multilingual_study_of_means(multi, lgn, variant)
        result["multilingual"] = {
            "repetitions": study.repetitions,
            "tau_plain": study.tau_plain,
            "tau_lgn": study.tau_lgn,
            "t": study.test.statistic if study.test else None,
            "p": study.test.pvalue if study.test else None,
            "note": "" if study.test else "difference constant over repetitions (or a single repetition): no t-test",
        }
    step(META_EVALUATION_STEPS[3])
    return result


# ---- the headline the project page shows (cached; computed by a task where a worker runs) ---------------

HEADLINE_CACHE_SECONDS = 30 * 24 * 3600
HEADLINE_PENDING_SECONDS = 600


def headline_key(release: Release, metric: str) -> str:
    """Keyed by the scores it is computed from: new or re-ingested scores give a new key, never a stale one
    (the ingest's summaries: a few rows, not the scores)."""
    n, last = scores_digest(release, metric)
    return f"metaeval:headline:v2:{release.pk}:{metric}:{n}:{last}"


def cached_headline(release: Release, metric: str) -> dict | None:
    from django.core.cache import cache

    return cache.get(headline_key(release, metric))


def compute_headline(release: Release, metric: str) -> dict:
    """τ_b per direction (triplet level, range), the mean monolingual system-level τ_b and the cross-lingual
    CV at the lowest and highest level with errors (k ≥ 1; k = 0 is the reference itself), of one metric
    on a release over every direction; stored in the cache. Seconds at XQ-MEval scale, so the pages only
    read it (``cached_headline``) and a worker computes it (``exports.metaeval_headline``)."""
    from django.core.cache import cache

    key = headline_key(release, metric)
    try:
        result = release_meta_evaluation(release, metric, variant="b")
    except MetaEvaluationError as exc:
        headline = {"metric": metric, "error": str(exc)}
    else:
        taus = [row["tau"] for row in result["triplet_level"] if row["tau"] is not None]
        system = [v for v in result["system_level"].values() if v is not None]
        cvs = [row for row in result["cv"] if row["cv"] is not None and row["level"] >= 1]
        headline = {
            "metric": metric,
            "tau_min": min(taus) if taus else None,
            "tau_max": max(taus) if taus else None,
            "directions": len(result["triplet_level"]),
            "system_tau": (sum(system) / len(system)) if system else None,
            "cv_first": cvs[0]["cv"] if cvs else None,
            "cv_first_level": cvs[0]["level"] if cvs else None,
            "cv_last": cvs[-1]["cv"] if cvs else None,
            "cv_last_level": cvs[-1]["level"] if cvs else None,
        }
    cache.set(key, headline, timeout=HEADLINE_CACHE_SECONDS)
    cache.delete(f"{key}:pending")
    return headline


# ---- the meta-evaluation page's result (cached; computed by a task where a worker runs) -----------------

RESULT_PENDING_SECONDS = 1800


def result_key(release: Release, metric: str, variant: str, directions: list[str] | None) -> str:
    """Keyed by the scores (as ``headline_key``), the τ variant and the directions the viewer may see."""
    n, last = scores_digest(release, metric)
    scope = "all" if directions is None else hashlib.sha256(",".join(sorted(directions)).encode()).hexdigest()[:16]
    return f"metaeval:result:v1:{release.pk}:{metric}:{variant}:{scope}:{n}:{last}"


def cached_meta_evaluation(release: Release, metric: str, variant: str, directions: list[str] | None) -> dict | None:
    """What ``compute_meta_evaluation`` kept for these scores, or None."""
    from django.core.cache import cache

    return cache.get(result_key(release, metric, variant, directions))


def compute_meta_evaluation(release: Release, metric: str, variant: str, directions: list[str] | None) -> dict:
    """``release_meta_evaluation``, kept in the cache under the scores' key (``{"error": …}`` when it
    cannot be computed). A pass over every score of the metric: 11 s for 27 directions here, minutes at
    FLORES size, which is why the page asks a worker for it (``exports.metaeval_result``)."""
    from django.core.cache import cache

    key = result_key(release, metric, variant, directions)
    try:
        result = release_meta_evaluation(release, metric, directions=directions, variant=variant)
    except MetaEvaluationError as exc:
        result = {"error": str(exc)}
    cache.set(key, result, timeout=HEADLINE_CACHE_SECONDS)
    cache.delete(f"{key}:pending")
    return result
