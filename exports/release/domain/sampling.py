"""Pseudo systems with predetermined quality (SPEC §7, XQ-MEval §3.3 and §5). Pure Python (no Django).

A pseudo system is a set of triplets; its human score is the mean of ``−5·k`` over them. Every draw has its
own seed derived from the plan's base seed and the draw's coordinates (kind, system, repetition,
direction, level), so one system can be regenerated alone and adding a direction changes no other draw.
Draws are a partial Fisher–Yates shuffle of the sorted triplet ids driven only by ``Random.random()``:
without replacement, and stable across Python versions (the ``random`` module promises the sequence of
``random()`` for a seed, not the algorithm of ``sample``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from core.domain.errors import Invalid
from exports.benchmark.domain import MQM_MAJOR_PENALTY

ALGORITHM = "fisher-yates(random.Random(seed).random)/sha256-derived-seeds/v1"


class SamplingError(Invalid, ValueError):
    """A plan that cannot be drawn from the triplet pool (e.g. a level without triplets)."""

    code = "sampling_invalid"


@dataclass(frozen=True)
class SamplingPlan:
    """Everything that decides the systems; stored in the release manifest so it regenerates exactly."""

    seed: int = 42
    n: int = 102  # triplets per system and direction
    monolingual_levels: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    monolingual_repetitions: int = 10
    multilingual_systems: int = 10
    multilingual_repetitions: int = 100
    # level -> triplets per direction, one mix per multilingual system; empty = spread evenly (default_level_mixes)
    level_mixes: tuple[tuple[tuple[int, int], ...], ...] = ()
    algorithm: str = ALGORITHM

    def resolved_mixes(self) -> list[dict[int, int]]:
        if self.level_mixes:
            return [dict(mix) for mix in self.level_mixes]
        return default_level_mixes(self.n, self.multilingual_systems, max(self.monolingual_levels or (5,)))

    def to_dict(self) -> dict:
        data = asdict(self)
        data["monolingual_levels"] = list(self.monolingual_levels)
        data["level_mixes"] = [{str(k): v for k, v in sorted(mix.items())} for mix in self.resolved_mixes()]
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> SamplingPlan:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise SamplingError(f"unknown sampling plan field(s): {', '.join(sorted(unknown))}")
        values = dict(data)
        if "monolingual_levels" in values:
            values["monolingual_levels"] = tuple(int(x) for x in values["monolingual_levels"])
        if "level_mixes" in values:
            values["level_mixes"] = tuple(
                tuple(sorted((int(k), int(v)) for k, v in mix.items())) for mix in values["level_mixes"]
            )
        plan = cls(**values)
        plan.validate()
        return plan

    def validate(self) -> None:
        if self.n < 1:
            raise SamplingError("n must be at least 1")
        if self.monolingual_repetitions < 0 or self.multilingual_repetitions < 0:
            raise SamplingError("repetitions must be >= 0")
        for i, mix in enumerate(self.resolved_mixes()):
            if sum(mix.values()) != self.n:
                raise SamplingError(f"level mix {i} has {sum(mix.values())} triplets, expected n = {self.n}")
            if any(v < 0 or k < 0 for k, v in mix.items()):
                raise SamplingError(f"level mix {i} has a negative level or count")


def default_level_mixes(n: int, systems: int, max_level: int = 5) -> list[dict[int, int]]:
    """``systems`` mixes whose mean level runs evenly from 0 to ``max_level``: each mix uses the two
    levels around its target mean, so the predetermined MQM penalties are equally spaced."""
    mixes = []
    for j in range(systems):
        target = max_level * j / (systems - 1) if systems > 1 else 0.0
        low = math.floor(target)
        high = min(low + 1, max_level)
        n_high = round(n * (target - low)) if high != low else 0
        mix = {low: n - n_high}
        if n_high:
            mix[high] = mix.get(high, 0) + n_high
        mixes.append({k: v for k, v in mix.items() if v})
    return mixes


def derive_seed(base: int, *coordinates) -> int:
    """A 63-bit seed from the base seed and a draw's coordinates (fits a signed BIGINT)."""
    text = "|".join(str(c) for c in (base, *coordinates))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


@dataclass
class SystemDraw:
    """One pseudo system of one repetition. Its triplets come in blocks of one (direction, level) each,
    in draw order (cheap to hold a million of them)."""

    system_id: str
    kind: str  # monolingual | multilingual
    name: str
    repetition: int
    seed: int
    level_mix: dict[int, int]
    blocks: list[tuple[str, int, list[str]]] = field(default_factory=list)  # (direction, level, triplet ids)
    direction_code: str | None = None  # monolingual only
    level: int | None = None  # monolingual only
    shortfalls: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(ids) for _, _, ids in self.blocks)

    @property
    def triplet_ids(self) -> list[str]:
        return [t for _, _, ids in self.blocks for t in ids]

    @property
    def human_score(self) -> float:
        """Predetermined: the mean of −5·k over the system's triplets."""
        size = self.size
        if not size:
            return 0.0
        return -MQM_MAJOR_PENALTY * sum(level * len(ids) for _, level, ids in self.blocks) / size


Pool = Mapping[str, Mapping[int, Sequence[str]]]  # direction -> level -> triplet ids


def normalise_pool(pool: Pool) -> dict[str, dict[int, list[str]]]:
    """Sorted, de-duplicated ids per (direction, level): draws must not depend on the caller's order."""
    return {d: {level: sorted(set(ids)) for level, ids in levels.items()} for d, levels in pool.items()}


def _draw(
    pool: Pool, direction_code: str, level: int, count: int, seed: int, shortfalls: list[str]
) -> tuple[str, int, list[str]]:
    ids = pool.get(direction_code, {}).get(level, ())
    if not ids:
        raise SamplingError(f"{direction_code} has no level-{level} triplets to sample")
    if count > len(ids):
        shortfalls.append(f"{direction_code} level {level}: {count} wanted, {len(ids)} available (all taken)")
        count = len(ids)
    return direction_code, level, sample_without_replacement(ids, count, seed)


def sample_without_replacement(items: Sequence[str], count: int, seed: int) -> list[str]:
    """The first ``count`` items of a seeded Fisher–Yates shuffle of ``items``. Swaps are kept in a dict,
    so a draw costs O(count), not O(len(items)): thousands of draws from the same level stay cheap."""
    rng = random.Random(seed)
    n = len(items)
    if not 0 <= count <= n:
        raise SamplingError(f"cannot take {count} of {n} items")
    moved: dict[int, int] = {}
    out = []
    for i in range(count):
        j = i + int(rng.random() * (n - i))
        at_i = moved.get(i, i)
        at_j = moved.get(j, j)
        moved[j] = at_i
        out.append(items[at_j])
    return out


def monolingual_systems(pool: Pool, plan: SamplingPlan) -> list[SystemDraw]:
    """One direction, one level, ``n`` triplets without replacement, ``monolingual_repetitions`` times."""
    return list(iter_monolingual_systems(pool, plan))


def iter_monolingual_systems(pool: Pool, plan: SamplingPlan, *, normalised: bool = False) -> Iterator[SystemDraw]:
    """``monolingual_systems`` one draw at a time (a release streams them to its files and the database)."""
    pool = pool if normalised else normalise_pool(pool)
    for direction_code in sorted(pool):
        for level in plan.monolingual_levels:
            if not pool[direction_code].get(level):
                continue  # a level with no triplets has no system (the counts table shows the zero)
            for rep in range(plan.monolingual_repetitions):
                seed = derive_seed(plan.seed, "mono", direction_code, level, rep)
                draw = SystemDraw(
                    system_id=f"mono/{direction_code}/k{level}/r{rep}",
                    kind="monolingual",
                    name=f"{direction_code} level {level}",
                    repetition=rep,
                    seed=seed,
                    level_mix={level: plan.n},
                    direction_code=direction_code,
                    level=level,
                )
                draw.blocks.append(_draw(pool, direction_code, level, plan.n, seed, draw.shortfalls))
                yield draw


def multilingual_systems(pool: Pool, plan: SamplingPlan) -> list[SystemDraw]:
    """``multilingual_systems`` systems, each with the same level mix in every direction (so its human
    score is equal across languages), the whole procedure repeated ``multilingual_repetitions`` times."""
    return list(iter_multilingual_systems(pool, plan))


def iter_multilingual_systems(pool: Pool, plan: SamplingPlan, *, normalised: bool = False) -> Iterator[SystemDraw]:
    """``multilingual_systems`` one draw at a time."""
    pool = pool if normalised else normalise_pool(pool)
    directions = sorted(pool)
    mixes = plan.resolved_mixes()
    for rep in range(plan.multilingual_repetitions):
        for j, mix in enumerate(mixes):
            seed = derive_seed(plan.seed, "multi", j, rep)
            draw = SystemDraw(
                system_id=f"multi/s{j}/r{rep}",
                kind="multilingual",
                name=f"system {j}",
                repetition=rep,
                seed=seed,
                level_mix=dict(sorted(mix.items())),
            )
            for direction_code in directions:
                for level, count in sorted(mix.items()):
                    draw.blocks.append(
                        _draw(
                            pool,
                            direction_code,
                            level,
                            count,
                            derive_seed(seed, direction_code, level),
                            draw.shortfalls,
                        )
                    )
            yield draw


Levels = Mapping[int, Sequence[str]]  # one direction's pool: level -> triplet ids


def iter_monolingual_by_direction(
    directions: Iterable[str], load: Callable[[str], Levels], plan: SamplingPlan
) -> Iterator[SystemDraw]:
    """``iter_monolingual_systems`` with one direction's ids in memory at a time (``load(direction)``):
    a monolingual draw reads only its own direction, so the draws and their order are the same."""
    for direction_code in sorted(directions):
        yield from iter_monolingual_systems({direction_code: load(direction_code)}, plan)


def iter_multilingual_spooled(
    directions: Iterable[str], load: Callable[[str], Levels], plan: SamplingPlan
) -> Iterator[SystemDraw]:
    """``iter_multilingual_systems`` with one direction's ids in memory at a time: the same draws in the same
    order, so the same bytes. Each draw's part in a direction depends only on that direction's ids
    (``derive_seed(seed, direction, level)``), so every direction is drawn for all systems in one pass and its
    blocks spooled (a JSON line per system) into an anonymous file under TMPDIR (gone on every exit path, a
    kill included); the systems are then put together a line per direction. Memory holds one direction's
    ids and one system, whatever the number of directions."""
    directions = sorted(directions)
    mixes = plan.resolved_mixes()
    systems = [(rep, j) for rep in range(plan.multilingual_repetitions) for j in range(len(mixes))]
    if not systems:
        return
    seeds = {(rep, j): derive_seed(plan.seed, "multi", j, rep) for rep, j in systems}
    with tempfile.TemporaryFile(prefix="xq-release-") as spool:
        offsets: dict[str, int] = {}
        missing: set[tuple[str, int]] = set()
        for direction_code in directions:
            offsets[direction_code] = spool.tell()
            ids = {level: sorted(set(v)) for level, v in load(direction_code).items()}
            pool = {direction_code: ids}
            missing.update((direction_code, level) for mix in mixes for level in mix if not ids.get(level))
            for rep, j in systems:
                shortfalls: list[str] = []
                seed = seeds[rep, j]
                blocks = [
                    _draw(pool, direction_code, level, count, derive_seed(seed, direction_code, level), shortfalls)[1:]
                    for level, count in sorted(mixes[j].items())
                    if (direction_code, level) not in missing
                ]
                spool.write(json.dumps([shortfalls, blocks]).encode() + b"\n")
            del ids, pool
        # the error the in-memory draw meets first: system order, then direction, then level
        for mix in mixes:
            for direction_code in directions:
                for level in sorted(mix):
                    if (direction_code, level) in missing:
                        raise SamplingError(f"{direction_code} has no level-{level} triplets to sample")
        for rep, j in systems:
            mix = mixes[j]
            draw = SystemDraw(
                system_id=f"multi/s{j}/r{rep}",
                kind="multilingual",
                name=f"system {j}",
                repetition=rep,
                seed=seeds[rep, j],
                level_mix=dict(sorted(mix.items())),
            )
            for direction_code in directions:
                spool.seek(offsets[direction_code])
                shortfalls, blocks = json.loads(spool.readline())
                offsets[direction_code] = spool.tell()
                draw.shortfalls.extend(shortfalls)
                draw.blocks.extend((direction_code, level, ids) for level, ids in blocks)
            yield draw


def resolve_for_pool(plan: SamplingPlan, pool: Pool) -> SamplingPlan:
    """Fix the multilingual level mixes before drawing, so the stored plan regenerates exactly. Without
    explicit mixes they spread from level 0 to the highest level that has triplets in *every* direction
    (the same mix must be drawable everywhere), capped by the monolingual levels."""
    if plan.level_mixes:
        return plan
    cap = max(plan.monolingual_levels or (5,))
    common = [max((k for k, ids in levels.items() if ids), default=0) for levels in pool.values()]
    top = min([cap, *common]) if common else cap
    mixes = default_level_mixes(plan.n, plan.multilingual_systems, top)
    return replace(plan, level_mixes=tuple(tuple(sorted(m.items())) for m in mixes))
