"""Round-trip fixtures: Google's mt-metrics-eval, from a checkout, loading the people's scores and error spans
(ESA, MQM) of an EvalSet the platform exported, and computing its correlations against them.

    python3 -m venv /tmp/mtme-venv && /tmp/mtme-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 absl-py dacite
    /tmp/mtme-venv/bin/pip install --no-deps -e /tmp/mt-metrics-eval   # a checkout of google-research/mt-metrics-eval
    .venv/bin/python -m exports.metaeval.reference.make_esa_evalset tests/fixtures/mtme-esa
    PYTHONHASHSEED=0 /tmp/mtme-venv/bin/python exports/metaeval/reference/make_esa_fixtures.py \
        --mtme /tmp/mt-metrics-eval --root tests/fixtures/mtme-esa > tests/fixtures/mtme-esa/expected.json

(``PYTHONHASHSEED=0``: ``EvalSet.Correlation`` flattens the systems in the order of a set of their names, so the
last bit of a correlation follows the hash seed; the tests allow 1e-12.)

Runs in the throwaway environment (never the platform). The EvalSet is loaded with ``data.EvalSet(...,
read_stored_ratings=True)``; ratings come back through ``ratings.ReadRatingFile`` as ``ratings.Rating`` objects
(dacite checks every field's type). What it writes:

- the rating names, the ``triplets`` system's ratings and rater ids in full, and per system a sha256 of its
  ratings as canonical JSON (``ToDict``, keys sorted);
- per MQM rating of the ``triplets`` system, the penalty of its errors under ``converters/score_mqm.py``'s
  ``Score`` with the weights minor 1, major 5, critical 25;
- with ESA and with MQM as the gold: segment-level Pearson, Spearman and Kendall (``average_by='none'``, every
  system's segments flattened, segments without a human score dropped) and system-level Pearson, Spearman,
  Kendall and pairwise accuracy of each metric; the segment-level Pearson permutation clusters
  (``CompareMetrics`` after ``np.random.seed(SEED)``) on the flattened scores, systems in sorted order.
"""

import hashlib
import json
from pathlib import Path

import numpy as np
from _mtme import arguments, correlations, emit, ranking, use_checkout

NAME, LP, REF = "xqmeval-esa", "en-de", "refA"
ALL = "triplets"
GOLDS = ("esa", "mqm")
MQM_WEIGHTS = {"minor": 1.0, "major": 5.0, "critical": 25.0}
SEED, RESAMPLES, ALPHA = 7, 300, 0.05


def canonical(ratings) -> str:
    return json.dumps([None if r is None else r.ToDict() for r in ratings], sort_keys=True)


def main() -> None:
    args = arguments().parse_args()
    use_checkout(args.mtme)
    import scipy.stats
    from mt_metrics_eval import data, meta_info, stats
    from mt_metrics_eval.converters import score_mqm

    info = meta_info.MetaInfo(REF, {"seg": "esa", "sys": "esa"}, set(), set())
    evs = data.EvalSet(
        NAME,
        LP,
        read_stored_metric_scores=True,
        info=info,
        path=str(Path(args.root).resolve()),
        strict=True,
        read_stored_ratings=True,
    )
    metrics = sorted(evs.metric_names)
    systems = sorted(evs.sys_names - {REF})
    out = {"evalset": NAME, "lp": LP, "metrics": metrics, "systems": systems}
    out.update(seed=SEED, resamples=RESAMPLES, alpha=ALPHA)

    names = sorted(evs.human_rating_names)
    out["rating_names"] = names
    out["ratings"] = {n: [None if r is None else r.ToDict() for r in evs.Ratings(n)[ALL]] for n in names}
    out["rater_ids"] = {n: evs.RaterIdsPerSeg(n)[ALL] for n in names}
    out["ratings_sha256"] = {
        n: {s: hashlib.sha256(canonical(evs.Ratings(n)[s]).encode()).hexdigest() for s in sorted(evs.Ratings(n))}
        for n in names
    }
    out["mqm_penalties"] = {
        n: [
            None if r is None else sum(score_mqm.Score(MQM_WEIGHTS, [e.severity]) for e in r.errors)
            for r in evs.Ratings(n)[ALL]
        ]
        for n in names
        if n.split(".")[0] == "mqm"
    }

    for gold in GOLDS:
        result = out[gold] = {"segment": {}, "system": {}}
        gold_seg = evs.Scores("seg", gold)
        for m in metrics:
            c = evs.Correlation(gold_seg, evs.Scores("seg", m), systems)
            result["segment"][m] = {**correlations(c), "n": len(c.gold_scores) - c.none_count}
            c = evs.Correlation(evs.Scores("sys", gold), evs.Scores("sys", m), systems)
            pairs_kept = [(g, s) for g, s in zip(c.gold_scores, c.metric_scores) if g is not None]
            agree, pairs = stats.Agreement([g for g, _ in pairs_kept], [s for _, s in pairs_kept])
            result["system"][m] = {**correlations(c), "accuracy": float(agree) / pairs}
        keep = [(s, i) for s in systems for i, v in enumerate(gold_seg[s]) if v is not None]
        flat = {
            m: stats.Correlation(1, [gold_seg[s][i] for s, i in keep], [evs.Scores("seg", m)[s][i] for s, i in keep])
            for m in metrics
        }
        np.random.seed(SEED)
        ranks, sig, _, _ = data.CompareMetrics(flat, scipy.stats.pearsonr, "none", k=RESAMPLES, pval=ALPHA)
        result["segment_clusters"] = {"statistic": "pearson", **ranking(ranks, sig)}
    emit(out)


if __name__ == "__main__":
    main()
