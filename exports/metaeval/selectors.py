"""Meta-evaluation of a scored release: reads MetricScore and PseudoSystem rows, computes with
``exports.metaeval.domain`` (pure). Scores are oriented so that higher is better before any τ (MetricX is
negated); cross-lingual CV is computed on the metric's own scale."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from core.domain.errors import Invalid
from core.storage import ReleaseFiles
from exports.metaeval import domain as metaeval
from exports.models import MetricScore, PseudoSystem, Release, ScoreSummary
from exports.scores.selectors import scored_directions, scores_digest
from scoring.api import MetricError, get_metric

PEOPLE_GOLDS = ("esa", "mqm")  # people's scores in the release's span annotations, as a gold beside -5k
PREDETERMINED = "xqm"  # the predetermined quality -5k (evalset.HUMAN_SCORER)
GOLDS = (PREDETERMINED, *PEOPLE_GOLDS)


class MetaEvaluationError(Invalid, ValueError):
    code = "metaeval_invalid"


def _orientation(metric: str) -> tuple[str, float]:
    try:
        better = get_metric(metric).better
    except MetricError:
        better = "higher"
    return better, (-1.0 if better == "lower" else 1.0)


def _iter_systems(release: Release, kind: str, directions: set[str] | None, *, direction_id: int | None = None):
    """The release's pseudo systems of ``kind`` (of one direction, by id), one at a time (a multilingual system of
    90 directions holds 9,180 triplet ids; a thousand of them held together were most of the meta-evaluation's
    memory)."""
    rows = PseudoSystem.objects.filter(release=release, kind=kind)
    if direction_id is not None:
        rows = rows.filter(direction_id=direction_id)
    rows = rows.select_related("direction").order_by("repetition", "name")
    # A fetch of 50 multilingual systems at k = 10 is 459,000 ids (≈ 45 MB), twice that for 200 directions
    chunk = 50 if kind == PseudoSystem.Kind.MONOLINGUAL else 4
    for row in rows.iterator(chunk_size=chunk):
        sample = metaeval.SystemSample(
            row.name,
            row.repetition,
            row.human_score,
            row.triplet_ids,
            row.direction.code if row.direction else None,
            row.level,
        )
        if directions is not None and {metaeval.direction_of(t) for t in sample.triplet_ids} - directions:
            continue  # a system with triplets outside the visible directions
        yield row.pk, sample


def _systems(release: Release, kind: str, directions: set[str] | None) -> list[metaeval.SystemSample]:
    return [sample for _, sample in _iter_systems(release, kind, directions)]


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


META_EVALUATION_STEPS = ("multilingual systems read", "directions", "multilingual study")


class _MultilingualSpool:
    """The multilingual systems' triplet ids, written once to one file per direction (a line per system:
    its index, then its ids there in its order, tab-separated), so each direction's part of every system
    is read while that direction's scores are loaded and no pass holds every score at once. A system of
    90 directions holds 9,180 ids; a thousand of them are 9 M ids at k = 10 (486 MB of files under
    TMPDIR, removed at the end) and about 20 M for 200 directions."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="xq-metaeval-")
        self.files: dict[str, object] = {}
        self.systems: list[tuple[int, float, list[str]]] = []  # (repetition, human score, directions in order)

    def add(self, system: metaeval.SystemSample) -> None:
        index = len(self.systems)
        by_direction: dict[str, list[str]] = {}  # in first appearance: the order Algorithm 1 averages them in
        for triplet in system.triplet_ids:
            direction_code = triplet.partition("/")[0]  # metaeval.direction_of, inline: 9 M calls at k = 10
            ids = by_direction.get(direction_code)
            if ids is None:
                ids = by_direction[direction_code] = []
            ids.append(triplet)
        for direction_code, ids in by_direction.items():
            line = "\t".join(ids)
            if line.count("\t") != len(ids) - 1 or "\n" in line:
                raise MetaEvaluationError(f"system {system.name}: a triplet id holds a tab or a line break")
            out = self.files.get(direction_code)
            if out is None:
                out = self.files[direction_code] = open(self._path(direction_code), "w", encoding="utf-8")
            out.write(f"{index}\t{line}\n")  # one line per system and direction
        self.systems.append((system.repetition, system.human_score, list(by_direction)))

    def _path(self, direction_code: str) -> str:
        return os.path.join(self.dir.name, hashlib.sha256(direction_code.encode()).hexdigest()[:24])

    def finish_writing(self) -> None:
        for out in self.files.values():
            out.close()

    def means(self, direction_code: str, raw: Mapping[str, float], sign: float) -> dict[int, float] | None:
        """Each system's mean oriented score in ``direction`` (the same values, in the same order, as
        ``metaeval.system_means`` averages), or None when one of its triplets there has no score."""
        result: dict[int, float] = {}
        if direction_code not in self.files:
            return result
        with open(self._path(direction_code), encoding="utf-8") as lines:
            for line in lines:
                index, _, ids = line.rstrip("\n").partition("\t")
                try:
                    values = [sign * raw[triplet] for triplet in ids.split("\t")]
                except KeyError:
                    return None
                result[int(index)] = float(np.mean(values))
        return result

    def close(self) -> None:
        self.finish_writing()
        self.dir.cleanup()


def _scored_directions(
    release: Release, metric: str, directions: list[str] | None
) -> tuple[list[tuple[int, str]], set[str]]:
    """(direction id, code) of every direction with scores of ``metric`` (of the visible ones), by code; and the
    codes of those with scores at a level. From the ingest's summaries, not a pass over the scores."""
    rows = ScoreSummary.objects.filter(release=release, metric=metric)
    if directions is not None:
        rows = rows.filter(direction__code__in=directions)
    found: dict[str, int] = {}
    leveled: set[str] = set()
    for direction_id, code, level in rows.values_list("direction_id", "direction__code", "level"):
        found[code] = direction_id
        if level is not None:
            leveled.add(code)
    return [(found[code], code) for code in sorted(found)], leveled


def meta_evaluation_steps(release: Release, metric: str, directions: list[str] | None = None) -> list[str]:
    """The steps ``release_meta_evaluation`` reports, in order: the multilingual systems' read, one per
    direction, the multilingual study (the command's progress bar)."""
    codes, _ = _scored_directions(release, metric, directions)
    return (
        [META_EVALUATION_STEPS[0]]
        + [f"{META_EVALUATION_STEPS[1]}: {code}" for _, code in codes]
        + [META_EVALUATION_STEPS[2]]
    )


def release_meta_evaluation(
    release: Release, metric: str, *, directions: list[str] | None = None, variant: str = "b", progress=None
) -> dict:
    """Triplet-level τ per direction, monolingual system-level τ per direction (mean over repetitions),
    cross-lingual CV per level, and the multilingual study (plain averaging vs LGN, paired t-test) when every
    direction of the release is visible and scored. ``progress(step)`` is called as each of
    ``meta_evaluation_steps`` ends (the command's progress bar).

    One direction at a time: its scores, its monolingual systems and its part of every multilingual system
    (spooled to disk by ``_MultilingualSpool``), so memory holds one direction's scores whatever the number
    of directions. The figures equal, to the last digit, the computation over every score held together
    (``tests/exports/metaeval/test_metaeval_streaming.py``)."""
    step = progress or (lambda name: None)
    if variant not in metaeval.TAU_STATISTICS:
        raise MetaEvaluationError(f"unknown τ variant {variant!r}; choose one of {', '.join(metaeval.TAU_STATISTICS)}")
    better, sign = _orientation(metric)
    codes, scored = _scored_directions(release, metric, directions)
    if not codes:
        raise MetaEvaluationError(f"release {release}: no {metric} scores")
    result: dict = {
        "metric": metric,
        "better": better,
        "variant": variant,
        "label": metaeval.STATISTIC_LABELS[variant],
        "triplet_level": [],
        "system_level": {},
        "cv": [],
        "multilingual": None,
    }
    visible = scored if directions is not None else None
    study = visible in (None, scored_directions(release))

    with _multilingual_spool(release, visible, wanted=study) as spool:
        step(META_EVALUATION_STEPS[0])
        per_direction = _DirectionFigures(len(spool.systems))
        for direction_id, code in codes:
            per_direction.add(release, metric, direction_id, code, sign, variant, visible, spool)
            step(f"{META_EVALUATION_STEPS[1]}: {code}")
        unread = set(spool.files) - {code for _, code in codes}

    result["triplet_level"] = per_direction.triplet_level
    if per_direction.any_monolingual:
        result["system_level"] = per_direction.system_level
        result["cv"] = per_direction.cv(release)
    if study and per_direction.any_monolingual and spool.systems and per_direction.multilingual_complete and not unread:
        result.update(per_direction.multilingual_study(spool.systems, variant))
    step(META_EVALUATION_STEPS[2])
    return result


@contextmanager
def _multilingual_spool(release: Release, visible: set[str] | None, *, wanted: bool):
    """The release's multilingual systems (of ``visible``; none unless ``wanted``) spooled, removed on leaving."""
    spool = _MultilingualSpool()
    try:
        if wanted:
            for _, system in _iter_systems(release, PseudoSystem.Kind.MULTILINGUAL, visible):
                spool.add(system)
        spool.finish_writing()
        yield spool
    finally:
        spool.close()


class _DirectionFigures:
    """What each direction contributes, computed while its scores are loaded and kept as a few numbers."""

    def __init__(self, multilingual_systems: int) -> None:
        self.triplet_level: list[dict] = []
        self.system_level: dict[str, float] = {}
        self.any_monolingual = False
        # level -> direction -> (its monolingual systems' ids, their mean score)
        self.level_means: dict[int, dict[str, tuple[list[int], float]]] = defaultdict(dict)
        self.lgn: dict[str, metaeval.Normaliser] = {}
        self.lgn_error = ""
        self.multilingual_means: dict[str, dict[int, float]] = {}
        self.multilingual_complete = multilingual_systems > 0

    def add(
        self,
        release: Release,
        metric: str,
        direction_id: int,
        code: str,
        sign: float,
        variant: str,
        visible: set[str] | None,
        spool: _MultilingualSpool,
    ) -> None:
        raw: dict[str, float] = {}
        metric_scores, human = [], []
        rows = MetricScore.objects.filter(release=release, metric=metric, direction_id=direction_id)
        for triplet, level, score in rows.values_list("triplet_id", "level", "score").iterator(chunk_size=20_000):
            raw[triplet] = score
            if level is not None:
                metric_scores.append(sign * score)
                human.append(-5.0 * level)
        if metric_scores:
            tau = metaeval.tau_statistic(metric_scores, human, variant)
            self.triplet_level.append({"direction": code, "tau": tau.value, "n": tau.n, "epsilon": tau.epsilon})
        del metric_scores, human
        oriented = _Oriented(raw, sign)

        mono = [
            (pk, s)
            for pk, s in _iter_systems(release, PseudoSystem.Kind.MONOLINGUAL, visible, direction_id=direction_id)
            if all(t in raw for t in s.triplet_ids)
        ]
        if mono:
            self.any_monolingual = True
            systems = [s for _, s in mono]
            self.system_level.update(metaeval.monolingual_system_tau(systems, oriented, variant))
            by_level: dict[int, list[tuple[int, float]]] = defaultdict(list)
            for pk, system in mono:
                by_level[system.level].append((pk, metaeval.system_score(system, raw)))
            for level, values in by_level.items():
                self.level_means[level][code] = ([pk for pk, _ in values], float(np.mean([v for _, v in values])))
            try:
                self.lgn.update(metaeval.lgn_from_systems(systems, oriented))
            except ValueError as exc:
                self.lgn_error = self.lgn_error or str(exc)
        if self.multilingual_complete:
            means = spool.means(code, raw, sign)
            if means is None:
                self.multilingual_complete = False
            else:
                self.multilingual_means[code] = means

    def multilingual_study(self, systems: list[tuple[int, float, list[str]]], variant: str) -> dict:
        """The study of the spooled ``systems`` (plain averaging vs LGN, paired t-test), or why LGN is undefined."""
        if self.lgn_error:  # a direction whose systems all score the same: LGN is undefined
            return {"multilingual_error": self.lgn_error}
        means = [
            metaeval.SystemMeans(repetition, human, {d: self.multilingual_means[d][index] for d in order})
            for index, (repetition, human, order) in enumerate(systems)
        ]
        figures = metaeval.multilingual_study_of_means(means, self.lgn, variant)
        return {
            "multilingual": {
                "repetitions": figures.repetitions,
                "tau_plain": figures.tau_plain,
                "tau_lgn": figures.tau_lgn,
                "t": figures.test.statistic if figures.test else None,
                "p": figures.test.pvalue if figures.test else None,
                "note": ""
                if figures.test
                else "difference constant over repetitions (or a single repetition): no t-test",
            }
        }

    def cv(self, release: Release) -> list[dict]:
        """Cross-lingual CV at each level: the monolingual system scores of the directions, on the metric's
        own scale, averaged over repetitions first (SPEC §9; sample std), directions in the order their
        first system comes in (repetition, name), as the computation over every system held together."""
        position = {
            pk: i
            for i, pk in enumerate(
                PseudoSystem.objects.filter(release=release, kind=PseudoSystem.Kind.MONOLINGUAL)
                .order_by("repetition", "name")
                .values_list("pk", flat=True)
            )
        }
        rows = []
        for level in sorted(self.level_means):
            ordered = sorted(
                self.level_means[level].values(), key=lambda ids_and_mean: min(position[pk] for pk in ids_and_mean[0])
            )
            values = [mean for _, mean in ordered]
            cv = metaeval.coefficient_of_variation(values) if len(values) >= 2 else None
            rows.append({"level": level, "cv": cv, "directions": len(values), "std": "sample"})
        return rows


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


# ---- the leaderboard: metrics ranked with WMT's significance clusters, per direction and over all ----------


def _direction_scores(release: Release, metric: str, direction_id: int, sign: float) -> dict[str, tuple[int, float]]:
    rows = MetricScore.objects.filter(release=release, metric=metric, direction_id=direction_id, level__isnull=False)
    values = rows.values_list("triplet_id", "level", "score").iterator(chunk_size=20_000)
    return {t: (level, sign * s) for t, level, s in values}


LEADERBOARD_LEVELS = ("triplet", "system")
# average_by on a release: a triplet level group is a gold segment's pseudo translations; at system level the
# groups are the repetitions already
LEADERBOARD_GROUPINGS = {"triplet": ("none", "item"), "system": ("none",)}


def _system_vectors(
    release: Release,
    direction_id: int,
    loaded: dict[str, dict[str, tuple[int, float]]],
    metrics: list[str],
    people: dict[str, float] | None = None,
) -> tuple[list[float], dict[str, list[float]], list[tuple[int, int]]]:
    """The direction's monolingual pseudo systems whose every triplet every metric scored: human scores, each
    metric's mean oriented score, and the item bounds of each repetition (a group, as a language pair is in
    WMT's global accuracy: systems are compared within their repetition). With ``people``, a system's human
    score is the mean of its triplets' people's scores (a system none of whose triplets has one is left out)."""
    by_repetition: dict[int, list[metaeval.SystemSample]] = defaultdict(list)
    for _, system in _iter_systems(release, PseudoSystem.Kind.MONOLINGUAL, None, direction_id=direction_id):
        if all(t in loaded[m] for m in metrics for t in system.triplet_ids) and (
            people is None or any(t in people for t in system.triplet_ids)
        ):
            by_repetition[system.repetition].append(system)
    groups = _repetition_groups(by_repetition)
    gold, vectors = [], {m: [] for m in metrics}
    for systems in groups:
        for system in systems:
            if people is None:
                gold.append(system.human_score)
            else:
                rated = [people[t] for t in system.triplet_ids if t in people]
                gold.append(float(np.mean(rated)))
            for m in metrics:
                vectors[m].append(float(np.mean([loaded[m][t][1] for t in system.triplet_ids])))
    return gold, vectors, _group_bounds(groups)


def _repetition_groups(by_repetition: dict[int, list]) -> list[list]:
    """The repetitions that hold two systems or more, in order: systems are compared within their repetition
    (a group, as a language pair is in WMT's global accuracy), and one alone compares with nothing."""
    return [members for _, members in sorted(by_repetition.items()) if len(members) >= 2]


def _group_bounds(groups: list[list]) -> list[tuple[int, int]]:
    """Each group's ``(start, end)`` in the items that list the groups' members one after another."""
    bounds, start = [], 0
    for members in groups:
        bounds.append((start, start + len(members)))
        start += len(members)
    return bounds


def release_leaderboard(
    release: Release,
    metrics: list[str],
    *,
    statistic: str = "pearson",
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    block_size: int = 1000,
    directions: list[str] | None = None,
    level: str = "triplet",
    average_by: str = "none",
    replace_nans_with_zeros: bool = False,
    test: str | None = None,
    gold: str = PREDETERMINED,
) -> dict:
    """Leaderboard of ``metrics`` (oriented so that higher is better) against the predetermined quality, or
    with ``gold`` ``esa``/``mqm`` against people's scores of the release (``people_scores``: a triplet's mean
    score; a pseudo system's, the mean over its triplets people scored; triplets and systems without one left
    out, and no multilingual group).

    ``triplet`` level: per direction, the statistic of each metric over the triplets every metric scored (human
    score −5·k). ``system`` level: over the direction's monolingual pseudo systems (their mean scores against
    their predetermined human score), each repetition a group whose values are averaged (pairs pooled for
    accuracy: WMT's global accuracy). Per direction, the metrics are ranked into WMT's greedy significance
    clusters by a paired permutation test (mt-metrics-eval ``PermutationSigDiff`` / ``AssignRanks``); over all
    directions, the mean of the groups' values (accuracy: pooled) with its own test over every direction's
    items. One direction's scores are read at a time; the overall test keeps the aligned scores (a float per
    item and metric). At triplet level each direction's value has a percentile bootstrap interval over its
    triplets (same resamples, seed and α). At system level the multilingual pseudo systems are ranked too, as a
    group ``multilingual`` of their own (``_multilingual_group``): their ids are spooled to disk per direction
    and each direction's means taken while its scores are loaded, so memory stays flat in the directions.

    ``average_by`` (triplet level): ``none`` takes a direction's triplets as one group; ``item`` makes each gold
    segment a group whose "systems" are its pseudo translations (k = 0..5 errors), averages the statistic over
    segments (``stats.AverageCorrelation``), and tests by segment; ``sys`` is refused (a segment's pseudo
    translations have no identity across segments). ``replace_nans_with_zeros`` and ``test`` (``scores`` or
    ``pairs``) are ``data.CompareMetrics``'s. Bootstrap intervals are given for ``average_by`` none and the
    statistics without tie calibration."""
    _check_leaderboard(metrics, statistic, level, average_by, gold)
    signs = {m: _orientation(m)[1] for m in metrics}
    ids = _directions_scored_by_all(release, metrics, directions)
    if not ids:
        raise MetaEvaluationError(f"release {release}: no direction where every one of {', '.join(metrics)} is scored")
    params = {"resamples": resamples, "seed": seed, "alpha": alpha, "block_size": block_size}
    options = {"replace_nans_with_zeros": replace_nans_with_zeros, "test": test, "average_by": average_by}
    pool = _LeaderboardPool(metrics)
    # at system level against the predetermined quality, each multilingual system's ids, spooled per direction
    with _multilingual_spool(release, set(ids), wanted=level == "system" and gold == PREDETERMINED) as spool:
        for code, direction_id in ids.items():
            people = people_scores(release, code, gold) if gold != PREDETERMINED else None
            found = _leaderboard_direction(
                release, code, direction_id, metrics, signs, level, statistic, params, spool, options, people
            )
            pool.add(code, *found)
    if not pool.rows:
        raise MetaEvaluationError(
            f"release {release}: fewer than three {level} scores of every metric in any direction"
        )
    return _leaderboard_board(release, statistic, level, gold, params, options, pool, spool.systems)


def _check_leaderboard(metrics: list[str], statistic: str, level: str, average_by: str, gold: str) -> None:
    """Refuses a leaderboard's statistic, gold, level or grouping it cannot rank by, or fewer than two metrics."""
    from exports.metaeval import statistics

    try:
        chosen = statistics.get_statistic(statistic)
    except ValueError as exc:
        raise MetaEvaluationError(str(exc)) from None
    if chosen.by_system:
        raise MetaEvaluationError(f"{statistic}: a statistic of EvalSets and task sets (segment scores by system)")
    if gold not in GOLDS:
        raise MetaEvaluationError(f"gold {gold!r}: choose one of {', '.join(GOLDS)}")
    if level not in LEADERBOARD_LEVELS:
        raise MetaEvaluationError(f"level {level!r}: choose one of {', '.join(LEADERBOARD_LEVELS)}")
    if average_by not in LEADERBOARD_GROUPINGS[level]:
        raise MetaEvaluationError(
            f"average_by {average_by!r} at {level} level: choose one of {', '.join(LEADERBOARD_GROUPINGS[level])}"
        )
    if len(metrics) < 2 or len(set(metrics)) != len(metrics):
        raise MetaEvaluationError("a leaderboard ranks at least two distinct metrics")


def _scored_direction_ids(release: Release, metrics: list[str], directions: list[str] | None) -> dict[str, dict]:
    """metric → (direction code → direction id) of the directions (of the visible ones) it has scores in, by code."""
    return {m: {code: pk for pk, code in _scored_directions(release, m, directions)[0]} for m in metrics}


def _directions_scored_by_all(release: Release, metrics: list[str], directions: list[str] | None) -> dict[str, int]:
    """direction code → direction id of the (visible) directions every one of ``metrics`` scored, by code."""
    per_metric = list(_scored_direction_ids(release, metrics, directions).values())
    shared = sorted(set.intersection(*(set(found) for found in per_metric))) if per_metric else []
    return {code: per_metric[0][code] for code in shared}


class _LeaderboardPool:
    """The directions' rows, their items pooled for the overall test, and the multilingual systems' means."""

    def __init__(self, metrics: list[str]) -> None:
        self.metrics = metrics
        self.rows: list[dict] = []
        self.gold: list[float] = []
        self.scores: dict[str, list[float]] = {m: [] for m in metrics}
        self.bounds: list[tuple[int, int]] = []
        self.per_system = {m: defaultdict(dict) for m in metrics}  # metric → system index → direction → mean

    def add(self, code: str, row: dict, golds, vectors, groups, means) -> None:
        """Adds one direction's row and items (``_leaderboard_direction``'s), unless it has fewer than three."""
        for m in self.metrics:
            for index, mean in (means[m] or {}).items():
                self.per_system[m][index][code] = mean
        if row["n"] < 3:
            return
        self.rows.append(row)
        self.bounds.extend((len(self.gold) + b, len(self.gold) + e) for b, e in groups)
        self.gold.extend(golds)
        for m in self.metrics:
            self.scores[m].extend(vectors[m])


def _leaderboard_board(release, statistic, level, gold, params, options, pool: _LeaderboardPool, systems) -> dict:
    """The leaderboard of the pooled directions, ranked over all and (system level) for the multilingual ``systems``."""
    from exports.metaeval import statistics

    try:
        overall = statistics.permutation_significance(
            statistic, pool.gold, pool.scores, pool.bounds, **params, **options
        )
    except ValueError as exc:
        raise MetaEvaluationError(str(exc)) from None
    label = statistics.STATISTICS[statistic]
    board = {
        "release": str(release),
        "statistic": statistic,
        "label": label.label,
        "reference": label.reference,
        "level": level,
        "average_by": options["average_by"],
        "gold": gold,
        "parameters": {**params, **overall.as_dict()["parameters"]},
        "directions": pool.rows,
        "overall": {"direction": "all", "n": len(pool.gold), "groups": len(pool.bounds), **overall.as_dict()},
    }
    if level == "system" and gold == PREDETERMINED:
        board["multilingual"] = _multilingual_group(systems, pool.per_system, pool.metrics, statistic, params, options)
    return board


def _multilingual_group(systems, per_system, metrics, statistic, params, options) -> dict | None:
    """The multilingual pseudo systems ranked as the monolingual ones are: each system's score is the plain
    average of its per-direction means (``SystemMeans.score``), its human score the predetermined one, each
    repetition a group. Systems missing a direction's scores of some metric are left out; None when fewer than
    three remain or no repetition has two."""
    from exports.metaeval import statistics

    by_repetition: dict[int, list[int]] = defaultdict(list)
    for index, (repetition, _, order) in enumerate(systems):
        if all(set(order) <= set(per_system[m][index]) for m in metrics):
            by_repetition[repetition].append(index)
    groups = _repetition_groups(by_repetition)
    gold, vectors = [], {m: [] for m in metrics}
    for members in groups:
        for index in members:
            repetition, human, order = systems[index]
            gold.append(human)
            for m in metrics:
                means = metaeval.SystemMeans(repetition, human, {d: per_system[m][index][d] for d in order})
                vectors[m].append(means.score())
    if len(gold) < 3:
        return None
    result = statistics.permutation_significance(statistic, gold, vectors, _group_bounds(groups), **params, **options)
    return {"direction": "multilingual", "n": len(gold), **result.as_dict()}


def _leaderboard_direction(
    release, code, direction_id, metrics, signs, level, statistic, params, spool, options, people=None
):
    """One direction of the leaderboard: its row (ranking, clusters, intervals at triplet level), the items it
    adds to the overall test, and each multilingual system's mean score there per metric (system level).
    ``people``: triplet id → people's score, the gold instead of the predetermined quality."""
    from exports.metaeval import statistics

    resamples, seed, alpha = params["resamples"], params["seed"], params["alpha"]
    loaded = {m: _direction_scores(release, m, direction_id, signs[m]) for m in metrics}
    means = {m: None for m in metrics}
    if level == "system":
        if people is None:
            means = {m: spool.means(code, {t: v[1] for t, v in loaded[m].items()}, 1.0) for m in metrics}
        gold, vectors, groups = _system_vectors(release, direction_id, loaded, metrics, people)
    else:
        triplets = sorted(set.intersection(*(set(v) for v in loaded.values())))
        if people is not None:
            triplets = [t for t in triplets if t in people]
        if options["average_by"] == "item":  # a gold segment's pseudo translations: "dir/segment/labels"
            triplets.sort(key=lambda t: (t.split("/", 2)[1] if t.count("/") >= 2 else t, t))
            segment = [t.split("/", 2)[1] if t.count("/") >= 2 else t for t in triplets]
            edges = [0, *(k for k in range(1, len(segment)) if segment[k] != segment[k - 1]), len(segment)]
            groups = [(b, e) for b, e in zip(edges[:-1], edges[1:]) if e > b]
        else:
            groups = [(0, len(triplets))]
        if people is not None:
            gold = [people[t] for t in triplets]
        else:
            gold = [-5.0 * loaded[metrics[0]][t][0] for t in triplets]
        vectors = {m: [loaded[m][t][1] for t in triplets] for m in metrics}
    del loaded
    if len(gold) < 3:
        return {"direction": code, "n": len(gold)}, gold, vectors, groups, means
    try:
        result = statistics.permutation_significance(statistic, gold, vectors, groups, **params, **options)
    except ValueError as exc:
        raise MetaEvaluationError(f"{code}: {exc}") from None
    row = {"direction": code, "n": len(gold), "groups": len(groups), **result.as_dict()}
    if level == "triplet" and options["average_by"] == "none" and not statistics.STATISTICS[statistic].calibrated:
        for entry in row["ranking"]:  # a bootstrap interval over the direction's triplets, per metric
            interval = statistics.bootstrap_interval(
                statistic, gold, vectors[entry["metric"]], resamples=resamples, seed=seed, alpha=alpha
            )
            entry["low"], entry["high"] = interval.low, interval.high
    return row, gold, vectors, groups, means


# ---- known-answer diagnostics: per error type, what each metric does to the injected errors -----------------

_RECORD_COLUMNS = ("triplet_id", "segment_id", "num_errors", "error_types", "spans")


@contextmanager
def _triplet_file(release: Release, code: str):
    """(a local path to, where to name in messages) the release's file of ``code``, read through the
    ``releases`` storage (``core.storage``: the file itself on the file system, a streamed copy from object
    storage)."""
    files = ReleaseFiles.for_release(release)
    rel = f"{code}/test.parquet"
    if files is None or not files.exists(rel):
        raise MetaEvaluationError(f"release {release}: no triplet file for {code}")
    with files.local_copy(rel) as path:
        yield path, files.describe(rel)


def _span_annotations(release: Release, code: str) -> list[dict]:
    """The release's people's annotations (``human/span_annotations.parquet``) of direction ``code``; [] when
    the release has none."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from exports.release.domain.release_files import SPAN_ANNOTATIONS_FILE

    files = ReleaseFiles.for_release(release)
    if files is None or not files.exists(SPAN_ANNOTATIONS_FILE):
        return []
    with files.local_copy(SPAN_ANNOTATIONS_FILE) as path:
        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as exc:
            raise MetaEvaluationError(f"{files.describe(SPAN_ANNOTATIONS_FILE)}: not readable ({exc})") from None
    return table.filter(pc.equal(table["direction"], code)).to_pylist()


def people_scores(release: Release, code: str, gold: str) -> dict[str, float]:
    """triplet id → the mean score people gave it under protocol ``gold`` (``esa``, ``mqm``), from the release."""
    if gold not in PEOPLE_GOLDS:
        raise MetaEvaluationError(f"gold {gold!r}: people's scores are one of {', '.join(PEOPLE_GOLDS)}")
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for row in _span_annotations(release, code):
        if row["protocol"] == gold and row["score"] is not None:
            entry = sums[row["triplet_id"]]
            entry[0] += row["score"]
            entry[1] += 1
    return {t: total / n for t, (total, n) in sums.items()}


def release_human_ratings(release: Release, code: str) -> dict[str, list]:
    """The release's people's annotations of ``code`` as EvalSet human ratings per protocol (raters are the
    release's pseudonyms)."""
    from exports.metaeval import evalset

    out: dict[str, list] = defaultdict(list)
    for row in _span_annotations(release, code):
        errors = [
            evalset.RatingError(s["start"], s["end"], s["severity"], s["category"] or None, None, s["side"] == "source")
            for s in row["spans"]
        ]
        out[row["protocol"]].append(evalset.HumanRating(row["triplet_id"], row["annotator"], row["score"], errors))
    return dict(sorted(out.items()))


def _release_records(release: Release, code: str) -> dict[str, tuple[str, int, list[str], list[str]]]:
    """triplet id → (segment, k, error types, candidates) from the release's own file of ``code``."""
    import json

    import pyarrow.parquet as pq

    with _triplet_file(release, code) as (path, where):
        try:
            present = set(pq.read_schema(path).names)
            missing = {"triplet_id", "segment_id", "num_errors", "error_types"} - present
            if missing:
                raise MetaEvaluationError(
                    f"{where}: no column {', '.join(sorted(missing))}: the diagnostics need the build's records"
                )
            table = pq.read_table(path, columns=[c for c in _RECORD_COLUMNS if c in present])
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError; a MetaEvaluationError too
            if isinstance(exc, MetaEvaluationError):
                raise
            raise MetaEvaluationError(f"{where}: not a readable triplet file ({exc})") from None
    spans = table.column("spans").to_pylist() if "spans" in present else [None] * table.num_rows
    records = {}
    for triplet, segment, k, types, span in zip(*(table.column(c).to_pylist() for c in _RECORD_COLUMNS[:4]), spans):
        if isinstance(span, str):  # a JSON-encoded list in hand-written files
            span = json.loads(span or "[]")
        candidates = [str(s["candidate"]) for s in span or [] if isinstance(s, dict) and s.get("candidate")]
        records[str(triplet)] = (str(segment), int(k), [str(t) for t in types or []], candidates)
    return records


def release_diagnostics(
    release: Release,
    metrics: list[str],
    *,
    directions: list[str] | None = None,
    tie_threshold: float = 0.0,
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Per metric and direction: sensitivity per error type and additivity (``exports.metaeval.diagnostics``),
    span agreement for a metric whose scores carry error spans, and a heatmap of detection rates per metric.
    One direction's records and scores are read at a time."""
    from exports.metaeval import diagnostics

    scored = _scored_direction_ids(release, metrics, directions)
    codes = sorted({code for found in scored.values() for code in found})
    if not codes:
        raise MetaEvaluationError(f"release {release}: no scores of {', '.join(metrics)}")
    ids = {code: pk for found in scored.values() for code, pk in found.items()}
    interval = {"tie_threshold": tie_threshold, "resamples": resamples, "seed": seed, "alpha": alpha}
    result = {m: {} for m in metrics}
    for code in codes:
        found = [metric for metric in metrics if code in scored[metric]]
        for metric, figures in _direction_diagnostics(release, code, ids[code], found, interval).items():
            result[metric][code] = figures
    grids = diagnostics.heatmap({m: {c: v["sensitivity"] for c, v in per.items()} for m, per in result.items()})
    return {
        "release": str(release),
        "parameters": {**interval, "interval": "percentile bootstrap"},
        "metrics": result,
        "heatmap": grids,
    }


def _direction_diagnostics(release: Release, code: str, direction_id: int, metrics: list[str], interval) -> dict:
    """metric → its sensitivity, additivity and (where its scores mark error spans) span agreement in ``code``."""
    from exports.metaeval import diagnostics

    records, injected = _release_records(release, code), None
    result = {}
    for metric in metrics:
        sign = _orientation(metric)[1]
        rows = MetricScore.objects.filter(release=release, metric=metric, direction_id=direction_id)
        translations = [
            diagnostics.Translation(t, *records[t][:1], records[t][1], records[t][2], records[t][3], sign * s)
            for t, s in rows.values_list("triplet_id", "score").iterator(chunk_size=20_000)
            if t in records
        ]
        result[metric] = {
            "sensitivity": diagnostics.sensitivity(translations, **interval),
            "additivity": diagnostics.additivity(translations),
        }
        marked = rows.filter(spans__isnull=False)
        if marked.exists():  # a metric that marks error spans (GEMBA-MQM, xCOMET)
            injected = _injected_spans(release, code) if injected is None else injected
            result[metric]["spans"] = diagnostics.span_agreement(
                diagnostics.SpanTranslation(
                    *injected[t][:2], _clip(spans, injected[t][3]), injected[t][2], injected[t][3]
                )
                for t, spans in marked.values_list("triplet_id", "spans").iterator(chunk_size=20_000)
                if t in injected
            )
    return result


def _clip(spans, length: int) -> list[tuple[int, int]]:
    # a stored span past the translation's end (a part file scored on another text) counts only its overlap
    return [(min(a, length), min(b, length)) for a, b in spans or []]


def _injected_spans(release: Release, code: str) -> dict[str, tuple[int, list[str], list[tuple[int, int]], int]]:
    """triplet id → (k, error types, injected spans as character offsets in its pseudo translation, its length),
    from the build's records in the release file of ``code`` (spans in the translation's own units)."""
    import json

    import pyarrow.parquet as pq

    from core.domain.languages import unit_of
    from exports.metaeval import diagnostics

    with _triplet_file(release, code) as (path, where):
        try:
            present = set(pq.read_schema(path).names)
            columns = [c for c in ("triplet_id", "num_errors", "error_types", "mt", "spans", "unit") if c in present]
            table = pq.read_table(path, columns=columns)
        except (OSError, ValueError) as exc:
            raise MetaEvaluationError(f"{where}: not a readable triplet file ({exc})") from None
    if not {"mt", "spans"} <= present:
        raise MetaEvaluationError(f"{where}: no column mt or spans: the span diagnostics need the build's spans")
    n = table.num_rows
    cols = {c: table.column(c).to_pylist() if c in present else [None] * n for c in columns + ["unit"]}
    default_unit = unit_of(code.rsplit("-", 1)[-1])
    out = {}
    for i, triplet in enumerate(cols["triplet_id"]):
        spans = cols["spans"][i]
        if isinstance(spans, str):  # a JSON-encoded list in hand-written files
            spans = json.loads(spans or "[]")
        mt = cols["mt"][i] or ""
        edits = [(int(s["mt_start"]), int(s["mt_end"])) for s in spans or [] if isinstance(s, dict) and "mt_start" in s]
        out[str(triplet)] = (
            int(cols["num_errors"][i]),
            [str(t) for t in cols["error_types"][i] or []],
            diagnostics.character_spans(mt, cols["unit"][i] or default_unit, edits),
            len(mt),
        )
    return out


# ---- mt-metrics-eval interoperability: the release as EvalSets -------------------------------------------

EVALSET_COLUMNS = ("triplet_id", "src", "ref", "mt", "num_errors")


def export_evalsets(
    release: Release, metrics: list[str], out_dir: str, *, directions: list[str] | None = None
) -> list[str]:
    """Write one mt-metrics-eval EvalSet per direction scored by every metric, named ``PROJECT-VERSION``, under
    ``out_dir`` (``exports.metaeval.evalset.from_triplets``: a segment per triplet, the ``triplets`` system and
    the direction's monolingual pseudo systems, seg and sys scores of each metric, and the people's ESA and MQM
    scores and ratings the release holds). One direction at a time."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from exports.metaeval import evalset

    ids = _directions_scored_by_all(release, metrics, directions)
    if not ids:
        raise MetaEvaluationError(f"release {release}: no direction scored by every one of {', '.join(metrics)}")
    name = f"{release.project.name}-{release.version}"
    written = []
    for code, direction_id in ids.items():
        with _triplet_file(release, code) as (path, where):
            try:
                table = pq.read_table(path, columns=list(EVALSET_COLUMNS)).to_pydict()
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                columns = ", ".join(EVALSET_COLUMNS)
                raise MetaEvaluationError(f"{where}: not a readable triplet file with {columns} ({exc})") from None
        triplets = [evalset.Triplet(*values) for values in zip(*(table[c] for c in EVALSET_COLUMNS))]
        del table
        scores = {
            m: dict(
                MetricScore.objects.filter(release=release, metric=m, direction_id=direction_id)
                .values_list("triplet_id", "score")
                .iterator(chunk_size=20_000)
            )
            for m in metrics
        }
        systems = [
            evalset.System(s.name.replace("/", "_"), s.human_score, s.triplet_ids)
            for _, s in _iter_systems(release, PseudoSystem.Kind.MONOLINGUAL, None, direction_id=direction_id)
        ]
        try:
            evs = evalset.from_triplets(name, code, triplets, systems, scores, release_human_ratings(release, code))
            evalset.write(evs, out_dir)
        except evalset.EvalSetError as exc:
            raise MetaEvaluationError(f"{code}: {exc}") from None
        written.append(str(Path(out_dir) / name / "system-outputs" / code))
    return written
