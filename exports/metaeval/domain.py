"""Meta-evaluation of metrics against predetermined human scores (SPEC §9). Pure Python (no Django).

- Kendall τ between metric and human scores, with the variant always named: ``b`` and ``c`` (scipy), and
  ``23`` / ``acc23`` of Deutsch, Foster & Freitag (2023, "Ties Matter"), optionally with tie calibration
  (the metric-difference threshold ε under which two metric scores count as tied is chosen to maximise
  the statistic, exactly as Google's mt-metrics-eval ``KendallWithTiesOpt`` over every pair; ``acc23-tc``
  is the WMT23 segment-level statistic). A missing score (None/NaN) drops its item's pairs.
- Cross-lingual coefficient of variation per level (sample or population std, stated).
- LGN: language-specific global normalisation, ``z = (score − μ_dir) / σ_dir`` with μ, σ pooled over all
  levels of a direction.
- Paired t-test over repetitions (LGN vs plain averaging).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

TAU_VARIANTS = ("b", "c", "23", "acc23")
# What the meta-evaluation page and the `metaeval` command offer: the plain variants and the two *23 variants
# with tie calibration ("-tc"). acc23-tc is the WMT23 segment-level statistic (Deutsch et al. 2023).
TAU_STATISTICS = TAU_VARIANTS + ("23-tc", "acc23-tc")
STATISTIC_LABELS = {
    "b": "τ_b",
    "c": "τ_c",
    "23": "τ_23",
    "acc23": "acc23",
    "23-tc": "τ_23, tie-calibrated",
    "acc23-tc": "acc23, tie-calibrated (WMT23 segment level)",
}


def parse_statistic(name: str) -> tuple[str, bool]:
    """``"acc23-tc"`` → ``("acc23", True)``; a plain variant → ``(variant, False)``."""
    if name not in TAU_STATISTICS:
        raise ValueError(f"unknown τ statistic {name!r}; choose one of {', '.join(TAU_STATISTICS)}")
    return (name[:-3], True) if name.endswith("-tc") else (name, False)


@dataclass(frozen=True)
class TauResult:
    value: float
    variant: str
    n: int  # items with both scores (pairs with a missing score are dropped)
    epsilon: float | None = None  # the tie threshold chosen by calibration, when used

    def describe(self) -> str:
        cal = f", tie-calibrated ε={self.epsilon:.6g}" if self.epsilon is not None else ""
        return f"Kendall τ_{self.variant}={self.value:.4f} (n={self.n}{cal})"


def _pair_counts(metric: np.ndarray, human: np.ndarray) -> tuple[int, int, int, int, int]:
    """Counts over all pairs i<j: concordant, discordant, tied in human only, tied in metric only, tied in both;
    in O(n log n) (``statistics.kendall_counts``), not by enumerating the pairs."""
    from exports.metaeval.statistics import kendall_counts

    return kendall_counts(human, metric)


def _tau_23(counts: tuple[int, int, int, int, int]) -> float:
    c, d, th, tm, tb = counts
    total = c + d + th + tm + tb
    return (c + tb - d - th - tm) / total if total else float("nan")


def _acc_23(counts: tuple[int, int, int, int, int]) -> float:
    c, d, th, tm, tb = counts
    total = c + d + th + tm + tb
    return (c + tb) / total if total else float("nan")


def _as_scores(values: Sequence[float | None], what: str) -> np.ndarray:
    try:
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} scores must be numbers or None") from None


def tie_calibration(metric: np.ndarray, human: np.ndarray) -> tuple[int, float]:
    """Exact tie calibration (Deutsch, Foster & Freitag 2023, §5; mt-metrics-eval ``tau_optimization``
    over every pair): the threshold ε, among 0 and every absolute pairwise metric difference, that maximises
    acc23 when a pair with |Δmetric| ≤ ε counts as a metric tie. Returns (pairs counted correct, ε); among
    equal counts the smallest ε wins, as the reference's argmax over ascending thresholds does.

    At threshold ε a pair is correct when it is concordant with |Δm| > ε, or tied in the human scores
    with |Δm| ≤ ε:  correct(ε) = C − #{concordant: |Δm| ≤ ε} + #{human-tied: |Δm| ≤ ε}.  It rises only at
    the |Δm| of human-tied pairs, so the smallest maximiser is 0 or one of those; both sorted lists are
    counted there with binary search. O(n² log n) time, memory for the two lists of differences.
    τ_23 = 2·acc23 − 1 on the same pairs (every pair that is not correct counts −1), so the same ε
    maximises both."""
    n = len(metric)
    tied_parts, concordant_parts = [], []
    rows_per_block = max(1, 2_000_000 // max(n, 1))
    cols = np.arange(n)
    for start in range(0, n - 1, rows_per_block):
        rows = np.arange(start, min(n - 1, start + rows_per_block))
        upper = cols[None, :] > rows[:, None]
        dm = metric[None, :] - metric[rows, None]
        dh = human[None, :] - human[rows, None]
        tied_parts.append(np.abs(dm[upper & (dh == 0)]))
        concordant_parts.append(np.abs(dm[upper & (dm * dh > 0)]))
    tied = np.sort(np.concatenate(tied_parts))
    concordant = np.sort(np.concatenate(concordant_parts))
    candidates = np.r_[0.0, tied]
    candidates = candidates[np.r_[True, candidates[1:] != candidates[:-1]]]  # distinct, still ascending
    gained = np.searchsorted(tied, candidates, side="right")
    lost = np.searchsorted(concordant, candidates, side="right")
    best = int(np.argmax(gained - lost))  # first maximum: the smallest ε
    return len(concordant) + int(gained[best] - lost[best]), float(candidates[best])


def kendall_tau(
    metric: Sequence[float | None], human: Sequence[float | None], variant: str = "b", *, calibrate_ties: bool = False
) -> TauResult:
    """Kendall τ of metric scores against human scores. Orient scores so that higher is better first
    (negate a lower-is-better metric such as MetricX). A missing score (None or NaN) on either side drops
    that item, and so every pair it is in, for every variant (mt-metrics-eval drops them too)."""
    if variant not in TAU_VARIANTS:
        raise ValueError(f"unknown τ variant {variant!r}; choose one of {', '.join(TAU_VARIANTS)}")
    m, h = _as_scores(metric, "metric"), _as_scores(human, "human")
    if m.shape != h.shape or m.ndim != 1:
        raise ValueError(f"metric and human scores must be 1-D of equal length, got {m.shape} and {h.shape}")
    present = ~(np.isnan(m) | np.isnan(h))
    m, h = m[present], h[present]
    if len(m) < 2:
        raise ValueError(f"Kendall τ needs at least two items with both scores, got {len(m)}")
    if variant in ("b", "c"):
        if calibrate_ties:
            raise ValueError("tie calibration applies to τ_23 and acc23 only")
        from scipy import stats  # on first use: importing scipy.stats costs ~1 s of every process's start

        value = stats.kendalltau(m, h, variant=variant).statistic
        return TauResult(float(value), variant, len(m))
    if not calibrate_ties:
        score = _tau_23 if variant == "23" else _acc_23
        return TauResult(float(score(_pair_counts(m, h))), variant, len(m))
    pairs = len(m) * (len(m) - 1) // 2
    correct, epsilon = tie_calibration(m, h)
    value = correct / pairs if variant == "acc23" else (2 * correct - pairs) / pairs
    return TauResult(float(value), variant, len(m), epsilon=epsilon)


def tau_statistic(metric: Sequence[float | None], human: Sequence[float | None], statistic: str = "b") -> TauResult:
    """One of TAU_STATISTICS: a plain variant, or ``23-tc`` / ``acc23-tc`` (tie-calibrated)."""
    variant, calibrate = parse_statistic(statistic)
    return kendall_tau(metric, human, variant, calibrate_ties=calibrate)


def coefficient_of_variation(scores: Sequence[float], *, sample: bool = True) -> float:
    """std / mean of the directions' system scores at one level; ``sample`` chooses ddof=1 (else 0).
    Uses |mean| so a negative-valued metric gives a positive dispersion."""
    x = np.asarray(scores, dtype=float)
    if len(x) < (2 if sample else 1):
        raise ValueError("need at least two scores for a sample standard deviation")
    mean = float(np.mean(x))
    if mean == 0:
        return float("nan")
    return float(np.std(x, ddof=1 if sample else 0) / abs(mean))


def cross_lingual_cv(system_scores: Mapping[str, Mapping[int, float]], *, sample: bool = True) -> dict[int, float]:
    """``{direction: {level: monolingual system score}}`` → ``{level: CV across directions}``."""
    levels = sorted({level for per_level in system_scores.values() for level in per_level})
    result = {}
    for level in levels:
        values = [per_level[level] for per_level in system_scores.values() if level in per_level]
        result[level] = coefficient_of_variation(values, sample=sample)
    return result


@dataclass(frozen=True)
class Normaliser:
    mean: float
    std: float

    def __call__(self, score: float | np.ndarray):
        return (np.asarray(score, dtype=float) - self.mean) / self.std


def lgn_normalisers(triplet_scores: Mapping[str, Sequence[float]]) -> dict[str, Normaliser]:
    """Per direction: μ and σ (population) of its triplet scores pooled over all levels 0–5.

    Callers pass the pooled sample (102 triplets per level, repeated and averaged as SPEC §9 says) or all
    triplets of the direction."""
    result = {}
    for direction_code, scores in triplet_scores.items():
        x = np.asarray(scores, dtype=float)
        std = float(np.std(x))
        if len(x) < 2 or std == 0:
            raise ValueError(f"{direction_code}: LGN needs at least two distinct scores")
        result[direction_code] = Normaliser(float(np.mean(x)), std)
    return result


def average_over_directions(
    per_direction: Mapping[str, float], normalisers: Mapping[str, Normaliser] | None = None
) -> float:
    """XQ-MEval Algorithm 1: a multilingual system's score is the mean of its per-direction scores, each
    optionally LGN-normalised first."""
    if not per_direction:
        raise ValueError("no directions to average")
    values = [float(normalisers[d](s)) if normalisers else float(s) for d, s in per_direction.items()]
    return float(np.mean(values))


@dataclass(frozen=True)
class PairedTest:
    statistic: float
    pvalue: float
    mean_difference: float
    n: int


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> PairedTest:
    """Paired t-test of ``a`` against ``b`` over repetitions (e.g. τ with LGN vs τ with plain averaging)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or len(x) < 2:
        raise ValueError("paired samples of equal length ≥ 2 are required")
    from scipy import stats

    result = stats.ttest_rel(x, y)
    return PairedTest(float(result.statistic), float(result.pvalue), float(np.mean(x - y)), len(x))


# ---- pseudo systems: system-level τ, LGN from the sampled triplets, the multilingual study ------------


@dataclass(frozen=True)
class SystemSample:
    """A pseudo system as the meta-evaluation sees it (``exports.models.PseudoSystem`` without Django)."""

    name: str
    repetition: int
    human_score: float
    triplet_ids: Sequence[str]
    direction_code: str | None = None  # monolingual systems
    level: int | None = None


def direction_of(triplet_id: str) -> str:
    """Release triplet ids start with their direction: ``en-de/54/Addition.head``."""
    return triplet_id.split("/", 1)[0]


def _scores_of(system: SystemSample, scores: Mapping[str, float]) -> dict[str, list[float]]:
    by_direction: dict[str, list[float]] = {}
    for triplet in system.triplet_ids:
        try:
            value = scores[triplet]
        except KeyError:
            raise ValueError(f"system {system.name}: triplet {triplet} has no score") from None
        by_direction.setdefault(direction_of(triplet), []).append(value)
    return by_direction


def system_score(
    system: SystemSample, scores: Mapping[str, float], normalisers: Mapping[str, Normaliser] | None = None
) -> float:
    """Mean of the system's triplet scores per direction, then averaged over directions (Algorithm 1);
    with ``normalisers`` each direction's mean is LGN-normalised first (z is linear, so this equals
    normalising every triplet)."""
    per_direction = {d: float(np.mean(v)) for d, v in _scores_of(system, scores).items()}
    return average_over_directions(per_direction, normalisers)


def monolingual_system_tau(
    systems: Sequence[SystemSample], scores: Mapping[str, float], variant: str = "b"
) -> dict[str, float]:
    """Per direction: τ between metric and human scores over its monolingual systems (one per level),
    computed per repetition and averaged over repetitions."""
    groups: dict[tuple[str, int], list[SystemSample]] = {}
    for system in systems:
        groups.setdefault((system.direction_code or "", system.repetition), []).append(system)
    per_direction: dict[str, list[float]] = {}
    for (direction, _), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        metric = [system_score(s, scores) for s in members]
        human = [s.human_score for s in members]
        per_direction.setdefault(direction, []).append(tau_statistic(metric, human, variant).value)
    return {d: float(np.mean(v)) for d, v in per_direction.items()}


def lgn_from_systems(systems: Sequence[SystemSample], scores: Mapping[str, float]) -> dict[str, Normaliser]:
    """SPEC §9: per direction, μ and σ of the triplet scores pooled over all levels of one repetition of the
    monolingual sampling (102 per level), averaged over the repetitions."""
    pooled: dict[tuple[str, int], list[float]] = {}
    for system in systems:
        for direction_code, values in _scores_of(system, scores).items():
            pooled.setdefault((direction_code, system.repetition), []).extend(values)
    per_direction: dict[str, list[Normaliser]] = {}
    for (direction_code, _), values in sorted(pooled.items()):
        per_direction.setdefault(direction_code, []).append(lgn_normalisers({direction_code: values})[direction_code])
    return {
        d: Normaliser(float(np.mean([n.mean for n in ns])), float(np.mean([n.std for n in ns])))
        for d, ns in per_direction.items()
    }


@dataclass(frozen=True)
class MultilingualStudy:
    variant: str
    repetitions: int
    tau_plain: float  # mean over repetitions
    tau_lgn: float
    test: (
        PairedTest | None
    )  # LGN vs plain averaging, paired over repetitions; None: < 2 repetitions or constant difference


@dataclass(frozen=True)
class SystemMeans:
    """What the multilingual study needs of one system: its per-direction mean scores (in the order its
    triplets name the directions, the order Algorithm 1 averages them in) and its human score. A few
    numbers, so the systems can be read one at a time instead of held with their triplet ids."""

    repetition: int
    human_score: float
    per_direction: dict[str, float]

    def score(self, normalisers: Mapping[str, Normaliser] | None = None) -> float:
        return average_over_directions(self.per_direction, normalisers)  # = system_score, same operations


def system_means(system: SystemSample, scores: Mapping[str, float]) -> SystemMeans:
    per_direction = {d: float(np.mean(v)) for d, v in _scores_of(system, scores).items()}
    return SystemMeans(system.repetition, system.human_score, per_direction)


def multilingual_study(
    systems: Sequence[SystemSample],
    scores: Mapping[str, float],
    normalisers: Mapping[str, Normaliser],
    variant: str = "b",
) -> MultilingualStudy:
    """XQ-MEval §5: per repetition, τ over the multilingual systems of predetermined quality, with plain
    averaging over directions and with LGN; the mean of each over repetitions and a paired t-test."""
    return multilingual_study_of_means([system_means(s, scores) for s in systems], normalisers, variant)


def multilingual_study_of_means(
    systems: Sequence[SystemMeans], normalisers: Mapping[str, Normaliser], variant: str = "b"
) -> MultilingualStudy:
    """``multilingual_study`` from each system's per-direction means (``system_means``), the same numbers."""
    by_repetition: dict[int, list[SystemMeans]] = {}
    for system in systems:
        by_repetition.setdefault(system.repetition, []).append(system)
    plain, lgn = [], []
    for _, members in sorted(by_repetition.items()):
        if len(members) < 2:
            continue
        human = [s.human_score for s in members]
        plain.append(tau_statistic([s.score() for s in members], human, variant).value)
        lgn.append(tau_statistic([s.score(normalisers) for s in members], human, variant).value)
    if not plain:
        raise ValueError("no repetition with at least two multilingual systems")
    # The t-test needs differences that vary; a constant difference (e.g. LGN better by the same margin in
    # every repetition) has no variance and is reported as such by the caller.
    differences = np.asarray(lgn) - np.asarray(plain)
    test = paired_t_test(lgn, plain) if len(plain) >= 2 and np.std(differences) > 0 else None
    return MultilingualStudy(variant, len(plain), float(np.mean(plain)), float(np.mean(lgn)), test)
