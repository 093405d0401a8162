"""The EvalSet of three language pairs that the task-set fixtures are computed on, written by the platform's own
exporter (``exports.metaeval.evalset.write``); deterministic.

    .venv/bin/python -m exports.metaeval.reference.make_taskset_evalset OUT_ROOT [SYSTEMS SEGMENTS METRICS]

The language pairs are WMT24's (en-de, en-es, ja-zh), so that ``tasks.WMT24`` builds its tasks with its own
attributes: en-de has two references with refB the standard one and refA a human output that WMT24 includes
(``lps_with_multiple_refs``); en-es has two references with refA the standard one, so its refB output is a human
system that WMT24 leaves out; ja-zh has one. Human scores are MQM-like (0, -1, -5, ... so ties abound), two segments
per pair have none (``None`` for every system) and one system of each pair has no human score at all (it drops
out); metric scores are rounded to 0.1 (ties in the metric too). The metric ``base-refA`` of en-de uses the
non-standard reference and so leaves the en-de tasks; ``qe-src`` is reference-free (``[noref]``) and ``extra`` is not
primary. With the three optional numbers it writes a larger set of the same shape (``perf/tasksets.py``)."""

from __future__ import annotations

import sys

import numpy as np

from exports.metaeval import evalset

NAME, GOLD = "xqmeval-tasksets", "mqm"
LPS = {"en-de": ("refB", ["refA", "refB"]), "en-es": ("refA", ["refA", "refB"]), "ja-zh": ("refA", ["refA"])}
METRIC_NOISE = {"good": 0.8, "fair": 2.5, "poor": 8.0, "qe": 4.0, "extra": 4.0}
PRIMARY = sorted(m for m in METRIC_NOISE if m != "extra")  # extra: not primary, left out by primary=True
MQM_PENALTIES = np.array([0.0, 0.0, 0.0, -1.0, -1.0, -2.0, -5.0, -6.0, -10.0, -25.0])


def _lp(lp: str, rng: np.random.Generator, systems: int, segments: int, metrics: dict[str, float]) -> evalset.EvalSet:
    std_ref, refs = LPS[lp]
    names = [f"sys{i:02d}" for i in range(systems)]
    human_outputs = [r for r in refs if r != std_ref]  # a reference's text as a system output
    unrated = names[-1]  # no human score anywhere: GetCorrelations drops it
    quality = {s: rng.uniform(0.0, 0.6) for s in names + human_outputs}
    for h in human_outputs:
        quality[h] = 0.05  # a human translation is among the best
    unscored_segments = {2, segments // 2 + 1}  # no human score for any system
    human: dict[str, list[float | None]] = {}
    for system, q in quality.items():
        errors = rng.choice(len(MQM_PENALTIES), size=segments, p=_mix(q))
        human[system] = [
            None if system == unrated or i in unscored_segments else float(MQM_PENALTIES[e])
            for i, e in enumerate(errors)
        ]
    truth = {s: [0.0 if v is None else v for v in human[s]] for s in human}
    scores: dict[tuple[str, str], dict[str, list[float]]] = {}
    for metric, noise in metrics.items():
        ref = "src" if metric == "qe" else std_ref
        key = f"{metric}-{ref}" if metric != "qe" else "qe-src"
        seg = {s: [round(float(2.0 * t + rng.normal(0, noise)), 1) for t in truth[s]] for s in truth}
        scores[(key, "seg")] = seg
        scores[(key, "sys")] = {s: [round(float(np.mean(v)), 6)] for s, v in seg.items()}
    if lp == "en-de":  # a metric computed with the non-standard reference: not in the en-de tasks
        seg = {s: [round(float(2.0 * t + rng.normal(0, 2.0)), 1) for t in truth[s]] for s in truth}
        scores[("base-refA", "seg")] = seg
        scores[("base-refA", "sys")] = {s: [round(float(np.mean(v)), 6)] for s, v in seg.items()}
    sys_human = {
        s: [None if all(v is None for v in h) else float(np.mean([v for v in h if v is not None]))]
        for s, h in human.items()
    }
    sources = [f"{lp} source {i}" for i in range(segments)]
    references = {r: [f"{lp} {r} {i}" for i in range(segments)] for r in refs}
    outputs = {s: [f"{lp} {s} {i}" for i in range(segments)] for s in names}
    for h in human_outputs:
        outputs[h] = references[h]
    documents = [("news", f"doc{i // 6}") for i in range(segments)]
    return evalset.EvalSet(
        NAME, lp, sources, references, outputs, documents, {(GOLD, "seg"): human, (GOLD, "sys"): sys_human}, scores
    )


def _mix(q: float) -> np.ndarray:
    # more weight on the larger penalties as the quality q falls
    weights = np.exp(-np.arange(len(MQM_PENALTIES)) * (1.0 - q))
    return weights / weights.sum()


def build(systems: int = 7, segments: int = 40, metrics: int = 0) -> list[evalset.EvalSet]:
    rng = np.random.default_rng(20261132)
    noise = dict(METRIC_NOISE)
    for i in range(max(0, metrics - len(noise))):  # the benchmark's extra metrics, of spread quality
        noise[f"m{i:02d}"] = 1.0 + 0.4 * i
    return [_lp(lp, rng, systems, segments, noise) for lp in LPS]


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[2:5]]
    for evs in build(*sizes):
        print(evalset.write(evs, sys.argv[1]))
