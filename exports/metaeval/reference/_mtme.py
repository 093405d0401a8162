"""What the mt-metrics-eval fixture scripts beside this module share: their command line, mt-metrics-eval
imported from a checkout, the permutation tests' rankings and the JSON they print. Runs in their throwaway
environment (never the platform); each script imports it from its own folder (``python .../make_*.py``)."""

import argparse
import json
import sys
import types
from pathlib import Path


def arguments(root_help: str = "the folder holding the exported EvalSet") -> argparse.ArgumentParser:
    """The options every script takes: the checkout of mt-metrics-eval and the EvalSet's folder."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mtme", required=True, help="a checkout of google-research/mt-metrics-eval")
    parser.add_argument("--root", required=True, help=root_help)
    return parser


def use_checkout(mtme: str) -> None:
    """mt-metrics-eval importable from ``mtme``; ``apache_beam`` (imported by ``data.py`` for its parallel mode
    only) given an empty module."""
    sys.path.insert(0, str(Path(mtme).resolve()))
    sys.modules.setdefault("apache_beam", types.ModuleType("apache_beam"))


def correlations(c) -> dict:
    """A ``stats.Correlation``'s Pearson, Spearman and Kendall (tau-b)."""
    return {"pearson": c.Pearson()[0], "spearman": c.Spearman()[0], "kendall-b": c.Kendall()[0]}


def ranking(ranks: dict, sig, values: bool = False) -> dict:
    """What a ``data.CompareMetrics*`` call returned: the metrics in rank order (with their values), their
    significance clusters and the p-value matrix."""
    out = {"order": list(ranks)}
    if values:
        out["values"] = [r[0] for r in ranks.values()]
    return {**out, "ranks": [r[1] for r in ranks.values()], "p_values": sig.tolist()}


def emit(out: dict) -> None:
    json.dump(out, sys.stdout, indent=1, default=float)
    print()
