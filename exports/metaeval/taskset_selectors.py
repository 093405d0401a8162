"""A WMT task set on a scored release: each direction a language pair, its gold segments the items and a segment's
pseudo translations the systems (``exports.metaeval.tasksets`` computes); the table cached for the pages, computed
by a worker (``exports.metaeval_taskset``).

A release has no human translations as systems and no references among the metrics' names, so a task's ``human``
and reference filter change nothing; every metric asked for is primary. A triplet id is ``direction/segment/labels``.
The seg-level task groups by item: every pseudo translation of a segment is one of its systems (``#j``: the j-th by
number of errors k, then id; a segment with fewer versions than the most has no human score in the missing places,
which the grouping drops), gold score −5·k. The sys-level task (PCE, which pairs the systems segment by segment)
has a system per level, ``k=0…k=K``: each segment's first version (by id) with k errors, over the segments that
have a version at every level."""

from __future__ import annotations

import hashlib
from collections import defaultdict

from exports.metaeval import tasksets
from exports.metaeval.selectors import MetaEvaluationError, _orientation, _scored_directions
from exports.models import MetricScore, Release, ScoreSummary
from exports.scores.selectors import scores_digest

INLINE_SCORES = 5_000  # without a worker, a page computes the table itself up to this many scores (the pairs
# test costs k × Σ n² coins over groups of n versions: a real release has segments of 100+ versions)
TASKSET_CACHE_SECONDS = 30 * 24 * 3600
TASKSET_PENDING_SECONDS = 3600
PAGE_TASK_SET, PAGE_K = "wmt24", 1000


def scored_metrics(release: Release) -> list[str]:
    """Every metric with scores on the release, by name."""
    return sorted(set(ScoreSummary.objects.filter(release=release).values_list("metric", flat=True)))


def direction_scores(
    release: Release, metrics: list[str], direction_ids: dict[str, int], code: str
) -> tuple[tasksets.Scores, tasksets.Scores]:
    """The direction's matrices over the triplets every metric scored: for the seg-level task, systems ``#1…#N``
    (a segment's versions by number of errors, then id) × its gold segments; for the sys-level task, systems
    ``k=0…k=K`` (a segment's first version with k errors) × the segments that have a version at every level."""
    loaded = []
    for metric in metrics:
        sign = _orientation(metric)[1]
        rows = MetricScore.objects.filter(
            release=release, metric=metric, direction_id=direction_ids[metric], level__isnull=False
        )
        loaded.append(
            {
                t: (level, sign * s)
                for t, level, s in rows.values_list("triplet_id", "level", "score").iterator(chunk_size=20_000)
            }
        )
    shared = set(loaded[0]).intersection(*loaded[1:])
    segments: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for triplet in shared:
        segments[triplet.split("/")[1] if triplet.count("/") >= 2 else triplet].append((loaded[0][triplet][0], triplet))
    if len(segments) < 2:
        raise MetaEvaluationError(f"{code}: fewer than two gold segments scored by every one of {', '.join(metrics)}")
    order = sorted(segments)
    versions = [sorted(segments[s]) for s in order]
    width = max(len(v) for v in versions)
    gold = [[None if j >= len(v) else -5.0 * v[j][0] for v in versions] for j in range(width)]
    matrices = {
        metric: [[0.0 if j >= len(v) else scores[v[j][1]][1] for v in versions] for j in range(width)]
        for metric, scores in zip(metrics, loaded)
    }
    seg = tasksets.Scores([f"#{j + 1}" for j in range(width)], gold, matrices)
    levels = sorted({k for v in versions for k, _ in v})
    first = [{k: t for k, t in reversed(v)} for v in versions]  # each level's first version by id
    complete = [f for f in first if len(f) == len(levels)]
    if len(complete) < 2 or len(levels) < 2:
        raise MetaEvaluationError(
            f"{code}: fewer than two gold segments with a pseudo translation at every level "
            f"({', '.join(map(str, levels))}): PCE pairs the systems segment by segment"
        )
    by_level = tasksets.Scores(
        [f"k={k}" for k in levels],
        [[-5.0 * k] * len(complete) for k in levels],
        {m: [[scores[f[k]][1] for f in complete] for k in levels] for m, scores in zip(metrics, loaded)},
    )
    return seg, by_level


def release_task_set(
    release: Release,
    metrics: list[str],
    task_set: str = "wmt24",
    *,
    k: int = 1000,
    seed: int = 0,
    directions: list[str] | None = None,
) -> dict:
    """The task set's tables on the directions every metric scored (of ``directions``, the visible ones), as
    ``TaskSetResult.as_dict``; one direction's scores held at a time."""
    if len(metrics) < 2:
        raise MetaEvaluationError("a task set compares at least two metrics")
    found = [{code: pk for pk, code in _scored_directions(release, m, directions)[0]} for m in metrics]
    codes = sorted(set.intersection(*(set(f) for f in found)))
    if not codes:
        raise MetaEvaluationError(f"release {release}: no direction scored by every one of {', '.join(metrics)}")
    try:
        definition = tasksets.get_task_set(task_set, codes, k=k, gold=None)
    except tasksets.TaskSetError as exc:
        raise MetaEvaluationError(str(exc)) from None
    cache: dict[str, tuple[tasksets.Scores, tasksets.Scores]] = {}

    def scores_of(task: tasksets.Task) -> tasksets.Scores:
        if task.lang not in cache:
            cache.clear()  # the tasks come direction by direction: hold one
            cache[task.lang] = direction_scores(
                release, metrics, {m: f[task.lang] for m, f in zip(metrics, found)}, task.lang
            )
        seg, by_level = cache[task.lang]
        return by_level if task.level == "sys" else seg

    try:
        result = tasksets.run(definition, scores_of, seed=seed, source=str(release))
    except (tasksets.TaskSetError, ValueError) as exc:
        raise MetaEvaluationError(str(exc)) from None
    return result.as_dict()


def taskset_key(release: Release, metrics: list[str], task_set: str, k: int, directions: list[str] | None) -> str:
    """Keyed by every metric's scores (a new ingest, a new key), the task set, k and the visible directions."""
    digests = ",".join(f"{m}:{n}:{last}" for m in metrics for n, last in [scores_digest(release, m)])
    scope = "all" if directions is None else ",".join(sorted(directions))
    h = hashlib.sha256(f"{digests}|{scope}".encode()).hexdigest()[:24]
    return f"metaeval:taskset:v1:{release.pk}:{task_set}:{k}:{h}"


def scores_count(release: Release, metrics: list[str], directions: list[str] | None) -> int:
    """How many scores the table reads (the ingest's summaries, not the scores)."""
    from django.db.models import Sum

    rows = ScoreSummary.objects.filter(release=release, metric__in=metrics)
    if directions is not None:
        rows = rows.filter(direction__code__in=directions)
    return int(rows.aggregate(n=Sum("n"))["n"] or 0)


def cached_task_set(release: Release, metrics: list[str], directions: list[str] | None) -> dict | None:
    from django.core.cache import cache

    return cache.get(taskset_key(release, metrics, PAGE_TASK_SET, PAGE_K, directions))


def compute_task_set(release: Release, metrics: list[str], directions: list[str] | None) -> dict:
    """The page's WMT24 table (k = 1000) into the cache (``{"error": …}`` when it cannot be computed)."""
    from django.core.cache import cache

    key = taskset_key(release, metrics, PAGE_TASK_SET, PAGE_K, directions)
    try:
        result = release_task_set(release, metrics, PAGE_TASK_SET, k=PAGE_K, directions=directions)
    except MetaEvaluationError as exc:
        result = {"error": str(exc)}
    cache.set(key, result, timeout=TASKSET_CACHE_SECONDS)
    cache.delete(f"{key}:pending")
    return result
