"""The metric registry: each metric is an entry with data (what it needs, which way is better, its range,
its default model) and a factory that builds a batch scorer. No if-chains on metric names elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


class Family:
    SEQUENCE = "sequence"  # string overlap (BLEU, chrF, TER)
    REGRESSION = "regression"  # trained on human scores with a reference (COMET, BLEURT, MetricX)
    QE = "QE"  # reference-free quality estimation (COMETKiwi, MetricX-QE)
    LLM = "LLM"  # generative judges


class MetricError(Exception):
    """A metric cannot run: unknown name, missing model, bad option. The message says how to fix it."""


@dataclass(frozen=True)
class Segment:
    """What a metric may look at for one triplet; a metric reads only the fields its spec needs."""

    src: str
    mt: str
    ref: str
    target_lang: str = ""
    source_lang: str = ""
    extra: dict | None = None  # optional release columns a metric asked for (AskQE's back-translation)


@dataclass
class BatchResult:
    scores: list[float]
    # Per segment extra outputs (xCOMET error spans, OmniScore's dimensions); same length as scores.
    extras: dict[str, list[Any]] = field(default_factory=dict)


class Scorer:
    """What the runner (``scoring.runner``) asks of a metric's batch scorer, and nothing else: every metric's
    scorer subclasses this. ``score`` and ``signature`` are each metric's own; the other hooks have defaults
    that do nothing, so a metric overrides only what it needs (LLM judges: the call accounting and ``close``;
    AskQE, CEF: ``wanted_columns`` and ``finalize``). The runner calls every hook on every scorer."""

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        """One score per segment, in order (``None`` only for an LLM judge's unanswered segment)."""
        raise NotImplementedError

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        """Everything that decides the numbers for ``target_lang`` (library, model, revision, tokenizer, …):
        a part whose stored signature differs is scored again."""
        raise NotImplementedError

    def wanted_columns(self) -> list[str]:
        """Optional release columns to load beside src/mt/ref (they reach ``Segment.extra``); default none."""
        return []

    def reset_stats(self) -> None:
        """Start a direction's accounting afresh (called before each direction is scored); default nothing."""

    def stats(self) -> dict[str, Any] | None:
        """The direction's accounting (an LLM judge's calls, tokens, cost), stored as the summary's ``judge``;
        default None: nothing to report, and the summary has no ``judge`` entry."""
        return None

    def finalize(self, direction_code: str, columns: dict[str, list], data=None) -> dict[str, Any]:
        """Once per direction on all its rows; may add columns in place; returns extra metadata for the
        part (stored in the parquet metadata and summary.json). ``tables`` in it become side files.
        Default: nothing added."""
        return {}

    def close(self) -> None:
        """Release what the scorer holds (an LLM judge's connections and cache) after each direction of a run;
        it must stay usable for the next one. Default nothing."""


@dataclass(frozen=True)
class MetricSpec:
    name: str
    family: str
    needs_source: bool
    needs_reference: bool
    higher_is_better: bool
    score_range: tuple[float | None, float | None]
    default_model: str | None
    device: str  # "cpu": runs on any worker; "gpu": only GPU workers take it
    build: Callable[..., Scorer]
    description: str = ""
    # What the published tables report (SPEC §8: COMET family and BLEURT ×100).
    report_scale: float = 1.0
    # The scorer's own options, set with ``--option KEY=VALUE`` (``route_options`` sends each to the metrics that
    # take it; a name no metric of the run takes is an error, so a misspelt option is never silently ignored).
    takes: tuple[str, ...] = ()
    # Switches the platform's scores page offers for this metric: option name -> what turning it on does.
    # A switched-on option reaches the scorer as ``name=True`` (as ``--option name=true`` on the command line).
    options: dict[str, str] = field(default_factory=dict)
    # A step over every direction of a run, once all are scored (AskQE's pooled GMM decision): called by the
    # runner with a signature's options and direction -> the scores of its part (the parts scored with that
    # signature); returns direction -> (columns to set, summary entries to set). None: per direction only.
    finalize_run: Callable[..., dict[str, tuple[dict, dict]]] | None = None
    # part columns besides the score that ``finalize_run`` reads (direction -> column -> values), where present
    finalize_reads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not set(self.options) <= set(self.takes):
            raise ValueError(
                f"metric {self.name!r}: switches {sorted(set(self.options) - set(self.takes))} are not options it takes"
            )

    @property
    def better(self) -> str:
        """Which way is better: "higher" or "lower" (not ``direction``, which names a language pair)."""
        return "higher" if self.higher_is_better else "lower"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "needs": [n for n, on in (("source", self.needs_source), ("reference", self.needs_reference)) if on],
            "better": self.better,
            "range": list(self.score_range),
            "default_model": self.default_model,
            "device": self.device,
            "report_scale": self.report_scale,
            "description": self.description,
            "options": dict(self.options),
            "takes": list(self.takes),
        }


REGISTRY: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    key = spec.name.lower()
    if key in REGISTRY:
        raise ValueError(f"metric {spec.name!r} registered twice")
    REGISTRY[key] = spec
    return spec


# What the metrics of one kind share; ``register_judge`` and ``register_model_metric`` take the rest from the scorer
# and the metric's own fields, which win over these.
JUDGE_FIELDS = {
    "family": Family.LLM,
    "needs_source": True,
    "needs_reference": False,
    "higher_is_better": True,
    "default_model": None,  # the judge's model is a run setting
    "device": "judge",
}
MODEL_FIELDS = {
    "family": Family.REGRESSION,
    "needs_source": False,
    "needs_reference": True,
    "higher_is_better": True,
    "device": "gpu",
}


def register_judge(scorer: type[Scorer], **fields: Any) -> MetricSpec:
    """Register an LLM judge (a ``scoring.judges.base.JudgeScorer``): named as its scorer, built from the run's
    options alone, taking its scorer's options; ``fields`` give the rest (score_range, description, …)."""
    own = {"name": scorer.name, "build": lambda **kw: scorer(**kw), "takes": tuple(scorer.options)}
    return register(MetricSpec(**{**JUDGE_FIELDS, **own, **fields}))


def register_model_metric(scorer: type[Scorer], default_model: str, **fields: Any) -> MetricSpec:
    """Register a metric of one trained model (a ``scoring.metrics.neural.NeuralScorer``): named as its scorer,
    on a GPU worker, built on ``default_model`` unless the run names a model; ``fields`` give the rest
    (score_range, description, …; ``build`` where the default model is found only when built)."""

    def build(model=None, **kw):
        return scorer(model or default_model, **kw)

    own = {"name": scorer.metric, "default_model": default_model, "build": build}
    return register(MetricSpec(**{**MODEL_FIELDS, **own, **fields}))


def get_metric(name: str) -> MetricSpec:
    _load_builtin()
    try:
        return REGISTRY[name.strip().lower()]
    except KeyError:
        raise MetricError(f"unknown metric {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def all_metrics() -> list[MetricSpec]:
    _load_builtin()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def parse_metric_list(text: str) -> list[MetricSpec]:
    names = [n for n in (p.strip() for p in text.split(",")) if n]
    if not names:
        raise MetricError("no metric named; give e.g. --metrics chrf++,spbleu")
    return [get_metric(n) for n in names]


# What scoring.runner.ScoreOptions.for_metric gives every metric, whether its scorer uses it or not: not options.
RUN_SETTINGS = frozenset({"batch_size", "device", "model", "spm_model", "dtype", "trust_remote_code"})


def refuse_unknown_options(metric: str, given, takes=None) -> None:
    """A scorer built directly (a run routes options already, ``route_options``) with keywords it would ignore:
    a MetricError naming them (and ``takes``, what it does take, where given), so none is dropped without a word."""
    unknown = set(given) - RUN_SETTINGS - set(takes or ())
    if unknown:
        told = "" if takes is None else f"; it takes {', '.join(sorted(takes)) or 'none'}"
        raise MetricError(f"{metric}: unknown option(s) {', '.join(sorted(unknown))}{told}")


def route_options(specs: Sequence[MetricSpec], extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Send a run's ``--option`` values to its metrics: ``KEY=VALUE`` to every metric of the run that takes KEY,
    ``METRIC:KEY=VALUE`` to that metric alone. A KEY that no metric of the run takes, a METRIC that is not in the
    run, or a METRIC that does not take KEY is an error naming what each metric takes. Returns metric name ->
    its options (every metric of the run has an entry)."""
    routed: dict[str, dict[str, Any]] = {spec.name: {} for spec in specs}
    by_name = {spec.name.lower(): spec for spec in specs}

    def takes() -> str:
        return "; ".join(f"{spec.name}: {', '.join(spec.takes) or 'none'}" for spec in specs)

    for key, value in extra.items():
        metric, sep, option = key.rpartition(":")
        if sep:
            spec = by_name.get(metric.strip().lower())
            if spec is None:
                raise MetricError(
                    f"option {key!r}: {metric!r} is not a metric of this run ({', '.join(s.name for s in specs)})"
                )
            if option not in spec.takes:
                raise MetricError(f"option {key!r}: {spec.name} does not take {option!r} (options taken: {takes()})")
            routed[spec.name][option] = value
            continue
        takers = [spec for spec in specs if key in spec.takes]
        if not takers:
            raise MetricError(f"option {key!r}: no metric of this run takes it (options taken: {takes()})")
        for spec in takers:
            routed[spec.name].setdefault(key, value)  # a METRIC:KEY given for one metric wins over the plain KEY
    return routed


_loaded = False


def _load_builtin() -> None:
    # Importing the modules registers their metrics; neural libraries are imported lazily inside the
    # factories, so listing metrics costs nothing on a worker without them.
    global _loaded
    if _loaded:
        return
    from scoring.metrics import askqe, bertscore, bleurt, cef, comet, dcr, gemba, metricx, omniscore, sbert, strings  # noqa: F401  # noqa: F401  (LLM judges; no network until scoring)

    _loaded = True  # only once every module imported: a failed import fails every call, not just the first
