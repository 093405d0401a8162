"""exports.release.domain.sampling: pseudo systems with predetermined quality (SPEC §7). Pure."""

from __future__ import annotations

import random

import pytest

from exports.release.domain.sampling import (
    SamplingError,
    SamplingPlan,
    default_level_mixes,
    derive_seed,
    monolingual_systems,
    multilingual_systems,
    sample_without_replacement,
)
from tests.support.asserts import every


def make_pool(directions=("en-de", "en-zh"), per_level=(102, 700, 2000, 2400, 1300, 300)):
    return {d: {k: [f"{d}/{i}/k{k}" for i in range(n)] for k, n in enumerate(per_level)} for d in directions}


def test_monolingual_systems_draw_n_distinct_triplets_of_one_level_per_repetition():
    pool = make_pool()
    plan = SamplingPlan(multilingual_repetitions=0)
    systems = monolingual_systems(pool, plan)
    assert len(systems) == 2 * 6 * 10
    for s in systems:
        ids = s.triplet_ids
        assert len(ids) == 102 == len(set(ids))
        assert every(t.startswith(f"{s.direction_code}/") and t.endswith(f"k{s.level}") for t in ids)
        assert s.human_score == -5 * s.level
    # repetitions differ (except level 0, which has exactly 102 triplets), seeds are recorded and distinct
    reps = [s for s in systems if s.direction_code == "en-de" and s.level == 3]
    assert len({tuple(s.triplet_ids) for s in reps}) == 10
    assert len({s.seed for s in systems}) == len(systems)


def test_same_plan_same_systems_and_input_order_does_not_matter():
    pool = make_pool()
    plan = SamplingPlan(multilingual_repetitions=3, monolingual_repetitions=2)
    shuffled = {
        d: {k: random.Random(1).sample(ids, len(ids)) for k, ids in levels.items()} for d, levels in pool.items()
    }
    a = monolingual_systems(pool, plan) + multilingual_systems(pool, plan)
    b = monolingual_systems(shuffled, plan) + multilingual_systems(shuffled, plan)
    assert [(s.system_id, s.seed, s.blocks) for s in a] == [(s.system_id, s.seed, s.blocks) for s in b]
    other = monolingual_systems(pool, SamplingPlan(seed=7, monolingual_repetitions=2))
    assert [s.blocks for s in other] != [s.blocks for s in a[: len(other)]]


def test_multilingual_systems_have_the_same_level_mix_and_human_score_in_every_direction():
    pool = make_pool(directions=("en-de", "en-ja", "en-zh"))
    plan = SamplingPlan(multilingual_repetitions=4)
    systems = multilingual_systems(pool, plan)
    assert len(systems) == 10 * 4
    scores = sorted({round(s.human_score, 9) for s in systems})
    assert len(scores) == 10 and scores[0] == -25.0 and scores[-1] == 0.0
    for s in systems:
        per_direction = {}
        for direction, level, ids in s.blocks:
            per_direction.setdefault(direction, {})[level] = len(ids)
            assert len(set(ids)) == len(ids)
        assert set(per_direction) == {"en-de", "en-ja", "en-zh"}
        assert every(mix == s.level_mix for mix in per_direction.values())
        assert sum(s.level_mix.values()) == 102


def test_default_level_mixes_are_evenly_spaced():
    mixes = default_level_mixes(102, 10)
    means = [sum(k * n for k, n in m.items()) / 102 for m in mixes]
    assert every(sum(m.values()) == 102 for m in mixes)
    steps = [b - a for a, b in zip(means, means[1:])]
    assert every(abs(step - 5 / 9) < 0.01 for step in steps)


def test_plan_round_trips_through_its_stored_form():
    plan = SamplingPlan(seed=3, n=50, multilingual_systems=4)
    stored = plan.to_dict()
    again = SamplingPlan.from_dict(stored)
    assert again.to_dict() == stored
    pool = make_pool()
    assert [s.blocks for s in multilingual_systems(pool, again)] == [s.blocks for s in multilingual_systems(pool, plan)]
    with pytest.raises(SamplingError, match="unknown"):
        SamplingPlan.from_dict({"sede": 1})
    with pytest.raises(SamplingError, match="expected n"):
        SamplingPlan.from_dict({"n": 10, "level_mixes": [{"0": 5}]})


def test_shortfalls_are_recorded_and_missing_levels_refused():
    pool = {"en-de": {0: ["a", "b"], 1: ["c"]}}
    systems = monolingual_systems(pool, SamplingPlan(n=3, monolingual_levels=(0, 1, 2), monolingual_repetitions=1))
    assert [len(s.triplet_ids) for s in systems] == [2, 1]
    assert systems[0].shortfalls == ["en-de level 0: 3 wanted, 2 available (all taken)"]
    with pytest.raises(SamplingError, match="no level-2 triplets"):
        multilingual_systems(
            pool,
            SamplingPlan(
                n=3,
                multilingual_systems=2,
                monolingual_levels=(0, 1, 2),
                multilingual_repetitions=1,
                level_mixes=(((0, 3),), ((2, 3),)),
            ),
        )


def test_sampling_is_without_replacement_and_pinned():
    items = [str(i) for i in range(1000)]
    for seed in range(20):
        drawn = sample_without_replacement(items, 102, seed)
        assert len(set(drawn)) == 102
    # the O(count) dict version equals a textbook full-copy Fisher–Yates driven by the same random()
    for seed, count in [(0, 0), (1, 1), (42, 102), (7, 1000)]:
        rng = random.Random(seed)
        copy = list(items)
        for i in range(count):
            j = i + int(rng.random() * (len(copy) - i))
            copy[i], copy[j] = copy[j], copy[i]
        assert sample_without_replacement(items, count, seed) == copy[:count]
    # pinned: a change here changes every release, so it must come with a new ALGORITHM version
    assert sample_without_replacement(items, 5, 42) == ["639", "25", "276", "225", "737"]
    assert (
        derive_seed(42, "mono", "en-de", 1, 0)
        == derive_seed(42, "mono", "en-de", 1, 0)
        != derive_seed(42, "mono", "en-de", 1, 1)
    )


def test_default_mixes_stop_at_the_highest_level_every_direction_has():
    from exports.release.domain.sampling import resolve_for_pool

    pool = {"en-de": {0: ["a"], 1: ["b"], 2: ["c"], 3: ["d"]}, "en-zh": {0: ["e"], 1: ["f"], 2: ["g"]}}
    plan = resolve_for_pool(SamplingPlan(n=4, multilingual_systems=3, multilingual_repetitions=1), pool)
    assert [dict(m) for m in plan.level_mixes] == [{0: 4}, {1: 4}, {2: 4}]
    assert resolve_for_pool(plan, pool) is plan  # explicit mixes are kept
    stored = SamplingPlan.from_dict(plan.to_dict())
    assert stored.level_mixes == plan.level_mixes
    systems = multilingual_systems(pool, stored)
    assert [s.human_score for s in systems] == [0.0, -5.0, -10.0]


def test_draws_read_one_direction_at_a_time_equal_the_in_memory_draws(tmp_path, monkeypatch):
    import tempfile

    from exports.release.domain.sampling import iter_monolingual_by_direction, iter_multilingual_spooled

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # shuffled ids with duplicates, and a direction short of level-5 triplets (shortfalls in both kinds)
    pool = make_pool(("en-de", "en-ja", "en-zh"), (102, 700, 2000, 2400, 1300, 300))
    pool["en-ja"][5] = pool["en-ja"][5][:40]
    random.Random(1).shuffle(pool["en-zh"][2])
    pool["en-de"][1] = pool["en-de"][1] + pool["en-de"][1][:50]
    plan = SamplingPlan(seed=5, monolingual_repetitions=3, multilingual_systems=6, multilingual_repetitions=4)
    loaded = []

    def load(direction):
        loaded.append(direction)
        return pool[direction]

    def fields(draws):
        return [(d.system_id, d.seed, d.level_mix, d.blocks, d.shortfalls, d.human_score) for d in draws]

    assert fields(iter_monolingual_by_direction(pool, load, plan)) == fields(monolingual_systems(pool, plan))
    spooled = iter_multilingual_spooled(list(pool), load, plan)
    first = next(spooled)
    assert list(tmp_path.iterdir()) == []  # the spool has no name: nothing to leave behind
    expected = multilingual_systems(pool, plan)
    assert any(d.shortfalls for d in expected)
    assert fields([first, *spooled]) == fields(expected)
    assert sorted(loaded) == sorted(2 * list(pool))  # each direction read once per kind

    # the same refusal as the in-memory draw: the first missing level in system, direction, level order
    gaps = {"en-de": {0: ["a"], 1: ["b"]}, "en-zh": {1: ["c"], 2: ["d"]}}
    mixes = SamplingPlan(n=1, multilingual_systems=2, multilingual_repetitions=2, level_mixes=(((0, 1),), ((2, 1),)))
    with pytest.raises(SamplingError) as in_memory:
        multilingual_systems(gaps, mixes)
    with pytest.raises(SamplingError) as spooled_error:
        list(iter_multilingual_spooled(gaps, gaps.__getitem__, mixes))
    assert str(spooled_error.value) == str(in_memory.value) == "en-zh has no level-0 triplets to sample"
    assert list(tmp_path.iterdir()) == []
