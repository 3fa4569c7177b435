"""FirstOrderGradient / aot.gradient: hand-derived gradients, central
differences, the refusals, and the gradient compiled to C."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import aot
from tests.cases.if_programs import IF_PROGRAM, if_args
from aot import builder as B
from aot.diagnostics import DiagnosticError
from aot.passes.manager import PassContext, get_pass

MLP = """
def @main(%x: Tensor[(2, 3), float64], %w: Tensor[(4, 3), float64], %b: Tensor[(4,), float64],
          %label: Tensor[(2, 4), float64]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = tanh(%1);
  %3 = nn.log_softmax(%2);
  %4 = multiply(%3, %label);
  %5 = sum(%4);
  negative(%5)
}
"""


def central_differences(mod: aot.IRModule, args: list[np.ndarray],
                        eps: float = 1e-6) -> list[np.ndarray]:
    out = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up = [x.copy() for x in args]
            down = [x.copy() for x in args]
            up[i][idx] += eps
            down[i][idx] -= eps
            g[idx] = (np.sum(aot.interpret(mod, *up)) - np.sum(aot.interpret(mod, *down))) / (2 * eps)
        out.append(g)
    return out


def mlp_args(rng: np.random.Generator) -> list[np.ndarray]:
    label = np.eye(4)[[1, 3]]
    return [rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4),
            label]


def test_hand_derived() -> None:
    """f(x, y) = x * y + exp(x): df/dx = y + exp(x), df/dy = x."""
    x = B.var("x", B.tensor((3,), "float64"))
    y = B.var("y", B.tensor((3,), "float64"))
    mod = B.module(main=B.function([x, y], B.add(B.multiply(x, y), B.exp(x))))
    xv, yv = np.array([0.5, -1.0, 2.0]), np.array([3.0, 0.25, -2.0])
    result, (dx, dy) = aot.interpret(aot.gradient(mod), xv, yv)
    np.testing.assert_allclose(result, xv * yv + np.exp(xv))
    np.testing.assert_allclose(dx, yv + np.exp(xv))
    np.testing.assert_allclose(dy, xv)


def test_mlp_cross_entropy_against_central_differences() -> None:
    mod = aot.parse(MLP)
    args = mlp_args(np.random.default_rng(1))
    result, grads = aot.interpret(aot.gradient(mod), *args)
    np.testing.assert_allclose(result, aot.interpret(mod, *args))
    for got, want in zip(grads, central_differences(mod, args)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_mlp_hand_derived_softmax_cross_entropy() -> None:
    """d(-sum(label * log_softmax(z)))/dz = softmax(z) - label, row by row."""
    z = B.var("z", B.tensor((2, 4), "float64"))
    label = np.eye(4)[[0, 2]]
    loss = B.negative(B.sum(B.multiply(B.nn.log_softmax(z), B.const(label))))
    zv = np.random.default_rng(2).standard_normal((2, 4))
    _, (dz,) = aot.interpret(aot.gradient(B.module(main=B.function([z], loss))), zv)
    softmax = np.exp(zv) / np.exp(zv).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dz, softmax - label, rtol=1e-12)


def test_shared_node_counts_every_use() -> None:
    """A graph binding used twice: d(t * t)/dx with t = sin(x) is 2 sin cos."""
    x = B.var("x", B.tensor((4,), "float64"))
    t = B.sin(x)
    mod = B.module(main=B.function([x], B.multiply(t, t)))
    xv = np.linspace(-1, 1, 4)
    _, (dx,) = aot.interpret(aot.gradient(mod), xv)
    np.testing.assert_allclose(dx, 2 * np.sin(xv) * np.cos(xv))


def test_tuple_result_and_projections() -> None:
    """A tuple result is seeded with ones in every field; tuples inside
    the program flow gradients through their fields."""
    src = """
    def @main(%a: Tensor[(3,), float64], %b: Tensor[(3,), float64]) {
      %0 = (%a, multiply(%a, %b));
      %1 = %0.1;
      (exp(%1), %0.0)
    }
    """
    mod = aot.parse(src)
    av, bv = np.array([0.1, 0.2, -0.3]), np.array([1.0, -2.0, 0.5])
    (r0, r1), (da, db) = aot.interpret(aot.gradient(mod), av, bv)
    np.testing.assert_allclose(r0, np.exp(av * bv))
    np.testing.assert_allclose(r1, av)
    np.testing.assert_allclose(da, np.exp(av * bv) * bv + 1)
    np.testing.assert_allclose(db, np.exp(av * bv) * av)
    for got, want in zip((da, db), central_differences(mod, [av, bv])):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unused_and_integer_parameters_get_zeros() -> None:
    src = """
    def @main(%x: Tensor[(2,), float64], %unused: Tensor[(3,), float64],
              %k: Tensor[(2,), int32]) {
      %0 = cast(%k, dtype="float64");
      sum(multiply(%x, %0))
    }
    """
    _, (dx, du, dk) = aot.interpret(aot.gradient(aot.parse(src)), np.array([1.0, 2.0]),
                                    np.ones(3), np.array([3, -4], "int32"))
    np.testing.assert_array_equal(dx, [3.0, -4.0])
    np.testing.assert_array_equal(du, np.zeros(3))
    np.testing.assert_array_equal(dk, [0, 0])
    assert dk.dtype == np.int32


def test_a_let_chain() -> None:
    src = """
    def @main(%x: Tensor[(3,), float64]) {
      let %a = sigmoid(%x);
      let %b = %a;
      let %c = multiply(%b, %x);
      mean(%c)
    }
    """
    mod = aot.parse(src)
    xv = np.array([0.3, -1.2, 2.0])
    _, (dx,) = aot.interpret(aot.gradient(mod), xv)
    s = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(dx, (s * (1 - s) * xv + s) / 3)


@pytest.mark.parametrize("src, what", [
    ("""def @main(%x: Tensor[(2,), float32]) {
          match (%x) { _ => exp(%x) } }""", "`match`"),
    ("""def @main(%x: Tensor[(2,), float32]) {
          let %r = ref(%x); ref_read(%r) }""", "reference"),
    ("""def @main(%x: Tensor[(2,), float32]) {
          let %f = fn (%y: Tensor[(2,), float32]) { exp(%y) }; %f(%x) }""", "local function"),
    ("""def @g(%y: Tensor[(2,), float32]) { exp(%y) }
        def @main(%x: Tensor[(2,), float32]) { @g(%x) }""", "global function"),
])
def test_refuses_what_first_order_cannot_differentiate(src: str, what: str) -> None:
    with pytest.raises(DiagnosticError, match=f"first-order gradient of @main: .*{what}"):
        aot.gradient(aot.parse(src))


def test_refuses_an_operator_without_a_rule_naming_it() -> None:
    src = """def @main(%x: Tensor[(3, 3), float32]) {
               einsum((%x,), equation="ii->i") }"""
    with pytest.raises(DiagnosticError, match="operator einsum: the gradient rule does not "
                                              "handle repeated axes"):
        aot.gradient(aot.parse(src))
    src = """def @main(%x: Tensor[(4,), float32]) { round(%x) }"""
    with pytest.raises(DiagnosticError, match="operator round has no gradient rule "
                                              r"\(piecewise constant"):
        aot.gradient(aot.parse(src))


def test_an_operator_without_a_rule_that_gets_no_gradient_is_fine() -> None:
    """argmax's integer result gets no adjoint, so its lack of a rule does
    not matter."""
    src = """def @main(%x: Tensor[(4,), float64]) {
               (exp(%x), argmax(%x)) }"""
    (_, idx), (dx,) = aot.interpret(aot.gradient(aot.parse(src)), np.arange(4.0))
    assert int(idx) == 3
    np.testing.assert_allclose(dx, np.exp(np.arange(4.0)))


def test_modes_and_entry() -> None:
    mod = aot.parse(MLP)
    with pytest.raises(DiagnosticError, match="unknown gradient mode 'reverse'"):
        aot.gradient(mod, mode="reverse")
    with pytest.raises(DiagnosticError, match="no function @train"):
        aot.gradient(mod, entry="train")


def test_registered_as_relays_pass() -> None:
    src = """
    def @main(%x: Tensor[(2,), float64]) { exp(%x) }
    def @f(%x: Tensor[(2,), float64]) { multiply(%x, %x) }
    """
    p = get_pass("FirstOrderGradient")
    with PassContext(options={"FirstOrderGradient": {"entry": "f"}}):
        out = p(aot.parse(src))
    _, (dx,) = aot.interpret(out, np.array([1.0, -3.0]), entry="f")
    np.testing.assert_array_equal(dx, [2.0, -6.0])
    np.testing.assert_allclose(aot.interpret(out, np.zeros(2)), np.ones(2))


def test_gradient_compiles_to_dataflow_c(tmp_path: Path) -> None:
    """The gradient of a dataflow program compiles to kernels on the arena,
    without an object pool, and equals the interpreter."""
    src = MLP.replace("float64", "float32")
    grad = aot.gradient(aot.parse(src))
    art = aot.compile(grad, tmp_path / "art", name="mlpgrad")
    meta = json.loads((tmp_path / "art" / "metadata.json").read_text())
    assert meta["pool_bytes"] == 0
    rng = np.random.default_rng(3)
    args = [a.astype(np.float32) for a in mlp_args(rng)]
    got = aot.load(art)(*args)
    want = aot.interpret(grad, *args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_readme_gradient_block_runs() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.findall(r"```python gradient\n(.*?)```", readme, flags=re.S)[0]
    env: dict[str, object] = {}
    exec(block, env)  # noqa: S102 - our own README
    x, w = env["x"], env["w"]
    t = np.tanh(np.asarray(x, np.float64) @ np.asarray(w, np.float64).T)
    np.testing.assert_allclose(env["loss"], t.mean(), rtol=1e-6)
    d0 = (1 - t * t) / t.size
    np.testing.assert_allclose(env["dw"], d0.T @ np.asarray(x, np.float64), rtol=1e-5)



def cnn() -> aot.IRModule:
    x = B.var("x", B.tensor((1, 2, 6, 6), "float32"))
    w1 = B.var("w1", B.tensor((4, 2, 3, 3), "float32"))
    w2 = B.var("w2", B.tensor((4, 1, 3, 3), "float32"))
    w3 = B.var("w3", B.tensor((3, 4), "float32"))
    h = B.nn.relu(B.nn.conv2d(x, w1, padding=[1, 1], channels=4, kernel_size=[3, 3]))
    h = B.nn.conv2d(h, w2, strides=[2, 2], padding=[1, 1], groups=4, channels=4,
                    kernel_size=[3, 3])
    h = B.nn.dense(B.nn.batch_flatten(B.nn.global_avg_pool2d(h)), w3)
    label = B.const(np.eye(3, dtype=np.float32)[[2]])
    loss = B.negative(B.sum(B.multiply(B.nn.log_softmax(h), label)))
    return B.module(main=B.function([x, w1, w2, w3], loss))


def test_cnn_gradient_in_c_equals_the_interpreter(tmp_path: Path) -> None:
    """conv2d (dense and depthwise, strided) + pooling + dense: the gradient
    compiles to dataflow C (no pool) equal to the interpreter."""
    grad = aot.gradient(cnn())
    art = aot.compile(grad, tmp_path / "art", name="cnngrad")
    assert json.loads((tmp_path / "art" / "metadata.json").read_text())["pool_bytes"] == 0
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in [(1, 2, 6, 6), (4, 2, 3, 3), (4, 1, 3, 3), (3, 4)]]
    got = aot.load(art)(*args)
    want = aot.interpret(grad, *args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_conv2d_layouts_and_groups_the_rule_does_not_handle() -> None:
    src = """def @main(%x: Tensor[(1, 4, 4, 2), float32], %w: Tensor[(3, 3, 2, 4), float32]) {
               nn.conv2d(%x, %w, data_layout="NHWC", kernel_layout="HWIO") }"""
    with pytest.raises(DiagnosticError, match="operator nn.conv2d: .*NCHW data and OIHW"):
        aot.gradient(aot.parse(src))
    src = """def @main(%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
               nn.conv2d(%x, %w, groups=2) }"""
    with pytest.raises(DiagnosticError, match="operator nn.conv2d: .*not groups=2"):
        aot.gradient(aot.parse(src))


def test_rules_refuse_attributes_they_do_not_handle() -> None:
    cases = [
        ("""def @main(%x: Tensor[(1, 1, 4, 4), float32]) {
              nn.avg_pool2d(%x, pool_size=[3, 3], padding=[1, 1]) }""",
         "operator nn.avg_pool2d: .*count_include_pad=True"),
        ("""def @main(%x: Tensor[(2, 3), float32]) {
              nn.pad(%x, 0f, pad_width=[[1, 1], [0, 0]], pad_mode="edge") }""",
         "operator nn.pad: .*constant padding"),
        ("""def @main(%x: Tensor[(1, 1, 5, 5), float32]) {
              nn.max_pool2d(%x, pool_size=[2, 2]) }""",
         "operator nn.max_pool2d: .*tile the input"),
        ("""def @main(%x: Tensor[(6,), float32]) {
              strided_slice(%x, begin=[4], end=[0], strides=[-2]) }""",
         "operator strided_slice: .*positive strides"),
    ]
    for src, message in cases:
        with pytest.raises(DiagnosticError, match=message):
            aot.gradient(aot.parse(src))


@pytest.mark.parametrize("src, args, want", [
    ("def @main(%x: Tensor[(2,), float32]) { %x }", [np.ones(2, "float32")],
     (np.ones(2),)),
    ("def @main(%x: Tensor[(2,), float32]) { 1f }", [np.ones(2, "float32")],
     (np.zeros(2),)),
    ("def @main(%x: Tensor[(2,), float32]) { (%x, %x) }", [np.ones(2, "float32")],
     (np.full(2, 2.0),)),
    ("def @main(%t: (Tensor[(2,), float32], Tensor[(3,), float32])) { exp(%t.0) }",
     [(np.zeros(2, "float32"), np.ones(3, "float32"))], ((np.ones(2), np.zeros(3)),)),
])
def test_edge_cases(src: str, args: list, want: tuple) -> None:
    """The result a parameter or a constant, a parameter returned twice, a
    tuple parameter (its untouched field gets zeros)."""
    _, grads = aot.interpret(aot.gradient(aot.parse(src)), *args)
    assert len(grads) == len(want)
    for g, w in zip(grads, want):
        if isinstance(w, tuple):
            for gf, wf in zip(g, w):
                np.testing.assert_array_equal(gf, wf)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", [0, 1, 2])
def test_if_against_central_differences(case: int) -> None:
    """Each branch (and the nested if's) differentiated on its own."""
    mod = aot.parse(IF_PROGRAM)
    args = if_args(case)
    result, grads = aot.interpret(aot.gradient(mod), *args)
    np.testing.assert_allclose(result, aot.interpret(mod, *args), rtol=1e-12)
    for got, want in zip(grads[:2], central_differences(mod, args)[:2]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert not grads[2].any()
