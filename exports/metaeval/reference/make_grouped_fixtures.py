"""Reference fixtures for grouping (``average_by``), tie calibration and the pairs permutation test: Google's
mt-metrics-eval, from a checkout, run on the EvalSet ``make_grouped_evalset`` wrote.

    python3.11 -m venv /tmp/mtme-venv && /tmp/mtme-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 absl-py dacite
    git -C /work/.mirror/google-research+mt-metrics-eval/repo archive HEAD | tar -x -C /tmp/mt-metrics-eval
    .venv/bin/python -m exports.metaeval.reference.make_grouped_evalset tests/fixtures/mtme-grouped
    /tmp/mtme-venv/bin/python exports/metaeval/reference/make_grouped_fixtures.py --mtme /tmp/mt-metrics-eval \
        --root tests/fixtures/mtme-grouped > tests/fixtures/mtme-grouped/expected.json

Runs in the throwaway environment (numpy and scipy only, never the platform), on the same Python minor version
as the platform (the calibration's running mean starts from Python's ``sum``, whose rounding changed in 3.12).
The EvalSet is read with ``data.EvalSet``; the ``stats.Correlation`` objects are built here over the systems in
sorted order, human outputs left out (``data.GetCorrelations`` builds them over a ``set`` of names, whose order
changes from run to run, and the permutation tests' draws follow that order). Every figure comes from
mt-metrics-eval's own functions: ``Correlation.Pearson``/``Spearman``/``Kendall``/``KendallVariants``/
``KendallWithTiesOpt`` with ``average_by``, and ``data.CompareMetrics`` after ``np.random.seed(SEED)``.
"""

from pathlib import Path

import numpy as np
from _mtme import arguments, emit, ranking, use_checkout

NAME, LP, GOLD, REF = "xqmeval-grouped", "en-de", "mqm", "refA"
SEED, RESAMPLES, ALPHA = 11, 200, 0.05


def main() -> None:
    args = arguments("the folder holding the EvalSet").parse_args()
    use_checkout(args.mtme)
    import scipy.stats
    from mt_metrics_eval import data, meta_info, stats

    info = meta_info.MetaInfo(REF, {"seg": GOLD, "sys": GOLD}, set(), set())
    evs = data.EvalSet(
        NAME, LP, read_stored_metric_scores=True, info=info, path=str(Path(args.root).resolve()), strict=True
    )
    systems = sorted(evs.sys_names - evs.human_sys_names)
    metrics = sorted(evs.metric_names)
    gold = evs.Scores("seg", GOLD)
    flat_gold = [v for s in systems for v in gold[s]]
    corrs = {
        m: stats.Correlation(len(systems), flat_gold, [v for s in systems for v in evs.Scores("seg", m)[s]])
        for m in metrics
    }
    out = {
        "evalset": NAME,
        "lp": LP,
        "gold": GOLD,
        "systems": systems,
        "metrics": metrics,
        "seed": SEED,
        "resamples": RESAMPLES,
        "alpha": ALPHA,
        "values": {},
        "calibration": {},
        "compare": [],
    }
    for average_by in ("none", "item", "sys"):
        for replace in (False, True):
            key = f"{average_by}/{'zeros' if replace else 'drop'}"
            out["values"][key] = {}
            for m, c in corrs.items():
                row = {}
                for name, fcn, kw in (
                    ("pearson", scipy.stats.pearsonr, {}),
                    ("spearman", scipy.stats.spearmanr, {}),
                    ("kendall-b", scipy.stats.kendalltau, {}),
                    ("acc23", stats.KendallVariants, {"variant": "acc23"}),
                ):
                    row[name] = c.AverageCorrelation(fcn, average_by, replace_nans_with_zeros=replace, **kw)(
                        c.gold_scores, c.metric_scores
                    )[0]
                out["values"][key][m] = row
        out["calibration"][average_by] = {}
        for m, c in corrs.items():
            row = {}
            for variant in ("acc23", "23"):
                value, epsilon, _ = stats.KendallWithTiesOpt(
                    c.gold_scores, c.metric_scores, variant, c.num_sys, average_by, sample_rate=1.0
                )
                row[variant] = {"value": value, "epsilon": epsilon}
            out["calibration"][average_by][m] = row

    def compare(statistic, fcn, average_by, perm_test="scores", replace=False, block_size=1000, **kw):
        np.random.seed(SEED)
        ranks, sig, _, _ = data.CompareMetrics(
            corrs,
            fcn,
            average_by,
            k=RESAMPLES,
            psd=stats.PermutationSigDiffParams(block_size=block_size),
            pval=ALPHA,
            replace_nans_with_zeros=replace,
            perm_test=perm_test,
            **kw,
        )
        out["compare"].append(
            {
                "statistic": statistic,
                "average_by": average_by,
                "perm_test": perm_test,
                "replace_nans_with_zeros": replace,
                "block_size": block_size,
                **ranking(ranks, sig, values=True),
            }
        )

    compare("pearson", scipy.stats.pearsonr, "item")
    compare("pearson", scipy.stats.pearsonr, "item", replace=True)
    compare("pearson", scipy.stats.pearsonr, "sys")
    compare("kendall-b", scipy.stats.kendalltau, "item")
    compare("kendall-b", scipy.stats.kendalltau, "none")
    compare("acc23", stats.KendallVariants, "item", variant="acc23")
    compare("acc23", stats.KendallVariants, "sys", variant="acc23")
    wto = stats.KendallWithTiesOpt
    compare("acc23-tc", wto, "item", perm_test="pairs", variant="acc23", sample_rate=1.0)
    compare("acc23-tc", wto, "item", perm_test="pairs", block_size=50, variant="acc23", sample_rate=1.0)
    compare("tau23-tc", wto, "sys", perm_test="pairs", variant="23", sample_rate=1.0)
    compare("acc23-tc", wto, "none", perm_test="pairs", variant="acc23", sample_rate=1.0)

    # PCE (system level from segment scores) over the segments every system has a human score for: the
    # reference drops unrated entries and then reshapes by system, which pairs segments up only when none is
    # missing.
    complete = [k for k in range(len(gold[systems[0]])) if all(gold[s][k] is not None for s in systems)]
    pce_corrs = {
        m: stats.Correlation(
            len(systems),
            [gold[s][k] for s in systems for k in complete],
            [evs.Scores("seg", m)[s][k] for s in systems for k in complete],
        )
        for m in metrics
    }
    out["pce_segments"] = complete
    out["pce"] = {m: c.PairwiseConfidenceError()[0] for m, c in pce_corrs.items()}
    np.random.seed(SEED)
    ranks, sig, _, _ = data.CompareMetricsWithPairwiseConfidenceError(pce_corrs, k=RESAMPLES, pval=ALPHA)
    out["pce_compare"] = ranking(ranks, sig, values=True)
    emit(out)


if __name__ == "__main__":
    main()
