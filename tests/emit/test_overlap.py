"""The overlap analysis (aot.emit.plan.overlap), shifted pairs in the arena
planner and the plan verifier's check of the overlaps a plan uses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import aot
from aot.compiler import plan as plan_model
from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import run_kernel
from aot.emit.plan.arena import (InPlace, TensorLife, lower_bound, plan_memory, union_bytes,
                                 verify_plan)
from aot.emit.plan.model import ArgKind
from aot.emit.plan.overlap import _max_ranges, best_shift, safe_shift
from aot.emit.plan.verify import verify_model_plan
from aot.ir.dtype import DType

F32 = DType.FLOAT32
N = 16


def buffers(n_in: int = N, n_out: int = N) -> tuple[K.Buffer, K.Buffer]:
    return (K.Buffer("p0", F32, (n_in,), K.BufferScope.INPUT, restrict=False),
            K.Buffer("out", F32, (n_out,), K.BufferScope.OUTPUT, restrict=False))


def kernel(body_of) -> K.Kernel:
    src, dst = buffers()
    i = K.index_var("i")
    return K.Kernel("k", (src, dst), body_of(src, dst, i))


def elementwise(src, dst, i):
    return K.for_range(i, N, K.store(dst, i, K.mul(K.load(src, i), 2.0)))


def reversed_copy(src, dst, i):
    return K.for_range(i, N, K.store(dst, i, K.load(src, K.sub(N - 1, i, no_wrap=True))))


def blur(src, dst, i):
    """out[i] = in[i-1] + in[i] + in[i+1] (zero outside): in[i] is read
    again after out[i] is written."""
    def at(j: K.Expr) -> K.Expr:
        inside = K.logical_and(K.ge(j, 0), K.lt(j, N))
        return K.select(inside, K.load(src, K.minimum(K.maximum(j, 0), N - 1)), 0.0)
    total = K.add(K.add(at(K.sub(i, 1, no_wrap=True)), at(i)), at(K.add(i, 1, no_wrap=True)))
    return K.for_range(i, N, K.store(dst, i, total))


def two_pass(src, dst, i):
    """Writes every output, then reads the whole input again: nothing of
    the input may be overwritten."""
    j = K.index_var("j")
    acc = K.var("s", F32)
    return K.block(K.for_range(i, N, K.store(dst, i, K.load(src, i))),
                   K.Decl(acc, K.const(0.0, F32)),
                   K.for_range(j, N, K.Assign(acc, K.add(acc, K.load(src, j)))),
                   K.store(dst, 0, acc))


def scatter(src, dst, i):
    """The store index comes from memory: no fact."""
    where = K.cast(DType.INT32, K.load(src, i))
    return K.for_range(i, N, K.store(dst, K.mod(K.maximum(where, 0), N), K.load(src, i)))


def test_elementwise_writes_over_its_input():
    k = kernel(elementwise)
    assert best_shift(k, "out", ["p0"], 16) == 0
    assert safe_shift(k, "out", ["p0"], 0)
    # writing ahead of the reads clobbers input not read yet
    assert not safe_shift(k, "out", ["p0"], 16)
    # behind the reads is always fine
    assert safe_shift(k, "out", ["p0"], -16)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 100])
def test_range_maxima_match_a_loop_over_the_ranges(n):
    """The segment tree behind summarised reads gives what updating every
    range element by element gives (empty, single, overlapping, whole)."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        r = int(rng.integers(0, 40))
        lo = rng.integers(0, n, r)
        hi = np.minimum(lo + rng.integers(0, n, r), n - 1)
        t = rng.integers(-1, 1000, r)
        got = rng.integers(-1, 500, n)
        want = got.copy()
        for a, b, v in zip(lo, hi, t):
            want[a:b + 1] = np.maximum(want[a:b + 1], v)
        _max_ranges(got, lo, hi, t)
        assert np.array_equal(got, want)


def test_reversed_read_is_refused():
    k = kernel(reversed_copy)
    assert best_shift(k, "out", ["p0"], 16) is None
    assert not safe_shift(k, "out", ["p0"], 0)
    assert not safe_shift(k, "out", ["p0"], -16)
    assert safe_shift(k, "out", ["p0"], -4 * N)       # no overlap at all


def test_stencil_needs_one_element_behind():
    k = kernel(blur)
    assert not safe_shift(k, "out", ["p0"], 0)
    assert safe_shift(k, "out", ["p0"], -4)
    assert best_shift(k, "out", ["p0"], 4) == -4
    assert best_shift(k, "out", ["p0"], 16) == -16


@pytest.mark.parametrize("body", [two_pass, scatter], ids=["two_pass", "scatter"])
def test_no_fact(body):
    k = kernel(body)
    assert best_shift(k, "out", ["p0"], 16) is None
    assert not safe_shift(k, "out", ["p0"], 0)


@pytest.mark.parametrize("body,shift", [(elementwise, 0), (blur, -4)])
def test_a_proven_overlap_computes_the_same(body, shift):
    """Run the kernel with the output really placed over the input (one
    memory, the evaluator's order) and compare with separate buffers."""
    k = kernel(body)
    assert safe_shift(k, "out", ["p0"], shift)
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    want = {"p0": x.copy(), "out": np.zeros(N, np.float32)}
    run_kernel(k, want)
    # one memory: out[i] is mem[i], p0[i] is mem[d + i]
    d = -shift // 4
    mem = np.zeros(N + d, np.float32)
    mem[d:] = x
    np.testing.assert_array_equal(_run_aliased(k, mem, d), want["out"])


_OPS = {K.BinaryOperator.ADD: lambda a, b: a + b, K.BinaryOperator.SUB: lambda a, b: a - b,
        K.BinaryOperator.MUL: lambda a, b: a * b, K.BinaryOperator.MIN: min,
        K.BinaryOperator.MAX: max, K.BinaryOperator.GE: lambda a, b: a >= b,
        K.BinaryOperator.LT: lambda a, b: a < b, K.BinaryOperator.AND: lambda a, b: a and b}


def _value(e: K.Expr, env: dict, mem: np.ndarray, d: int):
    if isinstance(e, K.Const):
        return e.value
    if isinstance(e, K.Var):
        return env[e.name]
    if isinstance(e, K.Load):
        return mem[(0 if e.buffer.name == "out" else d) + int(_value(e.index, env, mem, d))]
    if isinstance(e, K.BinOp):
        r = _OPS[e.op](_value(e.a, env, mem, d), _value(e.b, env, mem, d))
        return np.float32(r) if e.dtype is F32 else r
    assert isinstance(e, K.Select), type(e)
    return _value(e.a if _value(e.cond, env, mem, d) else e.b, env, mem, d)


def _run_aliased(k: K.Kernel, mem: np.ndarray, d: int) -> np.ndarray:
    """Interpret ``k`` with ``out`` at mem[0:] and ``p0`` at mem[d:], one
    statement after the other (the C order of a kernel without restrict)."""
    env: dict[str, object] = {}

    def run(s):
        if isinstance(s, K.Block):
            for x in s.stmts:
                run(x)
        elif isinstance(s, K.For):
            start = int(_value(s.start, env, mem, d))
            for v in range(start, start + int(_value(s.extent, env, mem, d))):
                env[s.var.name] = v
                run(s.body)
        else:
            assert isinstance(s, K.Store), type(s)
            value = _value(s.value, env, mem, d)
            mem[int(_value(s.index, env, mem, d))] = value
    run(k.body)
    return mem[:N].copy()


def repeated(src, dst, i):
    """The same elementwise pass three times (r appears in no index): the
    first pass writes out[i] before the last reads in[i]."""
    r = K.index_var("r")
    return K.for_range(r, 3, K.for_range(i, N, K.store(dst, i, K.load(src, i))))


def tiled_product(src, dst, i):
    """A pointwise-convolution-shaped nest: for each output row, a loop
    over weights (w: in no index of the input or the output) around a read
    of a whole input row; then the row is stored.  Nested collapsible loops
    (w, then r inside it) and a reduction read after earlier rows' writes."""
    w, r, j = K.index_var("w"), K.index_var("r"), K.index_var("j")
    acc = K.var("s", F32)
    row = 4
    reads = K.for_range(w, 5, K.for_range(r, 3, K.for_range(
        j, row, K.Assign(acc, K.add(acc, K.load(src, K.add(K.mul(i, row), j)))))))
    return K.for_range(i, N // row, K.block(
        K.Decl(acc, K.const(0.0, F32)), reads,
        K.for_range(j, row, K.store(dst, K.add(K.mul(i, row), j), acc))))


@pytest.mark.parametrize("body", [elementwise, reversed_copy, blur, two_pass, repeated,
                                  tiled_product])
@pytest.mark.parametrize("max_work", [1 << 21, 24, 60, 100])
def test_two_iterations_of_an_index_free_loop_decide_as_all(body, max_work, monkeypatch):
    """A loop whose variable no event depends on is walked at its first
    and last iteration only: every answer is the one of the full
    enumeration, with the budgets counted as if every iteration was walked
    (a small MAX_WORK summarises the same loops either way)."""
    import aot.emit.plan.overlap as ov

    k = kernel(body)
    monkeypatch.setattr(ov, "MAX_WORK", max_work)
    shifts = range(-4 * N - 8, 12, 4)

    def answers() -> list:
        ov._TRACES.clear()
        tr = ov._trace(k, "out", ("p0",))
        first: dict[int, int] = {}          # the earliest write of each address
        for t, a in ([] if tr is None else zip(tr.write_time.tolist(), tr.write_addr.tolist())):
            first[a] = min(t, first.get(a, t))
        return [None if tr is None else tr.last_read.tolist(), first] + \
               [best_shift(k, "out", ["p0"], a) for a in (4, 16)] + \
               [safe_shift(k, "out", ["p0"], s) for s in shifts]
    fast = answers()
    monkeypatch.setattr(ov._Tracer, "_collapsible", lambda self, s: False)
    assert answers() == fast
    ov._TRACES.clear()


def test_a_repeated_pass_may_not_write_over_its_input():
    k = kernel(repeated)
    assert not safe_shift(k, "out", ["p0"], 0)
    assert safe_shift(k, "out", ["p0"], -4 * N)


# -- the planner --------------------------------------------------------------

def test_shifted_pairs_are_placed_and_bounded():
    # a (64 B) -> b (96 B) may start 32 B before a; c is an unrelated tensor
    tensors = [TensorLife("a", 64, 0, 1), TensorLife("b", 96, 1, 2), TensorLife("c", 32, 0, 2)]
    pairs = [InPlace("b", "a", -32)]
    assert union_bytes(64, 96, -32) == 96
    assert lower_bound(tensors, pairs) == 96 + 32
    assert lower_bound(tensors) == 64 + 96 + 32
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert plan.inplace == (InPlace("b", "a", -32),)
    assert plan.offsets["b"] == plan.offsets["a"] - 32
    assert plan.arena_bytes == 128
    wrong = dataclasses.replace(plan, offsets={**plan.offsets, "b": plan.offsets["a"]})
    with pytest.raises(AssertionError, match="is placed at offsets"):
        verify_plan(tensors, wrong)


# -- the model plan and its verifier -------------------------------------------

SOFTMAXES = """def @main(%x: Tensor[(4, 64), float32]) {
  %0 = nn.softmax(%x);
  %1 = nn.softmax(%0);
  %2 = nn.softmax(%1);
  nn.softmax(%2)
}"""


@pytest.fixture(scope="module")
def softmax_plan():
    return plan_model(aot.parse(SOFTMAXES), "sm")


def test_softmax_chain_runs_in_place(softmax_plan):
    p = softmax_plan
    assert p.arena_bytes == p.arena_lower_bound_bytes == 1024
    assert p.arena_whole_tensor_bound_bytes == 2048
    assert [(o.call, o.shift) for o in p.arena_overlaps] == [(1, 0), (2, 0)]
    kernels = {k.name: k for k in p.kernels}
    for o in p.arena_overlaps:
        params = kernels[p.calls[o.call].kernel].params
        assert not params[o.out_arg].restrict and not params[o.in_args[0]].restrict
    assert [t.key for t in p.arena_tensors] == ["t1", "t2", "t3"]


def _move(p, call: int, arg: int, offset: int):
    calls = list(p.calls)
    args = list(calls[call].args)
    args[arg] = dataclasses.replace(args[arg], offset=offset)
    calls[call] = dataclasses.replace(calls[call], args=tuple(args))
    return dataclasses.replace(p, calls=tuple(calls))


def test_verifier_catches_wrong_overlaps(softmax_plan):
    p = softmax_plan
    verify_model_plan(p)
    with pytest.raises(AssertionError, match="no overlap is declared"):
        verify_model_plan(dataclasses.replace(p, arena_overlaps=()))
    shifted = (dataclasses.replace(p.arena_overlaps[0], shift=16), *p.arena_overlaps[1:])
    with pytest.raises(AssertionError, match="placed 0 bytes apart, declared 16"):
        verify_model_plan(dataclasses.replace(p, arena_overlaps=shifted))
    # the output of call 1 moved 512 bytes ahead of its input: declared so,
    # but softmax's loop nest would clobber input rows not read yet
    o = p.arena_overlaps[0]
    assert p.calls[o.call].args[o.out_arg].kind is ArgKind.ARENA
    moved = _move(p, o.call, o.out_arg, 512)
    moved = dataclasses.replace(moved, arena_bytes=2048, arena_overlaps=(
        dataclasses.replace(o, shift=512), *p.arena_overlaps[1:]))
    with pytest.raises(AssertionError, match="loop nest does not allow"):
        verify_model_plan(moved)


@pytest.mark.parametrize("seed", range(6))
def test_random_shifted_chains_plan_validly(seed):
    """Random chains with branches and random shifted pairs: the plan
    verifies, is at least the bound, and no worse than ignoring the pairs."""
    rng = np.random.default_rng(seed)
    tensors, pairs = [], []
    for k in range(12):
        size = int(rng.integers(1, 9)) * 16
        end = k + 1 + int(rng.integers(0, 3) == 0) * int(rng.integers(1, 4))
        tensors.append(TensorLife(f"t{k}", size, k, end))
    for k in range(1, 12):
        inp, out = tensors[k - 1], tensors[k]
        if inp.end == out.start and rng.integers(0, 4):
            pairs.append(InPlace(out.key, inp.key, -16 * int(rng.integers(0, 3))))
    plan = plan_memory(tensors, pairs)
    verify_plan(tensors, plan)
    assert plan.arena_bytes >= lower_bound(tensors, pairs)
    assert plan.arena_bytes <= plan_memory(tensors).arena_bytes


def _pointwise(channels_out: int, dtype: str = "float32") -> str:
    if dtype == "int8":
        n = channels_out * 8
        w = (f'reshape(cast(subtract(mod(arange(0f, {n}f, 1f, start=0f, stop={n}f, step=1f, '
             f'dtype="float32"), 256f), 128f), dtype="int8"), newshape=[{channels_out}, 8, 1, 1])')
        conv = (f"qnn.requantize(qnn.conv2d(%0, {w}, 0, 0, 0.5f, 0.25f), 0.125f, 0, 4f, 0, "
                f'out_dtype="int8")')
        return (f'def @main(%x: Tensor[(1, 8, 6, 8), int8]) {{\n  %0 = maximum(%x, 0i8);\n'
                f'  %1 = {conv};\n  max(%1, axis=[1])\n}}')
    return (f"def @main(%x: Tensor[(1, 8, 6, 8), float32], "
            f"%w: Tensor[({channels_out}, 8, 1, 1), float32]) {{\n  %0 = nn.relu(%x);\n"
            f"  %1 = nn.conv2d(%0, %w, channels={channels_out}, kernel_size=[1, 1]);\n"
            f"  nn.softmax(%1)\n}}")


@pytest.mark.parametrize("dtype", ["float32"])
def test_staged_pointwise_writes_over_its_input(dtype):
    """Float32 channels-first 1x1 convolutions run staged (a local array of
    one column tile's channels) while that array stays within STAGE_BYTES,
    and then the output may take the input's place; wider ones keep the
    plain order, where every channel tile reads the whole input again.
    (The int8 DSP convolution kernel: test_int8_dsp_pointwise_...)"""
    def pointwise_call(p):
        staged = {k.name for k in p.kernels
                  if any(b.scope is K.BufferScope.LOCAL and b.name.startswith("stage")
                         for b in _buffers(k))}
        return staged, {p.calls[o.call].kernel for o in p.arena_overlaps if o.shift == 0}
    narrow = plan_model(aot.parse(_pointwise(16, dtype)), "pw")
    staged, over = pointwise_call(narrow)
    assert len(staged) == 1 and staged <= over
    wide = plan_model(aot.parse(_pointwise(72, dtype)), "pw")
    staged, over = pointwise_call(wide)
    assert not staged


def test_int8_dsp_pointwise_writes_over_its_input():
    """The int8 DSP convolution kernel (qnn_conv_dsp) reads a pointwise
    layer's positions in order, each tile's words in a loop without tests
    (plane_copy): its output takes the input's place (shift 0), which the
    analysis proves only if the product loops (no input reads) do not use
    up its budget and no untaken copy reads earlier positions."""
    p = plan_model(aot.parse(_pointwise(8, "int8")), "pw")
    dsp = {k.name for k in p.kernels if any(b.name.startswith("patch") for b in k.params)}
    over = {p.calls[o.call].kernel for o in p.arena_overlaps if o.shift == 0}
    assert len(dsp) == 1 and dsp <= over, (dsp, over)


def _buffers(k: K.Kernel) -> list[K.Buffer]:
    from aot.emit.kernel.walk import buffers_in
    return buffers_in(k.body)
