"""Tests of the static memory planner (aot.emit.plan.arena)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.emit.plan.arena import (
                                 ALGORITHMS, InPlace, MemoryPlan, TensorLife, align_up, lower_bound, plan_memory,
                                 verify_plan,
                                 )


def T(key: str, nbytes: int, start: int, end: int) -> TensorLife:
    return TensorLife(key, nbytes, start, end)


def chain(n: int, nbytes: int) -> list[TensorLife]:
    """t0 -> t1 -> ... : t_i is written at step i and read at step i + 1."""
    return [T(f"t{i}", nbytes, i, i + 1) for i in range(n)]


def chain_pairs(n: int) -> list[InPlace]:
    return [InPlace(out=f"t{i + 1}", inp=f"t{i}") for i in range(n - 1)]


def optimum_by_brute_force(tensors: list[TensorLife], alignment: int) -> int:
    """The optimal arena (no in-place): some order placed by first fit is
    optimal (place an optimal packing's tensors by increasing offset: each
    lands at or below its offset), so try every order."""
    best = None
    for order in itertools.permutations(tensors):
        placed: list[tuple[TensorLife, int]] = []
        top = 0
        for t in order:
            size = align_up(t.nbytes, alignment)
            off = 0
            moved = True
            while moved:
                moved = False
                for u, o in placed:
                    if u.start <= t.end and t.start <= u.end and o < off + size and off < o + align_up(u.nbytes, alignment):
                        off = o + align_up(u.nbytes, alignment)
                        moved = True
            placed.append((t, off))
            top = max(top, off + size)
        best = top if best is None else min(best, top)
    return best or 0


# --------------------------------------------------------------------------
# Lower bound
# --------------------------------------------------------------------------

LOWER_BOUND_CASES = [
    # (name, tensors, inplace, alignment, expected)
    ("empty", [], [], 16, 0),
    ("one", [T("a", 10, 0, 0)], [], 16, 16),
    ("one-unaligned-1", [T("a", 10, 0, 0)], [], 1, 10),
    ("chain", chain(5, 32), [], 16, 64),
    ("chain-inplace", chain(5, 32), chain_pairs(5), 16, 32),
    ("disjoint", [T("a", 64, 0, 1), T("b", 128, 2, 3)], [], 16, 128),
    ("nested", [T("a", 64, 0, 9), T("b", 32, 2, 3), T("c", 16, 3, 5)], [], 16, 112),
    # in place at step 1: a is not counted at step 1, b (smaller) replaces it
    ("inplace-smaller", [T("a", 64, 0, 1), T("b", 16, 1, 2), T("c", 48, 0, 2)],
     [InPlace("b", "a")], 16, 112),
    # a consumed in place at the step it is written: never counted
    ("inplace-same-step", [T("a", 64, 3, 3), T("b", 64, 3, 4)], [InPlace("b", "a")], 16, 64),
]


@pytest.mark.parametrize("name,tensors,inplace,alignment,expected", LOWER_BOUND_CASES,
                         ids=[c[0] for c in LOWER_BOUND_CASES])
def test_lower_bound(name, tensors, inplace, alignment, expected):
    assert lower_bound(tensors, inplace, alignment) == expected


# --------------------------------------------------------------------------
# Hand-checked plans
# --------------------------------------------------------------------------

PLAN_CASES = [
    # (name, tensors, inplace, alignment, expected arena)
    ("empty", [], [], 16, 0),
    ("single", [T("a", 100, 0, 0)], [], 16, 112),
    ("chain-equal-is-2x", chain(8, 64), [], 16, 128),
    ("chain-inplace-is-1x", chain(8, 64), chain_pairs(8), 16, 64),
    ("chain-unaligned-sizes", chain(6, 20), [], 16, 64),
    ("big-small-big", [T("a", 1024, 0, 1), T("b", 256, 1, 2), T("c", 256, 2, 3),
                       T("d", 1024, 3, 4)], [], 16, 1280),
    ("all-disjoint-share-offset-0", [T(f"t{i}", 48 + 16 * i, i, i) for i in range(5)], [], 16, 112),
    ("all-live-together", [T(f"t{i}", 32, 0, 3) for i in range(4)], [], 16, 128),
    # A (32, step 0) and C (48, step 1) can share bytes; B (16) lives across
    # both.  Largest first puts C at 0, A at 0 and B on top: 64 = the bound.
    ("size-first-beats-start-order", [T("A", 32, 0, 0), T("B", 16, 0, 2), T("C", 48, 1, 1)],
     [], 16, 64),
    # at step 1, a (64), b (16) and x (32) are live: 112 bytes unless b is
    # written over a; then 96 (a and x at step 0)
    ("inplace-smaller-output", [T("a", 64, 0, 1), T("b", 16, 1, 3), T("x", 32, 0, 3)],
     [InPlace("b", "a")], 16, 96),
    # an in-place output smaller than its input holds only its own bytes
    # afterwards: c (96) may sit over a's freed bytes next to b
    ("inplace-smaller-output-frees-rest",
     [T("a", 64, 0, 1), T("b", 16, 1, 3), T("x", 32, 0, 1), T("c", 32, 2, 3)],
     [InPlace("b", "a")], 16, 96),
]


@pytest.mark.parametrize("name,tensors,inplace,alignment,expected", PLAN_CASES,
                         ids=[c[0] for c in PLAN_CASES])
def test_plan_known_cases(name, tensors, inplace, alignment, expected):
    plan = plan_memory(tensors, inplace, alignment)
    verify_plan(tensors, plan, alignment)
    assert plan.arena_bytes == expected
    assert plan.lower_bound_bytes == lower_bound(tensors, inplace, alignment)
    assert plan.arena_bytes >= plan.lower_bound_bytes


def test_size_first_beats_start_order():
    tensors = [T("A", 32, 0, 0), T("B", 16, 0, 2), T("C", 48, 1, 1)]
    plan = plan_memory(tensors)
    assert plan.algorithm == "greedy_by_size"
    assert plan.offset("C") == 0 and plan.offset("A") == 0 and plan.offset("B") == 48
    trials = dict(plan.trials)
    assert trials["greedy_by_size"] == 64
    # (the start-order trial is not run: the first trial met the bound)
    assert "greedy_by_start" not in trials


def test_best_trial_wins_when_first_is_not_optimal():
    # Largest first places the two 64-byte tensors (steps 0..1 and 3..4)
    # at 0, so the 32-byte tensors living over steps 1..3 must go above.
    tensors = [T("big0", 64, 0, 1), T("big1", 64, 3, 4), T("s0", 32, 1, 2), T("s1", 32, 2, 3)]
    plan = plan_memory(tensors)
    verify_plan(tensors, plan)
    trials = dict(plan.trials)
    assert trials["greedy_by_size"] == 128
    assert plan.algorithm == "greedy_by_start"
    assert plan.arena_bytes == 96 == plan.lower_bound_bytes
    assert plan.arena_bytes == optimum_by_brute_force(tensors, 16)


def test_zero_tensors():
    plan = plan_memory([])
    assert plan.arena_bytes == 0 and plan.lower_bound_bytes == 0
    assert dict(plan.offsets) == {} and plan.inplace == ()
    verify_plan([], plan)


@pytest.mark.parametrize("alignment", [1, 4, 16, 64, 48])
def test_alignment(alignment):
    tensors = [T(f"t{i}", 1 + 7 * i, i // 2, i // 2 + 2) for i in range(12)]
    plan = plan_memory(tensors, alignment=alignment)
    verify_plan(tensors, plan, alignment)
    for t in tensors:
        assert plan.offset(t.key) % alignment == 0
    assert plan.arena_bytes % alignment == 0
    assert plan.arena_bytes >= lower_bound(tensors, alignment=alignment)


def test_alignment_rounds_sizes_when_packing():
    # two 1-byte tensors live together: 2 bytes unaligned, 2 * 16 aligned
    tensors = [T("a", 1, 0, 1), T("b", 1, 0, 1)]
    assert plan_memory(tensors, alignment=1).arena_bytes == 2
    plan = plan_memory(tensors, alignment=16)
    assert plan.arena_bytes == 32
    assert sorted(plan.offsets.values()) == [0, 16]


# --------------------------------------------------------------------------
# In-place pairs
# --------------------------------------------------------------------------

def test_inplace_chain_shares_one_offset():
    tensors = chain(6, 100)
    plan = plan_memory(tensors, chain_pairs(6))
    verify_plan(tensors, plan)
    assert set(plan.offsets.values()) == {0}
    assert plan.inplace == tuple(chain_pairs(6))


def test_one_input_two_candidate_outputs_uses_one():
    tensors = [T("a", 64, 0, 1), T("b", 64, 1, 2), T("c", 64, 1, 2)]
    pairs = [InPlace("b", "a"), InPlace("c", "a")]
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert len(plan.inplace) == 1
    assert plan.arena_bytes == 128
    assert plan.lower_bound_bytes == 128


def test_one_output_two_candidate_inputs_uses_one():
    tensors = [T("a", 64, 0, 1), T("b", 64, 0, 1), T("c", 64, 1, 2)]
    pairs = [InPlace("c", "a"), InPlace("c", "b")]
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert len(plan.inplace) == 1
    assert plan.arena_bytes == 128


def test_tight_pairs_are_tried_first():
    # b (64) or c (16) may overwrite a (64); b over a wastes nothing: a|b
    # and c give 80, a|c and b give 128.
    tensors = [T("a", 64, 0, 1), T("b", 64, 1, 2), T("c", 16, 1, 2)]
    pairs = [InPlace("c", "a"), InPlace("b", "a")]
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert plan.inplace == (InPlace("b", "a"),)
    assert plan.trials[0] == ("greedy_by_size/inplace=tight", 80)
    assert plan.arena_bytes == 80 == plan.lower_bound_bytes


def test_single_step_link_is_refused():
    # b lives only at step 1, so a (ends at 1) and c (starts at 1) are live
    # together: the chain a -> b -> c cannot share one offset.
    tensors = [T("a", 32, 0, 1), T("b", 32, 1, 1), T("c", 32, 1, 2)]
    pairs = [InPlace("b", "a"), InPlace("c", "b")]
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert len(plan.inplace) == 1
    assert plan.arena_bytes == 64


def test_invalid_pair_is_a_bug():
    tensors = [T("a", 32, 0, 1), T("b", 64, 1, 2), T("c", 32, 3, 4)]
    with pytest.raises(AssertionError, match="not a multiple"):
        plan_memory(tensors, [InPlace("b", "a", -8)])
    with pytest.raises(AssertionError, match="last read"):
        plan_memory(tensors, [InPlace("c", "a")])
    with pytest.raises(AssertionError, match="unknown"):
        plan_memory(tensors, [InPlace("zz", "a")])


@pytest.mark.parametrize("bad,match", [
    ([T("a", 0, 0, 1)], "nbytes"),
    ([T("a", 8, 2, 1)], "ends"),
    ([T("a", 8, 0, 1), T("a", 8, 0, 1)], "duplicate"),
])
def test_bad_tensors_are_bugs(bad, match):
    with pytest.raises(AssertionError, match=match):
        plan_memory(bad)


# --------------------------------------------------------------------------
# verify_plan catches broken plans
# --------------------------------------------------------------------------

VERIFY_TENSORS = [T("a", 32, 0, 2), T("b", 32, 1, 3), T("c", 32, 3, 4)]


@pytest.mark.parametrize("offsets,arena,inplace,match", [
    ({"a": 0, "b": 16, "c": 0}, 64, (), r"'a'.*'b'"),
    ({"a": 0, "b": 32, "c": 32}, 64, (), r"'b'.*'c'"),
    ({"a": 0, "b": 40, "c": 0}, 80, (), "multiple of 16"),
    ({"a": 0, "b": 32, "c": 0}, 48, (), "exceeds the arena"),
    ({"a": 0, "b": 32}, 64, (), "'c' has no offset"),
    ({"a": 0, "b": 32, "c": 0, "d": 0}, 64, (), "unknown"),
    ({"a": 0, "b": 32, "c": 0}, 64, (InPlace("c", "b"),), "is placed at offsets"),
    ({"a": 0, "b": 32, "c": 0}, 64, (InPlace("c", "a"),), "last read"),
])
def test_verify_rejects(offsets, arena, inplace, match):
    plan = MemoryPlan(offsets=offsets, arena_bytes=arena, lower_bound_bytes=0,
                      algorithm="hand", inplace=inplace)
    with pytest.raises(AssertionError, match=match):
        verify_plan(VERIFY_TENSORS, plan)


def test_verify_catches_one_byte_overlap():
    # 17 bytes at offset 0 reach into the block at 16
    tensors = [T("a", 17, 0, 1), T("b", 16, 1, 2)]
    plan = MemoryPlan(offsets={"a": 0, "b": 16}, arena_bytes=32, lower_bound_bytes=0,
                      algorithm="hand", inplace=())
    with pytest.raises(AssertionError, match=r"'a'.*'b'"):
        verify_plan(tensors, plan)
    verify_plan(tensors[:1] + [T("b", 16, 2, 3)], plan)


def test_verify_accepts_used_pair_at_same_offset_only():
    plan = MemoryPlan(offsets={"a": 0, "b": 32, "c": 32}, arena_bytes=64,
                      lower_bound_bytes=0, algorithm="hand", inplace=(InPlace("c", "b"),))
    verify_plan(VERIFY_TENSORS, plan)
    unpaired = MemoryPlan(offsets={"a": 0, "b": 32, "c": 32}, arena_bytes=64,
                          lower_bound_bytes=0, algorithm="hand", inplace=())
    with pytest.raises(AssertionError, match=r"'b'.*'c'"):
        verify_plan(VERIFY_TENSORS, unpaired)


# --------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------

def random_workload(n: int, seed: int, max_life: int = 20, inplace_fraction: float = 0.5,
                    sizes=(16, 64, 100, 256, 1000, 3000, 4096)):
    rng = random.Random(seed)
    tensors = []
    for i in range(n):
        life = rng.randrange(max_life) if rng.random() < 0.8 else 0
        tensors.append(T(f"t{i}", rng.choice(sizes), i, i + life))
    ending: dict[int, list[TensorLife]] = {}
    for t in tensors:
        ending.setdefault(t.end, []).append(t)
    pairs = []
    for t in tensors:
        for u in ending.get(t.start, []):
            if u.key != t.key and t.nbytes <= u.nbytes and rng.random() < inplace_fraction:
                pairs.append(InPlace(out=t.key, inp=u.key))
    return tensors, pairs


def test_deterministic_and_independent_of_input_order():
    tensors, pairs = random_workload(300, seed=3)
    plan = plan_memory(tensors, pairs)
    again = plan_memory(tensors, pairs)
    assert plan == again and plan.trials == again.trials
    shuffled = list(tensors)
    random.Random(1).shuffle(shuffled)
    shuffled_pairs = list(reversed(pairs))
    other = plan_memory(shuffled, shuffled_pairs)
    assert other == plan
    assert list(plan.offsets) == sorted(plan.offsets)


def test_trials_and_algorithm_agree():
    for seed in range(6):
        tensors, pairs = random_workload(120, seed)
        plan = plan_memory(tensors, pairs)
        verify_plan(tensors, plan)
        assert plan.algorithm in ALGORITHMS
        best = min(a for _, a in plan.trials)
        assert plan.arena_bytes == best
        first_best = next(label for label, a in plan.trials if a == best)
        assert first_best.split("/")[0] == plan.algorithm


def test_hill_climb_improves_some_workloads():
    improved = 0
    for seed in range(12):
        tensors, pairs = random_workload(60, seed, inplace_fraction=0.0)
        plan = plan_memory(tensors, pairs)
        verify_plan(tensors, plan)
        greedy = min(a for label, a in plan.trials if label != "hill_climb")
        if plan.algorithm == "hill_climb":
            assert plan.arena_bytes < greedy
            improved += 1
        else:
            assert plan.arena_bytes == greedy
    assert improved > 0
    # without a budget for the optional search no climbing happens
    tensors, pairs = random_workload(60, 0, inplace_fraction=0.0)
    assert plan_memory(tensors, pairs, climb_steps=0).algorithm != "hill_climb"


def test_ten_thousand_tensors():
    tensors, pairs = random_workload(10_000, seed=11)
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert plan.arena_bytes >= plan.lower_bound_bytes > 0
    assert plan.arena_bytes <= 2 * plan.lower_bound_bytes


def test_ten_thousand_long_lived_tensors():
    tensors, pairs = random_workload(10_000, seed=12, max_life=200)
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert plan.arena_bytes >= plan.lower_bound_bytes


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

@st.composite
def workloads(draw, max_tensors=24, equal_sizes=False):
    n = draw(st.integers(0, max_tensors))
    size = draw(st.integers(1, 300))
    tensors = []
    for i in range(n):
        start = draw(st.integers(0, 12))
        life = draw(st.integers(0, 6))
        nbytes = size if equal_sizes else draw(st.integers(1, 300))
        tensors.append(T(f"t{i}", nbytes, start, start + life))
    candidates = [(o, i) for o in tensors for i in tensors
                  if o is not i and i.end == o.start and o.nbytes <= i.nbytes]
    chosen = draw(st.lists(st.sampled_from(candidates), max_size=8)) if candidates else []
    pairs = [InPlace(out=o.key, inp=i.key) for o, i in chosen]
    alignment = draw(st.sampled_from([1, 8, 16, 32]))
    return tensors, pairs, alignment


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_random_plans_are_valid(workload):
    tensors, pairs, alignment = workload
    plan = plan_memory(tensors, pairs, alignment)
    verify_plan(tensors, plan, alignment)
    assert plan.lower_bound_bytes == lower_bound(tensors, pairs, alignment)
    assert plan.arena_bytes >= lower_bound(tensors, plan.inplace, alignment) >= plan.lower_bound_bytes
    assert set(plan.inplace) <= set(pairs)
    assert plan.arena_bytes % alignment == 0


@settings(max_examples=200, deadline=None)
@given(workloads(equal_sizes=True))
def test_equal_sizes_reach_the_bound(workload):
    # Interval graphs are perfect: first fit in start order uses as many
    # slots as the most tensors (in-place chains) live at one step.
    tensors, pairs, alignment = workload
    plan = plan_memory(tensors, pairs, alignment)
    verify_plan(tensors, plan, alignment)
    assert plan.arena_bytes == lower_bound(tensors, plan.inplace, alignment)


@settings(max_examples=150, deadline=None)
@given(workloads(max_tensors=6))
def test_small_plans_against_brute_force(workload):
    tensors, _, alignment = workload
    plan = plan_memory(tensors, (), alignment)
    verify_plan(tensors, plan, alignment)
    optimum = optimum_by_brute_force(tensors, alignment)
    assert lower_bound(tensors, (), alignment) <= optimum <= plan.arena_bytes


@pytest.mark.parametrize("seed,max_life", [(0, 30), (1, 120)])
def test_list_and_vector_first_fit_agree(monkeypatch, seed, max_life):
    from aot.emit.plan import arena as memory_plan
    tensors, pairs = random_workload(400, seed, max_life=max_life)
    monkeypatch.setattr(memory_plan, "_VECTOR_ROW", 10**9)
    by_list = plan_memory(tensors, pairs)
    monkeypatch.setattr(memory_plan, "_VECTOR_ROW", 0)
    by_vector = plan_memory(tensors, pairs)
    assert by_list == by_vector and by_list.trials == by_vector.trials
    verify_plan(tensors, by_vector)
