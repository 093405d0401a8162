"""Reference fixture of a whole task set: mt-metrics-eval's own ``tasks.WMT24(...).Run()``, from a checkout, on the
EvalSet of ``make_taskset_evalset`` (three language pairs).

    python3 -m venv /tmp/mtme-venv && /tmp/mtme-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 absl-py dacite
    /tmp/mtme-venv/bin/pip install --no-deps -e /tmp/mt-metrics-eval   # a checkout of google-research/mt-metrics-eval
    .venv/bin/python -m exports.metaeval.reference.make_taskset_evalset tests/fixtures/mtme
    PYTHONHASHSEED=0 /tmp/mtme-venv/bin/python exports/metaeval/reference/make_taskset_fixtures.py \
        --mtme /tmp/mt-metrics-eval --root tests/fixtures/mtme > tests/fixtures/mtme/taskset_wmt24.json

Runs in the throwaway environment (numpy and scipy only, never the platform). Each language pair is loaded with
mt-metrics-eval's loader (``data.EvalSet`` with a ``meta_info.MetaInfo`` whose standard reference is WMT24's for
that pair) and handed to ``TaskSet.Run`` as ``eval_set_dict[('wmt24', lp)]``, so every task keeps the attributes
``tasks.WMT24`` gives it. ``apache_beam`` (imported by ``data.py`` for its parallel mode only) is given an empty
module.

Randomness: the permutation tests draw from numpy's legacy global stream, seeded once before the run
(``np.random.seed(SEED)``), task after task; the platform draws the same stream from one ``RandomState(SEED)``. The
order in which a task flattens the systems is the iteration order of a Python set of their names
(``EvalSet.Correlation``), which depends on the string hash seed: PYTHONHASHSEED=0 fixes it, and the order each
language pair used is recorded (``system_order``, read back by a wrapper around ``EvalSet.Correlation`` that
iterates the set exactly as the original does) so that the platform can flatten in the same order.

With ``--root`` on a larger EvalSet of the same shape the same script is the mt-metrics-eval half of
``perf/tasksets.py``."""

import time
from pathlib import Path

import numpy as np
from _mtme import arguments, emit, use_checkout

NAME, GOLD = "xqmeval-tasksets", "mqm"
STD_REFS = {"en-de": "refB", "en-es": "refA", "ja-zh": "refA"}
PRIMARY = {"fair", "good", "poor", "qe"}
SEED, K = 11, 200


def main() -> None:
    parser = arguments()
    parser.add_argument("--k", type=int, default=K, help="permutation resamples of every task")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--primary", default=",".join(sorted(PRIMARY)), help="primary metrics' base names")
    args = parser.parse_args()
    use_checkout(args.mtme)
    from mt_metrics_eval import data, meta_info, tasks

    order: dict[str, list[str]] = {}
    original = data.EvalSet.Correlation

    def recording(self, gold_scores, metric_scores, sys_names=None, indexes=None):
        # the same set built the same way iterates in the same order as the one the original builds
        names = set(gold_scores if sys_names is None else sys_names)
        order.setdefault(self.lp, [s for s in names])
        return original(self, gold_scores, metric_scores, sys_names, indexes)

    data.EvalSet.Correlation = recording
    primary = set(args.primary.split(","))
    evalsets = {}
    for lp, ref in STD_REFS.items():
        info = meta_info.MetaInfo(ref, {"seg": GOLD, "sys": GOLD}, set(), primary, None)
        evs = data.EvalSet(NAME, lp, True, info=info, path=str(Path(args.root).resolve()), strict=True)
        evalsets[("wmt24", lp)] = evs
    taskset, weights = tasks.WMT24(sorted(STD_REFS), k=args.k)
    np.random.seed(args.seed)
    started, cpu = time.perf_counter(), time.process_time()
    results = taskset.Run(eval_set_dict=evalsets)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    out = {
        "evalset": NAME,
        "seed": args.seed,
        "k": args.k,
        "primary": sorted(primary),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "system_order": order,
        "weights": weights,
        "tasks": [
            {
                "name": r.name,
                "attributes": r.attr_vals,
                "range": list(r.range),
                "corr_ranks": {m: [float(c), int(rank)] for m, (c, rank) in r.corr_ranks.items()},
                "p_values": np.asarray(r.matrix).tolist(),
            }
            for r in results
        ],
        "average_ranks": results.AverageRanks(weights),
        "average_corrs": results.AverageCorrs(weights),
    }
    emit(out)


if __name__ == "__main__":
    main()
