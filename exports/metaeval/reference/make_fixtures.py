"""Reference fixtures: Google's mt-metrics-eval, from a checkout, run on an EvalSet the platform exported.

    python3 -m venv /tmp/mtme-venv && /tmp/mtme-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 absl-py dacite
    /tmp/mtme-venv/bin/pip install --no-deps -e /tmp/mt-metrics-eval   # a checkout of google-research/mt-metrics-eval
    .venv/bin/python -m exports.metaeval.reference.make_evalset tests/fixtures/mtme
    /tmp/mtme-venv/bin/python exports/metaeval/reference/make_fixtures.py --mtme /tmp/mt-metrics-eval \
        --root tests/fixtures/mtme > tests/fixtures/mtme/expected.json

Runs in the throwaway environment (numpy and scipy only, never the platform). The EvalSet is loaded with
mt-metrics-eval's own loader (``data.EvalSet`` with a ``meta_info.MetaInfo``), the numbers come from its own
functions; ``apache_beam`` (imported by ``data.py`` for its parallel mode only) is given an empty module.

Random procedures: permutation tests run after ``np.random.seed(SEED)`` (mt-metrics-eval draws from the legacy
global stream; the platform draws the same stream from ``RandomState(SEED)``); soft pairwise accuracy uses
``pce.py``'s own seeded generator; a bootstrap has no mt-metrics-eval function, so the resampled indices are
drawn here as the platform draws them (``default_rng(SEED).integers(0, n, (R, n))``) and mt-metrics-eval's
correlation is computed on each resample.
"""

from pathlib import Path

import numpy as np
from _mtme import arguments, correlations, emit, ranking, use_checkout

NAME, LP, GOLD, REF = "xqmeval-synthetic", "en-de", "xqm", "refA"
ALL = "triplets"
SEED, RESAMPLES, ALPHA = 7, 300, 0.05


def main() -> None:
    args = arguments().parse_args()
    use_checkout(args.mtme)
    import scipy.stats
    from mt_metrics_eval import data, meta_info, stats

    info = meta_info.MetaInfo(REF, {"seg": GOLD, "sys": GOLD}, set(), set())
    evs = data.EvalSet(
        NAME, LP, read_stored_metric_scores=True, info=info, path=str(Path(args.root).resolve()), strict=True
    )
    metrics = sorted(evs.metric_names)
    out = {"evalset": NAME, "lp": LP, "metrics": metrics, "seed": SEED, "resamples": RESAMPLES, "alpha": ALPHA}

    # Triplet level: the "triplets" system's segments (every triplet, human score -5k), average_by none.
    gold_seg = evs.Scores("seg", GOLD)[ALL]
    seg = {m: stats.Correlation(1, gold_seg, evs.Scores("seg", m)[ALL]) for m in metrics}
    out["triplet"] = {m: correlations(c) for m, c in seg.items()}
    np.random.seed(SEED)
    ranks, sig, _, _ = data.CompareMetrics(seg, scipy.stats.pearsonr, "none", k=RESAMPLES, pval=ALPHA)
    out["triplet_clusters"] = {"statistic": "pearson", **ranking(ranks, sig)}
    idx = np.random.default_rng(SEED).integers(0, len(gold_seg), size=(RESAMPLES, len(gold_seg)))
    out["triplet_bootstrap"] = {}
    for m, c in seg.items():
        g, s = np.asarray(gold_seg), np.asarray(c.metric_scores)
        values = [stats.Correlation(1, list(g[i]), list(s[i])).Pearson()[0] for i in idx]
        low, high = np.nanpercentile(values, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
        out["triplet_bootstrap"][m] = {"statistic": "pearson", "low": low, "high": high}

    # System level: every system of the EvalSet (the pseudo systems and "triplets"), sys-level files.
    systems = sorted(evs.sys_names - {REF})
    gold_sys = evs.Scores("sys", GOLD)
    sys_corr = {
        m: stats.Correlation(
            len(systems), [gold_sys[s][0] for s in systems], [evs.Scores("sys", m)[s][0] for s in systems]
        )
        for m in metrics
    }
    out["systems"] = systems
    out["system"] = {}
    for m, c in sys_corr.items():
        agree, pairs = stats.Agreement(c.gold_scores, c.metric_scores)
        out["system"][m] = {**correlations(c), "accuracy": float(agree) / pairs}
    np.random.seed(SEED)
    ranks, sig, _, _ = data.CompareMetricsWithGlobalAccuracy(
        [evs], [{REF}], [set()], False, True, GOLD, False, k=RESAMPLES, pval=ALPHA
    )
    out["system_clusters"] = {"statistic": "accuracy", **ranking(ranks, sig)}

    # Soft pairwise accuracy over the pseudo systems, their triplets paired by position (each has 20).
    pseudo = [s for s in systems if s != ALL]
    gold_rows = [[v for v in evs.Scores("seg", GOLD)[s] if v is not None] for s in pseudo]
    out["spa"] = {}
    for m in metrics:
        rows = [
            [v for v, g in zip(evs.Scores("seg", m)[s], evs.Scores("seg", GOLD)[s]) if g is not None] for s in pseudo
        ]
        flat_gold = [v for r in gold_rows for v in r]
        flat_metric = [v for r in rows for v in r]
        out["spa"][m] = stats.Correlation(len(pseudo), flat_gold, flat_metric).PairwiseConfidenceError("none")[0]
    out["spa_systems"] = pseudo
    emit(out)


if __name__ == "__main__":
    main()
