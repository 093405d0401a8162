"""Agreement statistics (SPEC §5). Pure Python + numpy; imports no Django.

Public API
----------
- ``percent_agreement(units)`` — mean share of agreeing rater pairs per unit.
- ``cohen_kappa(a, b, weights=None|"linear"|"quadratic", labels=None)`` — two raters.
- ``fleiss_kappa(units, categories=None, unequal="error"|"modal")`` — many raters, equal count per unit.
- ``krippendorff_alpha(reliability_data, level="nominal"|"ordinal"|"interval"|"ratio", value_domain=None)``
  — through the ``krippendorff`` package; missing values allowed. ``krippendorff_alpha_units(units, …)``:
  the same from each unit's ratings, in memory linear in the ratings (no raters × units matrix).
- ``uniform_null_variance(scale_points)``, ``rwg(ratings, scale_points)``, ``rwg_j(item_ratings, scale_points)``
  — James, Demaree & Wolf (1984) with the uniform null and truncation.
- ``round_alignment(first, second)`` and ``alignment_counts(first, second)`` — round-to-round stability.
- ``fleiss_table(units, ...)`` — the units × categories count table Fleiss' κ is computed from.
- Confidence intervals, each returning an ``Interval(estimate, low, high, confidence, resamples, defined)``
  (seeded percentile bootstrap over units; keyword arguments ``resamples=1000, confidence=0.95, seed=0``):
  ``percent_agreement_ci``, ``cohen_kappa_ci``, ``fleiss_kappa_ci``, ``krippendorff_alpha_ci`` (and
  ``krippendorff_alpha_units_ci``), ``rwg_ci``
  and ``rwg_j_ci`` (over raters), ``mean_rwg_ci`` and ``mean_rwg_j_ci`` (over items),
  ``round_alignment_ci``; ``bootstrap_ci(units, statistic, ...)`` for any other statistic.
- Helpers: ``mean_defined(values)``, ``resample_counts(n, resamples, seed)``,
  ``alpha_from_coincidences(o, values, level)``, ``pairwise(labels)``.

Conventions
-----------
- A missing rating is ``None`` (or NaN); it is dropped, never imputed.
- Every statistic returns ``None`` when it is *undefined* (too few ratings, or no variation where the
  statistic divides by it). ``None`` is never silently turned into 0 or 1.
- Units are what gets rated (a candidate in a round, a Likert item); ``units`` arguments are sequences
  of per-unit rating lists, ``reliability_data`` is raters × units (Krippendorff's layout).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import combinations
from typing import Literal, TypeVar

import numpy as np

Label = Hashable
Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval", "ratio"]
T = TypeVar("T")

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


def _present(value: object) -> bool:
    # NaN is the one value unequal to itself; this is the hot path of every statistic.
    return value is not None and value == value


def _clean(ratings: Sequence[object]) -> list:
    return [r for r in ratings if _present(r)]


# ---- percent agreement --------------------------------------------------------------------------


def percent_agreement(units: Sequence[Sequence[Label | None]]) -> float | None:
    """Observed agreement: for each unit with at least two ratings, the share of rater pairs that gave
    the same label; the mean over those units (Fleiss' P̄). With two raters per unit this is the share of
    units on which they agree. ``None`` when no unit has two ratings."""
    shares = []
    for unit in units:
        ratings = _clean(unit)
        n = len(ratings)
        if n < 2:
            continue
        same = sum(c * (c - 1) for c in Counter(ratings).values())
        shares.append(same / (n * (n - 1)))
    if not shares:
        return None
    return float(sum(shares) / len(shares))


# ---- Cohen's kappa ------------------------------------------------------------------------------


def _disagreement_weights(k: int, weights: Weights) -> np.ndarray:
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")


def cohen_kappa(
    a: Sequence[Label | None], b: Sequence[Label | None], weights: Weights = None, labels: Sequence[Label] | None = None
) -> float | None:
    """Cohen's κ between two raters over the same units (``a[i]`` and ``b[i]`` rate unit ``i``).

    Units where either rating is missing are dropped. ``weights`` None is the unweighted κ; ``"linear"``
    and ``"quadratic"`` weight a disagreement by the distance of the two labels' positions in ``labels``
    (default: the sorted labels that occur), as scikit-learn does, so pass the full ordered scale (e.g.
    ``[1, 2, 3, 4, 5]``) for Likert ratings. ``None`` when undefined: no pairs, or chance-expected
    disagreement of zero (both raters used one and the same label throughout)."""
    if len(a) != len(b):
        raise ValueError(f"the two raters rate {len(a)} and {len(b)} units; they must rate the same units")
    pairs = [(x, y) for x, y in zip(a, b) if _present(x) and _present(y)]
    if not pairs:
        return None
    if labels is None:
        labels = sorted({x for pair in pairs for x in pair}, key=_sort_key)
    index = {label: i for i, label in enumerate(labels)}
    unknown = {x for pair in pairs for x in pair if x not in index}
    if unknown:
        raise ValueError(f"labels {sorted(map(repr, unknown))} are not in the given label set {list(labels)!r}")
    k = len(labels)
    observed = np.zeros((k, k))
    for x, y in pairs:
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    w = _disagreement_weights(k, weights)
    expected_disagreement = float((w * expected).sum())
    if expected_disagreement <= 1e-15:
        return None
    return float(1.0 - (w * observed).sum() / expected_disagreement)


def _sort_key(x: object) -> tuple:
    # Numbers in numeric order, everything else by its text, numbers first.
    return (0, x, "") if isinstance(x, (int, float)) and not isinstance(x, bool) else (1, 0, str(x))


# ---- Fleiss' kappa ------------------------------------------------------------------------------


def fleiss_table(
    units: Sequence[Sequence[Label | None]],
    categories: Sequence[Label] | None = None,
    unequal: Literal["error", "modal"] = "error",
) -> tuple[np.ndarray, list[Label]]:
    """Units × categories count table for Fleiss' κ, after dropping missing ratings and units with fewer
    than two ratings. Fleiss' κ assumes the same number of ratings per unit (SPEC §5): with
    ``unequal="error"`` a different count raises ``ValueError`` naming the unit; with ``"modal"`` only the
    units with the most common count are kept (ties: the larger count)."""
    cleaned = [(i, _clean(u)) for i, u in enumerate(units)]
    cleaned = [(i, u) for i, u in cleaned if len(u) >= 2]
    if not cleaned:
        return np.zeros((0, 0)), list(categories or [])
    counts = Counter(len(u) for _, u in cleaned)
    if len(counts) > 1:
        if unequal == "error":
            expected = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
            bad, ratings = next((i, u) for i, u in cleaned if len(u) != expected)
            raise ValueError(
                f"Fleiss' kappa needs the same number of ratings per unit: unit {bad} has {len(ratings)}, "
                f"most units have {expected} (pass unequal='modal' to keep only units with the most common count)"
            )
        if unequal != "modal":
            raise ValueError(f"unequal must be 'error' or 'modal', not {unequal!r}")
        keep = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        cleaned = [(i, u) for i, u in cleaned if len(u) == keep]
    if categories is None:
        categories = sorted({x for _, u in cleaned for x in u}, key=_sort_key)
    index = {c: j for j, c in enumerate(categories)}
    table = np.zeros((len(cleaned), len(categories)))
    for row, (_, u) in enumerate(cleaned):
        for x in u:
            if x not in index:
                raise ValueError(f"label {x!r} is not in the given categories {list(categories)!r}")
            table[row, index[x]] += 1
    return table, list(categories)


def fleiss_kappa(
    units: Sequence[Sequence[Label | None]],
    categories: Sequence[Label] | None = None,
    unequal: Literal["error", "modal"] = "error",
) -> float | None:
    """Fleiss' κ (1971) for units each rated by the same number of (not necessarily the same) raters.

    See ``fleiss_table`` for missing ratings and unequal counts. ``None`` when undefined: no unit with two
    ratings, or chance agreement of 1 (a single category used throughout)."""
    table, _ = fleiss_table(units, categories, unequal)
    if table.size == 0:
        return None
    n = table.sum(axis=1)[0]
    p_item = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    p_bar = float(p_item.mean())
    p_cat = table.sum(axis=0) / table.sum()
    p_e = float((p_cat * p_cat).sum())
    if 1.0 - p_e <= 1e-15:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


# ---- Krippendorff's alpha ------------------------------------------------------------------------


def _unit_counts(
    units: Sequence[Sequence[object]], level: Level, value_domain: Sequence[object] | None
) -> tuple[np.ndarray, np.ndarray, list]:
    """(value counts of the pairable units, units × values; the values as numbers; the domain) of each
    unit's ratings: what α and its interval are computed from (who gave a rating does not enter α)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    cleaned = [[x for x in u if x is not None and x == x] for u in units]  # _present, inlined: the hot loop
    if level == "nominal":
        domain = (
            list(value_domain) if value_domain is not None else sorted({x for u in cleaned for x in u}, key=_sort_key)
        )
        key = lambda x: x  # noqa: E731
        values = np.arange(len(domain), dtype=float)
    else:
        try:
            cleaned = [[float(x) for x in u] for u in cleaned]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the {level} level needs numeric ratings: {exc}") from None
        domain = (
            sorted({float(v) for v in value_domain})
            if value_domain is not None
            else sorted({x for u in cleaned for x in u})
        )
        key = float
        values = np.array(domain, dtype=float)
    index = {v: i for i, v in enumerate(domain)}
    outside = next((x for u in cleaned for x in u if key(x) not in index), None)  # in any unit, as with the matrix
    if outside is not None:
        raise ValueError(f"value {outside!r} is not in value_domain {domain!r}")
    pairable = [u for u in cleaned if len(u) >= 2]
    counts = np.zeros((len(pairable), len(domain)))
    for row, unit in enumerate(pairable):
        for x in unit:
            counts[row, index[key(x)]] += 1
    return counts, values, domain


def krippendorff_alpha_units(
    units: Sequence[Sequence[object]], level: Level = "nominal", value_domain: Sequence[object] | None = None
) -> float | None:
    """``krippendorff_alpha`` from each unit's ratings (a list per unit, ``None``/NaN allowed) instead of the
    raters × units matrix: the same value, in memory linear in the ratings. The matrix costs raters × units
    cells: over every language of a 200-language campaign, 600 reviewers × 400,000 units each."""
    counts, values, _domain = _unit_counts(units, level, value_domain)
    return _alpha_of_counts(counts, values, level)


def _alpha_of_counts(counts: np.ndarray, values: np.ndarray, level: Level) -> float | None:
    if int((counts.sum(axis=0) > 0).sum()) < 2:
        return None  # fewer than two distinct values among pairable ratings: no variation
    import krippendorff

    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(krippendorff.alpha(value_counts=counts, value_domain=values, level_of_measurement=level))
    return None if math.isnan(value) else value


def krippendorff_alpha(
    reliability_data: Sequence[Sequence[object]], level: Level = "nominal", value_domain: Sequence[object] | None = None
) -> float | None:
    """Krippendorff's α = 1 − D_o/D_e over the coincidence matrix, via the ``krippendorff`` package.

    ``reliability_data`` is raters × units with ``None``/NaN for missing. Labels may be any hashables for
    the nominal level (they are coded internally); ordinal, interval and ratio need numbers, and
    ``value_domain`` gives the ordered scale (e.g. ``range(1, 6)``; default: the values that occur).
    Units with fewer than two ratings are not pairable and do not count. ``None`` when undefined: no
    pairable unit, or no variation among pairable values (D_e = 0) — never 1.0."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    rows = [list(r) for r in reliability_data]
    if not rows:
        return None
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError(
            "reliability_data must be rectangular: every rater row covers the same units (None for missing)"
        )
    pairable: list[object] = []
    for u in range(width):
        column = [r[u] for r in rows if _present(r[u])]
        if len(column) >= 2:
            pairable.extend(column)
    if len(set(pairable)) < 2:
        return None
    if level == "nominal":
        domain = (
            list(value_domain)
            if value_domain is not None
            else sorted({*pairable, *(x for r in rows for x in r if _present(x))}, key=_sort_key)
        )
        code = {v: float(i) for i, v in enumerate(domain)}
        missing = [x for r in rows for x in r if _present(x) and x not in code]
        if missing:
            raise ValueError(f"value {missing[0]!r} is not in value_domain {domain!r}")
        data = np.array([[code[x] if _present(x) else np.nan for x in r] for r in rows], dtype=float)
        domain_arr = np.arange(len(domain), dtype=float)
    else:
        try:
            data = np.array([[float(x) if _present(x) else np.nan for x in r] for r in rows], dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the {level} level needs numeric ratings: {exc}") from None
        observed = sorted({float(x) for x in data.ravel() if not math.isnan(x)})
        domain_arr = np.array(
            sorted({float(v) for v in value_domain}) if value_domain is not None else observed, dtype=float
        )
        outside = [v for v in observed if v not in set(domain_arr.tolist())]
        if outside:
            raise ValueError(f"value {outside[0]!r} is not in value_domain {domain_arr.tolist()!r}")
    import krippendorff  # the field's reference implementation (Castro); imported here to keep import cheap

    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(krippendorff.alpha(reliability_data=data, value_domain=domain_arr, level_of_measurement=level))
    if math.isnan(value):
        return None
    return value


# ---- rwg and rwg(j) (James, Demaree & Wolf 1984) -------------------------------------------------


def uniform_null_variance(scale_points: int) -> float:
    """σ²_EU = (A² − 1)/12, the variance of a uniform ("no agreement") response over an A-point scale."""
    if scale_points < 2:
        raise ValueError(f"a rating scale needs at least 2 points, not {scale_points}")
    return (scale_points * scale_points - 1) / 12.0


def _sample_variance(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return sum((x - mean) ** 2 for x in values) / (len(values) - 1)


def _check_scale(values: Sequence[float], scale_points: int) -> None:
    for x in values:
        if not 1 <= x <= scale_points:
            raise ValueError(f"rating {x!r} is outside the 1–{scale_points} scale")


def rwg(ratings: Sequence[float | None], scale_points: int) -> float | None:
    """Within-group agreement on one item rated by K raters on an A-point scale (SPEC §5):
    ``s² = Σ(x − x̄)²/(K − 1)``, ``rwg = 1 − s²/σ²_EU``, truncated to 0 when ``s² > σ²_EU``.

    Missing ratings are dropped; ``None`` with fewer than two ratings. Identical ratings give 1."""
    values = [float(x) for x in _clean(ratings)]
    _check_scale(values, scale_points)
    if len(values) < 2:
        return None
    s2 = _sample_variance(values)
    null = uniform_null_variance(scale_points)
    if s2 > null:
        return 0.0
    return 1.0 - s2 / null


def rwg_j(item_ratings: Sequence[Sequence[float | None]], scale_points: int) -> float | None:
    """rwg(j) over J parallel items (e.g. the four OmniScore dimensions of one rated text), each rated by
    the same raters: with the mean item variance s̄² and σ²_EU,
    ``rwg(j) = J(1 − s̄²/σ²_EU) / (J(1 − s̄²/σ²_EU) + s̄²/σ²_EU)``, reported as 0 when ``s̄² ≥ σ²_EU``.

    ``item_ratings[j]`` are the ratings of item j. Missing ratings are dropped per item; items with fewer
    than two ratings are left out (J counts the items kept). ``None`` when no item is left. It assumes the
    J items measure one construct: over different dimensions it is a composite."""
    variances = []
    for ratings in item_ratings:
        values = [float(x) for x in _clean(ratings)]
        _check_scale(values, scale_points)
        if len(values) >= 2:
            variances.append(_sample_variance(values))
    if not variances:
        return None
    j = len(variances)
    ratio = (sum(variances) / j) / uniform_null_variance(scale_points)
    if ratio >= 1.0:
        return 0.0
    return j * (1.0 - ratio) / (j * (1.0 - ratio) + ratio)


# ---- round alignment -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Alignment:
    items: int  # items decided in both rounds
    same: int  # of which with the same decision

    @property
    def share(self) -> float | None:
        return self.same / self.items if self.items else None


def alignment_counts(first: Mapping[Hashable, Label | None], second: Mapping[Hashable, Label | None]) -> Alignment:
    common = [k for k in first if k in second and _present(first[k]) and _present(second[k])]
    return Alignment(items=len(common), same=sum(1 for k in common if first[k] == second[k]))


def round_alignment(first: Mapping[Hashable, Label | None], second: Mapping[Hashable, Label | None]) -> float | None:
    """Share of the items decided in both rounds whose decision is the same (SPEC §5); ``None`` when no
    item was decided in both."""
    return alignment_counts(first, second).share


# ---- bootstrap confidence intervals --------------------------------------------------------------
#
# Percentile bootstrap over units. A resample draws n units with replacement; it is represented by how
# often each unit was drawn (a multinomial count vector), so every statistic whose value is a function of
# per-unit sums (agreeing pairs, category counts, a confusion or coincidence matrix) is evaluated for all
# resamples at once as a matrix product. That keeps 1,000 resamples over thousands of units well under a
# second, where calling the point-estimate functions per resample took minutes.


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile bootstrap interval.

    ``defined`` counts the resamples on which the statistic was defined; undefined resamples (e.g. κ of a
    resample with a single label) are left out rather than counted as 0 or 1. ``low``/``high`` are
    ``None`` when the estimate is undefined or fewer than half the resamples were defined."""

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    resamples: int
    defined: int

    def as_dict(self) -> dict:
        return asdict(self)


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), not {confidence}")


def _interval(
    estimate: float | None, values: Sequence[float] | np.ndarray, confidence: float, resamples: int
) -> Interval:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if estimate is None or len(values) * 2 < resamples or len(values) == 0:
        return Interval(estimate, None, None, confidence, resamples, int(len(values)))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return Interval(estimate, float(low), float(high), confidence, resamples, int(len(values)))


@lru_cache(maxsize=16)
def resample_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """``resamples × n`` matrix: how often each of n units is drawn in each resample (n draws with
    replacement each; numpy's PCG64 seeded with ``seed``). Read-only and memoised: the statistics of one
    group of units share their resamples."""
    rng = np.random.default_rng(seed)
    if n == 0:
        counts = np.zeros((resamples, 0))
    else:
        drawn = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)
    counts.setflags(write=False)
    return counts


def bootstrap_ci(
    units: Sequence[T],
    statistic: Callable[[list[T]], float | None],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap of any ``statistic`` over ``units`` (it is called once per resample; the
    ``*_ci`` functions below are vectorised versions for the statistics of this module). The
    ``(1 ± confidence)/2`` quantiles of the defined resample values form the interval.

    scipy.stats.bootstrap is not used because it cannot skip resamples on which the statistic is
    undefined."""
    _check_confidence(confidence)
    units = list(units)
    estimate = statistic(units)
    if estimate is None or not units:
        return Interval(estimate, None, None, confidence, resamples, 0)
    counts = resample_counts(len(units), resamples, seed)
    values = []
    for row in counts:
        picked = [u for u, c in zip(units, row) for _ in range(int(c))]
        value = statistic(picked)
        values.append(np.nan if value is None else value)
    return _interval(estimate, values, confidence, resamples)


def _weighted_mean_ci(
    estimate: float | None, values: np.ndarray, defined: np.ndarray, resamples: int, seed: int, confidence: float
) -> Interval:
    """Bootstrap of the mean of per-unit values over the units where they are defined."""
    _check_confidence(confidence)
    if estimate is None:
        return Interval(None, None, None, confidence, resamples, 0)
    counts = resample_counts(len(values), resamples, seed)
    weight = counts @ defined
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts @ np.where(defined > 0, values, 0.0)) / weight
    return _interval(estimate, np.where(weight > 0, means, np.nan), confidence, resamples)


def percent_agreement_ci(
    units: Sequence[Sequence[Label | None]], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> Interval:
    """Resamples units (all of them; units with fewer than two ratings add nothing, as in the estimate)."""
    shares, defined = [], []
    for unit in units:
        ratings = _clean(unit)
        n = len(ratings)
        defined.append(1.0 if n >= 2 else 0.0)
        shares.append(sum(c * (c - 1) for c in Counter(ratings).values()) / (n * (n - 1)) if n >= 2 else 0.0)
    return _weighted_mean_ci(percent_agreement(units), np.array(shares), np.array(defined), resamples, seed, confidence)


def _kappa_from_confusions(confusions: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cohen's κ of each ``k × k`` count matrix in ``confusions`` (shape B × k × k); NaN where undefined."""
    total = confusions.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = confusions / total[:, None, None]
        expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
        d_e = (w * expected).sum(axis=(1, 2))
        kappa = 1.0 - (w * observed).sum(axis=(1, 2)) / d_e
    return np.where((total > 0) & (d_e > 1e-15), kappa, np.nan)


def cohen_kappa_ci(
    a: Sequence[Label | None],
    b: Sequence[Label | None],
    weights: Weights = None,
    labels: Sequence[Label] | None = None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Resamples the units rated by both raters."""
    _check_confidence(confidence)
    estimate = cohen_kappa(a, b, weights, labels)
    pairs = [(x, y) for x, y in zip(a, b) if _present(x) and _present(y)]
    if estimate is None:
        return Interval(None, None, None, confidence, resamples, 0)
    if labels is None:
        labels = sorted({x for p in pairs for x in p}, key=_sort_key)
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    onehot = np.zeros((len(pairs), k * k))
    for row, (x, y) in enumerate(pairs):
        onehot[row, index[x] * k + index[y]] = 1.0
    confusions = (resample_counts(len(pairs), resamples, seed) @ onehot).reshape(resamples, k, k)
    return _interval(
        estimate, _kappa_from_confusions(confusions, _disagreement_weights(k, weights)), confidence, resamples
    )


def fleiss_kappa_ci(
    units: Sequence[Sequence[Label | None]],
    categories: Sequence[Label] | None = None,
    unequal: Literal["error", "modal"] = "error",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Resamples the units that enter Fleiss' table (see ``fleiss_table``)."""
    _check_confidence(confidence)
    estimate = fleiss_kappa(units, categories, unequal)
    if estimate is None:
        return Interval(None, None, None, confidence, resamples, 0)
    table, _ = fleiss_table(units, categories, unequal)
    n = table.sum(axis=1)[0]
    p_item = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    counts = resample_counts(len(table), resamples, seed)
    drawn = counts.sum(axis=1)
    p_bar = (counts @ p_item) / drawn
    p_cat = (counts @ table) / (drawn * n)[:, None]
    p_e = (p_cat * p_cat).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(1.0 - p_e > 1e-15, (p_bar - p_e) / (1.0 - p_e), np.nan)
    return _interval(estimate, kappa, confidence, resamples)


def _coincidences(value_counts: np.ndarray) -> np.ndarray:
    """Per pairable unit, its ``V × V`` coincidence contribution (Krippendorff 2011): ``(n_u n_uᵀ − diag n_u)/(m_u − 1)``."""
    m = value_counts.sum(axis=1)
    outer = value_counts[:, :, None] * value_counts[:, None, :]
    idx = np.arange(value_counts.shape[1])
    outer[:, idx, idx] -= value_counts
    return outer / (m - 1.0)[:, None, None]


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: Level) -> np.ndarray:
    """α = 1 − D_o/D_e for each coincidence matrix in ``o`` (B × V × V) over the ordered ``values``; NaN
    where undefined (D_e = 0). Used for the bootstrap; the point estimate goes through the package."""
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    v = values.astype(float)
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(len(v)), o.shape)
    elif level == "interval":
        delta = np.broadcast_to((v[:, None] - v[None, :]) ** 2, o.shape)
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = ((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2
        delta = np.broadcast_to(np.nan_to_num(ratio), o.shape)
    elif level == "ordinal":
        cum = np.cumsum(n_c, axis=1)  # Σ_{g ≤ c} n_g
        lo = np.minimum.outer(np.arange(len(v)), np.arange(len(v)))
        hi = np.maximum.outer(np.arange(len(v)), np.arange(len(v)))
        between = cum[:, hi] - cum[:, lo] + n_c[:, lo]  # Σ_{g=lo}^{hi} n_g
        delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
    else:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = (o * delta).sum(axis=(1, 2)) / n
        d_e = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2)) / (n * (n - 1.0))
        alpha = 1.0 - d_o / d_e
    return np.where((n > 1) & (d_e > 1e-15), alpha, np.nan)


def krippendorff_alpha_ci(
    reliability_data: Sequence[Sequence[object]],
    level: Level = "nominal",
    value_domain: Sequence[object] | None = None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Resamples pairable units (columns of ``reliability_data`` with two or more ratings)."""
    _check_confidence(confidence)
    estimate = krippendorff_alpha(reliability_data, level, value_domain)
    if estimate is None:
        return Interval(None, None, None, confidence, resamples, 0)
    rows = [list(r) for r in reliability_data]
    counts, values, _domain = _unit_counts([[r[u] for r in rows] for u in range(len(rows[0]))], level, value_domain)
    return _interval_of_counts(estimate, counts, values, level, resamples, confidence, seed)


def krippendorff_alpha_units_ci(
    units: Sequence[Sequence[object]],
    level: Level = "nominal",
    value_domain: Sequence[object] | None = None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``krippendorff_alpha_ci`` from each unit's ratings (see ``krippendorff_alpha_units``): the same interval."""
    _check_confidence(confidence)
    counts, values, _domain = _unit_counts(units, level, value_domain)  # once, for the estimate and the resamples
    estimate = _alpha_of_counts(counts, values, level)
    if estimate is None:
        return Interval(None, None, None, confidence, resamples, 0)
    return _interval_of_counts(estimate, counts, values, level, resamples, confidence, seed)


def _interval_of_counts(
    estimate: float, counts: np.ndarray, values: np.ndarray, level: Level, resamples: int, confidence: float, seed: int
) -> Interval:
    o_units = _coincidences(counts).reshape(len(counts), -1)
    o = (resample_counts(len(counts), resamples, seed) @ o_units).reshape(resamples, len(values), len(values))
    return _interval(estimate, alpha_from_coincidences(o, values, level), confidence, resamples)


def rwg_ci(ratings: Sequence[float | None], scale_points: int, **kw) -> Interval:
    """Resamples the raters of one item."""
    return bootstrap_ci(_clean(ratings), lambda rs: rwg(rs, scale_points), **kw)


def rwg_j_ci(item_ratings: Sequence[Sequence[float | None]], scale_points: int, **kw) -> Interval:
    """Resamples raters (columns of ``item_ratings``, one list per item with raters in the same order)."""
    columns = list(zip(*item_ratings)) if item_ratings else []
    return bootstrap_ci(
        columns, lambda cols: rwg_j([list(r) for r in zip(*cols)], scale_points) if cols else None, **kw
    )


def mean_defined(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values (``None`` when there are none)."""
    kept = [v for v in values if v is not None]
    return float(sum(kept) / len(kept)) if kept else None


def _mean_of_per_unit(values: list[float | None], *, resamples: int, confidence: float, seed: int) -> Interval:
    defined = np.array([0.0 if v is None else 1.0 for v in values])
    return _weighted_mean_ci(
        mean_defined(values), np.array([v or 0.0 for v in values], dtype=float), defined, resamples, seed, confidence
    )


def mean_rwg_ci(
    items: Sequence[Sequence[float | None]],
    scale_points: int,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Mean rwg over items (items with fewer than two ratings are undefined and left out), resampling items."""
    return _mean_of_per_unit(
        [rwg(u, scale_points) for u in items], resamples=resamples, confidence=confidence, seed=seed
    )


def mean_rwg_j_ci(
    items: Sequence[Sequence[Sequence[float | None]]],
    scale_points: int,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Mean rwg(j) over rated texts (each J dimensions × K raters), resampling texts."""
    return _mean_of_per_unit(
        [rwg_j(u, scale_points) for u in items], resamples=resamples, confidence=confidence, seed=seed
    )


def round_alignment_ci(
    first: Mapping[Hashable, Label | None],
    second: Mapping[Hashable, Label | None],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Resamples the items decided in both rounds."""
    same = [
        1.0 if first[k] == second[k] else 0.0
        for k in first
        if k in second and _present(first[k]) and _present(second[k])
    ]
    return _weighted_mean_ci(
        round_alignment(first, second), np.array(same), np.ones(len(same)), resamples, seed, confidence
    )


def pairwise(labels: Sequence[T]) -> list[tuple[T, T]]:
    """All unordered pairs, in input order (for per-reviewer-pair tables)."""
    return list(combinations(labels, 2))
