"""The Scorer base class declares every hook the runner calls; the runner calls them on every scorer."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import pyarrow.parquet as pq

import scoring.metrics
from scoring.registry import REGISTRY, BatchResult, Family, MetricSpec, Scorer, all_metrics
from scoring.release import open_release
from scoring.runner import META_KEY, part_path, score_direction, score_release


def _spec(name: str, build) -> MetricSpec:
    return MetricSpec(
        name=name,
        family=Family.SEQUENCE,
        needs_source=False,
        needs_reference=True,
        higher_is_better=True,
        score_range=(0.0, 1.0),
        default_model=None,
        device="cpu",
        build=build,
    )


class Bare(Scorer):
    """A metric that writes only what is its own: the score and the signature."""

    def score(self, segments):
        return BatchResult(scores=[float(s.mt == s.ref) for s in segments])

    def signature(self, target_lang: str = "") -> dict:
        return {"metric": "bare", "target_lang": target_lang}


class Recording(Bare):
    """Overrides every hook and records when the runner calls it."""

    def __init__(self):
        self.calls: list[str] = []
        self.extras: list[dict | None] = []

    def wanted_columns(self):
        self.calls.append("wanted_columns")
        return ["mt_marked"]

    def score(self, segments):
        self.calls.append("score")
        self.extras += [s.extra for s in segments]
        return super().score(segments)

    def reset_stats(self):
        self.calls.append("reset_stats")

    def stats(self):
        self.calls.append("stats")
        return {"sent": 3}

    def finalize(self, direction, columns, data=None):
        self.calls.append("finalize")
        columns["seen"] = [1] * len(columns["score"])
        return {"finalized": direction}

    def close(self):
        self.calls.append("close")


def test_a_scorer_with_only_its_score_and_signature_runs_on_the_defaults(release, tmp_path):
    opened = open_release(release)
    summary = score_direction(opened, _spec("bare", Bare), "en-de", tmp_path, scorer=Bare())
    assert summary["n"] == opened.count("en-de") > 0 and "judge" not in summary
    meta = json.loads(pq.read_metadata(part_path(tmp_path, "bare", "en-de")).metadata[META_KEY])
    assert meta["tables"] == {} and "judge" not in meta["summary"]


def test_the_runner_calls_every_hook_it_uses_on_a_scorer_that_overrides_them(release, tmp_path, monkeypatch):
    scorer = Recording()
    monkeypatch.setitem(REGISTRY, "recording", _spec("recording", lambda **_: scorer))
    (summary,) = score_release(release, ["recording"], out=tmp_path, directions=["en-de"])
    assert scorer.calls == ["wanted_columns", "reset_stats", "score", "finalize", "stats", "close"]
    assert scorer.extras[0] == {"mt_marked": scorer.extras[0]["mt_marked"]} and scorer.extras[0]["mt_marked"]
    assert summary["judge"] == {"sent": 3} and summary["finalized"] == "en-de"
    rows = open_release(release).count("en-de")
    assert pq.read_table(part_path(tmp_path, "recording", "en-de")).column("seen").to_pylist() == [1] * rows


def test_every_metric_scorer_subclasses_the_scorer_base_class():
    all_metrics()  # imports every metric module
    scorers = {}
    for info in pkgutil.iter_modules(scoring.metrics.__path__):
        module = importlib.import_module(f"scoring.metrics.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and callable(getattr(cls, "score", None)):
                scorers[name] = cls
    assert {"SacrebleuScorer", "CometScorer", "GembaMQMScorer", "AskQEScorer", "NeuralScorer"} <= set(scorers)
    assert [name for name, cls in scorers.items() if not issubclass(cls, Scorer)] == []
