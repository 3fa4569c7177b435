"""ONNX control flow: If as a Relay ``if``, Loop as a local recursive
function (a C loop), compared with onnxruntime, the reference interpreter
and the compiled C."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import aot  # noqa: E402
from aot.compiler import plan  # noqa: E402
from aot.diagnostics import DiagnosticError  # noqa: E402
from aot.ir.expr import If, Let  # noqa: E402
from aot.ir.visitor import post_order  # noqa: E402
from onnx_helpers import check, model, node, run_ort  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(19)


def vi(name: str, dt: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dt, shape)


def typed(m: onnx.ModelProto, *outs: onnx.ValueInfoProto) -> onnx.ModelProto:
    """``m`` with the given output types (ONNX shape inference leaves a
    Loop's outputs untyped)."""
    by_name = {o.name: o for o in outs}
    for o in m.graph.output:
        if o.name in by_name:
            o.CopyFrom(by_name[o.name])
    return m


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def compiled_matches(m: onnx.ModelProto, feeds: dict[str, np.ndarray], name: str,
                     loop: bool = True) -> None:
    """``aot.compile`` + ``aot.load`` computes what onnxruntime does; a
    loop (or, with ``loop`` False, an ``if``) over tensors compiles over
    the static arena (no object pool)."""
    want = run_ort(m, feeds)
    art = aot.compile(aot.from_onnx(m), tempfile.mkdtemp(), name=name, memory_report=True)
    assert art.metadata["pool_bytes"] == 0
    assert art.metadata.get("loops" if loop else "branches")
    report = (art.root / "memory.txt").read_text()
    assert "object pool" not in report and (loop or "branch spans" in report)
    fn = aot.load(art)
    got = fn(*feeds.values())
    got = list(got) if isinstance(got, tuple) else [got]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def kinds(mod: aot.IRModule) -> set[type]:
    return {type(e) for e in post_order(mod["main"])}


# ====================================================================== If

def if_model(n_out: int = 1) -> onnx.ModelProto:
    """``o = x + y if sum(x) > 0 else x * y`` (and ``x - y`` / ``y`` as a
    second output)."""
    then_nodes = [node("Add", ["x", "y"], ["t0"]), node("Sub", ["x", "y"], ["t1"])]
    else_nodes = [node("Mul", ["x", "y"], ["e0"]), node("Identity", ["y"], ["e1"])]
    then_g = helper.make_graph(then_nodes[:n_out], "then", [],
                               [vi(f"t{i}", F, [2, 3]) for i in range(n_out)])
    else_g = helper.make_graph(else_nodes[:n_out], "else", [],
                               [vi(f"e{i}", F, [2, 3]) for i in range(n_out)])
    outs = [f"o{i}" for i in range(n_out)]
    return model([node("ReduceSum", ["x"], ["s"], keepdims=0), node("Greater", ["s", "zero"], ["b"]),
                  node("If", ["b"], outs, then_branch=then_g, else_branch=else_g)],
                 {"x": f32(2, 3), "y": f32(2, 3)}, outs, inits={"zero": np.float32(0)})


@pytest.mark.parametrize("n_out", [1, 2])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_matches_onnxruntime(n_out: int, sign: float) -> None:
    x = np.abs(f32(2, 3)) * sign
    check(if_model(n_out), {"x": x, "y": f32(2, 3)})


def test_if_is_a_relay_if_and_compiles() -> None:
    m = if_model(2)
    assert If in kinds(aot.from_onnx(m))
    for sign in (1.0, -1.0):
        compiled_matches(m, {"x": np.abs(f32(2, 3)) * sign, "y": f32(2, 3)}, "onnx_if", loop=False)


def test_if_in_a_loop_body_compiles_on_the_arena() -> None:
    """``for 5 steps: s = s + x if sum(s) > 0 else s * 0.5``: a C ``if``
    inside the C loop, no object pool (the whole-language backend's pool
    took 560 bytes)."""
    then_g = helper.make_graph([node("Add", ["s", "x"], ["t"])], "then", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([node("Mul", ["s", "half"], ["e"])], "else", [],
                               [vi("e", F, [2, 3])])
    body = helper.make_graph(
        [node("Identity", ["cin"], ["cout"]), node("ReduceSum", ["s"], ["ss"], keepdims=0),
         node("Greater", ["ss", "zero"], ["b"]),
         node("If", ["b"], ["s2"], then_branch=then_g, else_branch=else_g)],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("s", F, [2, 3])],
        [vi("cout", B, []), vi("s2", F, [2, 3])])
    m = model([node("Loop", ["M", "", "x"], ["sf"], body=body)], {"x": f32(2, 3)}, ["sf"],
              inits={"M": np.int64(5), "half": np.float32(0.5), "zero": np.float32(0)})
    m = typed(m, vi("sf", F, [2, 3]))
    p = plan(aot.from_onnx(m), "loopif")
    assert (p.program, p.pool_bytes, len(p.loops), len(p.branches)) == (None, 0, 1, 1)
    for sign in (1.0, -1.0):
        compiled_matches(m, {"x": np.abs(f32(2, 3)) * sign}, "loopif")


def test_if_with_a_constant_condition_is_its_branch() -> None:
    then_g = helper.make_graph([node("Add", ["x", "x"], ["t"])], "then", [], [vi("t", F, [3])])
    else_g = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [3])])
    m = model([node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
              {"x": f32(3)}, ["o"], inits={"c": np.array([False])})
    assert If not in kinds(aot.from_onnx(m))
    check(m, {"x": f32(3)})


def test_if_branches_of_different_shapes_are_refused() -> None:
    then_g = helper.make_graph([node("Identity", ["x"], ["t"])], "then", [], [vi("t", F, [3])])
    else_g = helper.make_graph([node("Concat", ["x", "x"], ["e"], axis=0)], "else", [],
                               [vi("e", F, [6])])
    m = model([node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
              {"x": f32(3), "c": np.array(True)}, ["o"], infer=False)
    m = typed(m, vi("o", F, [3]))
    with pytest.raises(DiagnosticError, match="same static types"):
        aot.from_onnx(m)


# ==================================================================== Loop

def counting_loop(trips: int = 4) -> onnx.ModelProto:
    """``for i < M: s += x; ys[i] = s * i`` (a scan output)."""
    body = helper.make_graph(
        [node("Identity", ["cin"], ["cout"]), node("Add", ["s", "x"], ["s2"]),
         node("Cast", ["i"], ["fi"], to=F), node("Mul", ["s2", "fi"], ["y"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("s", F, [2, 3])],
        [vi("cout", B, []), vi("s2", F, [2, 3]), vi("y", F, [2, 3])])
    m = model([node("Loop", ["M", "", "x"], ["sf", "ys"], body=body)], {"x": f32(2, 3)},
              ["sf", "ys"], inits={"M": np.int64(trips)})
    return typed(m, vi("sf", F, [2, 3]), vi("ys", F, [trips, 2, 3]))


def while_loop() -> onnx.ModelProto:
    """``while cond: s = s + s; cond = sum(s) < 100`` (no trip count)."""
    body = helper.make_graph(
        [node("Add", ["s", "s"], ["s2"]), node("ReduceSum", ["s2"], ["t"], keepdims=0),
         node("Less", ["t", "lim"], ["cout"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("s", F, [3])],
        [vi("cout", B, []), vi("s2", F, [3])])
    m = model([node("Loop", ["", "c0", "x"], ["sf"], body=body)],
              {"x": f32(3), "c0": np.array(True)}, ["sf"], inits={"lim": np.float32(100)})
    return typed(m, vi("sf", F, [3]))


def several_states() -> onnx.ModelProto:
    """Trip count and condition both: three loop-carried tensors of two
    dtypes, leaving early when the counter reaches ``stop``."""
    body = helper.make_graph(
        [node("Add", ["a", "b"], ["a2"]), node("Mul", ["b", "half"], ["b2"]),
         node("Add", ["k", "one"], ["k2"]), node("Less", ["k2", "stop"], ["cout"])],
        "body", [vi("i", I64, [1]), vi("cin", B, [1]), vi("a", F, [2, 2]), vi("b", F, [2, 2]),
                 vi("k", I64, [])],
        [vi("cout", B, []), vi("a2", F, [2, 2]), vi("b2", F, [2, 2]), vi("k2", I64, [])])
    m = model([node("Loop", ["M", "c0", "a", "b", "k0"], ["af", "bf", "kf"], body=body)],
              {"a": f32(2, 2), "b": f32(2, 2), "M": np.array(10, np.int64),
               "stop": np.array(5, np.int64)}, ["af", "bf", "kf"],
              inits={"c0": np.array([True]), "k0": np.int64(0), "half": np.float32(0.5),
                     "one": np.int64(1)})
    return typed(m, vi("af", F, [2, 2]), vi("bf", F, [2, 2]), vi("kf", I64, []))


def test_counting_loop_with_scan_output() -> None:
    m = counting_loop()
    mod = aot.from_onnx(m)
    assert Let in kinds(mod)
    check(m, {"x": f32(2, 3)})
    compiled_matches(m, {"x": f32(2, 3)}, "onnx_for")


def test_while_loop() -> None:
    x = np.abs(f32(3)) + 0.1
    check(while_loop(), {"x": x, "c0": np.array(True)})
    check(while_loop(), {"x": x, "c0": np.array(False)})
    compiled_matches(while_loop(), {"x": x, "c0": np.array(True)}, "onnx_while")


@pytest.mark.parametrize("trips,stop", [(10, 5), (3, 5), (0, 5), (10, 0)])
def test_several_loop_carried_tensors(trips: int, stop: int) -> None:
    feeds = {"a": f32(2, 2), "b": f32(2, 2), "M": np.array(trips, np.int64),
             "stop": np.array(stop, np.int64)}
    check(several_states(), feeds)


def test_several_loop_carried_tensors_compiled() -> None:
    feeds = {"a": f32(2, 2), "b": f32(2, 2), "M": np.array(10, np.int64),
             "stop": np.array(5, np.int64)}
    compiled_matches(several_states(), feeds, "onnx_loop3")


def test_scan_outputs_need_a_static_trip_count() -> None:
    m = counting_loop()
    m.graph.initializer.pop()
    m.graph.input.append(vi("M", I64, []))
    with pytest.raises(DiagnosticError, match="scan outputs need a number of iterations"):
        aot.from_onnx(m)


def test_a_loop_without_trip_count_and_condition_is_refused() -> None:
    m = counting_loop()
    m.graph.node[0].input[0] = ""
    with pytest.raises(DiagnosticError, match="never ends"):
        aot.from_onnx(m)


def test_scripted_while_with_short_circuit_and() -> None:
    """``while bool(sum(|y|) < 8) and i < 6: y = y * 1.5 + 0.1; i += 1``
    as ``torch.jit.script`` + the classic exporter write it: the counter's
    next value ``k2`` is a loop-carried output and also read by the then
    branch of the ``If`` computing ``and`` (the else branch returns a
    main-graph constant).  ``k2`` must be computed outside the branch
    (it crashed the dataflow backend's loop lowering)."""
    then_g = helper.make_graph([node("Less", ["k2", "six"], ["t"])], "then", [],
                               [vi("t", B, [])])
    else_g = helper.make_graph([node("Identity", ["no"], ["e"])], "else", [], [vi("e", B, [])])
    body = helper.make_graph(
        [node("Mul", ["y", "k15"], ["m"]), node("Add", ["m", "tenth"], ["y2"]),
         node("Add", ["k", "one"], ["k2"]), node("Abs", ["y2"], ["a"]),
         node("ReduceSum", ["a"], ["s"], keepdims=0), node("Less", ["s", "lim"], ["b"]),
         node("If", ["b"], ["cout"], then_branch=then_g, else_branch=else_g)],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("y", F, [1, 4]), vi("k", I64, [])],
        [vi("cout", B, []), vi("y2", F, [1, 4]), vi("k2", I64, [])])
    m = model([node("Abs", ["x"], ["ax"]), node("ReduceSum", ["ax"], ["sx"], keepdims=0),
               node("Less", ["sx", "lim"], ["c0"]),
               node("Loop", ["M", "c0", "x", "zero"], ["yf", "kf"], body=body)],
              {"x": f32(1, 4)}, ["yf", "kf"],
              inits={"M": np.int64(2**63 - 1), "zero": np.int64(0), "one": np.int64(1),
                     "six": np.int64(6), "no": np.array(False), "k15": np.float32(1.5),
                     "tenth": np.float32(0.1), "lim": np.float32(8.0)})
    m = typed(m, vi("yf", F, [1, 4]), vi("kf", I64, []))
    x = np.abs(f32(1, 4))
    # the counter stops it (6 trips), the sum does (a few), no trip at all
    for feed in (x * 0.01 + 0.01, x + 0.5, x + 2.1):
        compiled_matches(m, {"x": feed}, "short_and")
