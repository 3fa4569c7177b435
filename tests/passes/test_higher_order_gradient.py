"""HigherOrderGradient / aot.gradient(mode="higher_order"): closures, lists,
``if``, recursion, references and ``match`` against central differences
on the interpreter and in C; agreement with first-order mode; the
optimised gradient of a dataflow program back on the dataflow backend."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.compiler import _context, is_dataflow, program_passes
from aot.diagnostics import DiagnosticError
from aot.ir.structural import assert_structural_equal
from aot.passes.manager import PassContext, get_pass
from tests.cases.higher_order_programs import CASES
from tests.passes.test_gradient import MLP, mlp_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from c_harness import UNSIZED_POOL_BYTES  # noqa: E402


def _float_sum(v: object) -> float:
    """What the gradient's seed differentiates: the sum of every float
    element of the result (integer fields get no seed)."""
    if isinstance(v, tuple):
        return sum(_float_sum(f) for f in v)
    a = np.asarray(v)
    return float(a.sum()) if a.dtype.kind == "f" else 0.0


def central_differences(mod: aot.IRModule, args: list[np.ndarray],
                        eps: float = 1e-6) -> list[np.ndarray | None]:
    """d(sum of the float result elements)/d(each float argument); None
    for an integer argument."""
    out: list[np.ndarray | None] = []
    for i, a in enumerate(args):
        if a.dtype.kind != "f":
            out.append(None)
            continue
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up, down = list(args), list(args)
            up[i], down[i] = a.copy(), a.copy()
            up[i][idx] += eps
            down[i][idx] -= eps
            g[idx] = (_float_sum(aot.interpret(mod, *up))
                      - _float_sum(aot.interpret(mod, *down))) / (2 * eps)
        out.append(g)
    return out


def _args(name: str) -> list[np.ndarray]:
    return CASES[name][1](np.random.default_rng(7))


def _hog(mod: aot.IRModule, entry: str = "main") -> aot.IRModule:
    return aot.gradient(mod, entry, mode="higher_order")


def _optimised(mod: aot.IRModule) -> aot.IRModule:
    return program_passes(mod, entry="main", ctx=_context(None, "main", "integer"))


@pytest.mark.parametrize("name", list(CASES))
def test_against_central_differences(name: str) -> None:
    src = CASES[name][0]
    mod = aot.parse(src)
    args = _args(name)
    grad = _hog(mod)
    result, grads = aot.interpret(grad, *args)
    np.testing.assert_allclose(result, aot.interpret(mod, *args), rtol=1e-12)
    want = central_differences(mod, args)
    for a, got, w in zip(args, grads, want):
        assert got.dtype == a.dtype and got.shape == a.shape
        if w is not None:
            np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-8)
        else:
            assert not got.any()         # an integer parameter's gradient is zeros


def _packed(names: list[str]) -> tuple[aot.IRModule, list[np.ndarray]]:
    """One module: each case's @main renamed @<case>, its higher-order
    gradient, and a @main returning all of them (one C build)."""
    src = "".join(CASES[n][0].replace("@main", f"@{n}") for n in names)
    params, calls, args = [], [], []
    for n in names:
        a = _args(n)
        names_ = [f"%{n}_{i}" for i in range(len(a))]
        tys = [f"Tensor[{tuple(x.shape)}, {x.dtype}]".replace(",)", ")") for x in a]
        params += [f"{v}: {t}" for v, t in zip(names_, tys)]
        calls.append(f"@{n}({', '.join(names_)})")
        args += a
    mod = aot.parse(src)
    for n in names:
        mod = _hog(mod, n)
    packed = aot.parse(f"def @main({', '.join(params)}) {{ ({', '.join(calls)},) }}", base=mod)
    return packed, args


def _check_c(tmp_path: Path, names: list[str], pool: bool) -> None:
    mod, args = _packed(names)
    # recursion on a run-time count: the compiler cannot size the pool
    art = aot.compile(mod, tmp_path / "art", name="hog",
                      pool_bytes=UNSIZED_POOL_BYTES if pool else None)
    meta = json.loads((tmp_path / "art" / "metadata.json").read_text())
    assert (meta["pool_bytes"] > 0) == pool, meta["pool_bytes"]
    got = aot.load(art)(*args)
    want = aot.interpret(mod, *args)
    for n, g, w in zip(names, got, want):
        (gr, gg), (wr, wg) = g, w
        np.testing.assert_allclose(gr, wr, rtol=1e-10, err_msg=n)
        for x, y in zip(gg, wg):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12, err_msg=n)


def test_in_c_with_the_object_pool(tmp_path: Path) -> None:
    """Control flow on run-time values: closures, refs and GradCell values
    in the object pool; the C results equal the interpreter's (which equal
    central differences, above)."""
    # (global recursion is also in mutual_recursion: one build stays small)
    _check_c(tmp_path, ["if", "local_recursion", "mutual_recursion", "match"], pool=True)


def test_dataflow_gradients_compile_without_a_pool(tmp_path: Path) -> None:
    """Closures, a prelude fold over a list built in the program and
    references: after PartialEvaluate the gradient is fused kernels on the
    arena, no object pool."""
    _check_c(tmp_path, [n for n, c in CASES.items() if c[2]], pool=False)


DATAFLOW = {
    "mlp": MLP,
    "tuple_result": """
    def @main(%a: Tensor[(3), float64], %b: Tensor[(3), float64], %unused: Tensor[(2), float64],
              %k: Tensor[(3), int32]) {
      %0 = (%a, multiply(%a, cast(%k, dtype="float64")));
      %1 = %0.1;
      (exp(%1), %0.0, argmax(%b))
    }""",
    "shared": """
    def @main(%x: Tensor[(2, 3), float64], %w: Tensor[(3, 3), float64]) {
      %0 = nn.dense(%x, %w);
      %1 = sigmoid(%0);
      %2 = concatenate((%1, %0), axis=0);
      mean(multiply(%2, %2))
    }""",
}


@pytest.mark.parametrize("name", list(DATAFLOW))
def test_agrees_with_first_order(name: str) -> None:
    """Same values as first-order mode; after the optimiser both are the
    same program: an untouched gradient (the unused parameter,
    argmax's input, a field nothing reads) costs nothing."""
    mod = aot.parse(DATAFLOW[name])
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(p.type_annotation.shape).astype(p.type_annotation.dtype.np)
            for p in mod["main"].params]
    first, higher = aot.gradient(mod), _hog(mod)
    for f, h in zip(_flat(aot.interpret(first, *args)), _flat(aot.interpret(higher, *args))):
        np.testing.assert_allclose(h, f, rtol=1e-12, atol=1e-14)
    opt_h = _optimised(higher)
    assert is_dataflow(opt_h, "main")
    # the same program as first order's after the optimiser (so the same C)
    assert_structural_equal(opt_h["main"], _optimised(first)["main"])


def _flat(v: object) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [x for f in v for x in _flat(f)]
    return [np.asarray(v)]


def test_mlp_gradient_matches_central_differences() -> None:
    mod = aot.parse(MLP)
    args = mlp_args(np.random.default_rng(1))
    _, grads = aot.interpret(_hog(mod), *args)
    for got, want in zip(grads, central_differences(mod, args)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_untouched_cells_are_never_filled() -> None:
    """LazyGradientInit: in a program with run-time control flow the branch
    not taken, and a parameter nothing flows into, allocate no gradient;
    the backward step of a value nothing flows back into is skipped (its
    rule's exp is never evaluated: log of a negative input stays
    harmless)."""
    src = """
    def @main(%x: Tensor[(2), float64], %y: Tensor[(2), float64], %c: bool) {
      let %unused = log(%y);
      if (%c) { sum(exp(%x)) } else { sum(%y) }
    }"""
    grad = _hog(aot.parse(src))
    x, y = np.array([0.5, 1.0]), np.array([-1.0, 2.0])
    _, (dx, dy, dc) = aot.interpret(grad, x, y, np.array(True))
    np.testing.assert_allclose(dx, np.exp(x))
    np.testing.assert_array_equal(dy, [0.0, 0.0])
    _, (dx, dy, _) = aot.interpret(grad, x, y, np.array(False))
    np.testing.assert_array_equal(dx, [0.0, 0.0])
    np.testing.assert_array_equal(dy, [1.0, 1.0])


@pytest.mark.parametrize("src, message", [
    ("""def @main(%x: Tensor[(4), float32]) { round(%x) }""",
     r"operator round has no gradient rule \(piecewise constant"),
    ("""def @main(%x: Tensor[(2, 3), float32]) {
          let %f = fn (%y: Tensor[(2, 3), float32]) { floor(%y) }; sum(%f(%x)) }""",
     r"operator floor has no gradient rule \(piecewise constant"),
    ("""def @main(%xs: List[Tensor[(2), float32]]) { @hd(%xs) }""",
     r"a parameter of type List\[.*\] is not supported"),
    ("""def @main(%x: Tensor[(2), float32]) { Cons(%x, Nil) }""",
     r"a result of type List\[.*\] is not supported"),
    ("""def @main[A](%x: A) { %x }""", "is polymorphic"),
])
def test_refusals(src: str, message: str) -> None:
    with pytest.raises(DiagnosticError, match=message):
        _hog(aot.parse(src))


def test_registered_as_a_pass() -> None:
    src = """
    def @main(%x: Tensor[(2), float64]) { exp(%x) }
    def @f(%x: Tensor[(2), float64]) {
      let %r = ref(%x);
      let %u = ref_write(%r, multiply(ref_read(%r), %x));
      ref_read(%r)
    }
    """
    p = get_pass("HigherOrderGradient")
    with PassContext(options={"HigherOrderGradient": {"entry": "f"}}):
        out = p(aot.parse(src))
    _, (dx,) = aot.interpret(out, np.array([1.0, -3.0]), entry="f")
    np.testing.assert_array_equal(dx, [2.0, -6.0])
    np.testing.assert_allclose(aot.interpret(out, np.zeros(2)), np.ones(2))


def _draw(strategy: object, seed: int) -> object:
    """A hypothesis strategy drawn from a seed, as the fuzzing campaign does."""
    import random

    from hypothesis.internal.conjecture.data import ConjectureData
    return ConjectureData(random=random.Random(seed)).draw(strategy)


def test_random_programs_against_central_differences() -> None:
    """The whole-language program generator in its differentiable variant
    (closures, lists and prelude combinators, the program's ADT, match, if,
    recursion with fuel, references; int32 and vector parameters, in
    float64): higher-order gradients equal central differences."""
    from random_programs import VEC, as_float64, programs
    for seed in range(5):
        p = _draw(programs(differentiable=True), seed)
        mod = aot.parse(as_float64(p.text))
        rng = np.random.default_rng(seed)
        args = [rng.uniform(-2, 2, 3) if t == VEC else np.asarray(a)
                for t, a in zip(p.params, p.args)]
        _, grads = aot.interpret(_hog(mod), *args)
        for got, want in zip(grads, central_differences(mod, args)):
            if want is None:
                assert not got.any()
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=p.text)


def test_random_chains_first_and_higher_order_agree() -> None:
    """Random operator chains (the C chain tests' generator): both modes
    give the same gradients, or refuse with the same diagnostic (an
    operator without a rule)."""
    from test_random_chains_c import chains
    refused = 0
    for seed in range(8):
        text, shapes = _draw(chains(), seed)
        mod = aot.parse(text)
        rng = np.random.default_rng(seed)
        args = [rng.standard_normal(s).astype("float32") for s in shapes]
        outs, errors = [], []
        for mode in ("first_order", "higher_order"):
            try:
                outs.append(_flat(aot.interpret(aot.gradient(mod, mode=mode), *args)))
            except DiagnosticError as e:
                errors.append(str(e))
        assert len(errors) in (0, 2), (errors, text)
        if errors:
            assert errors[0] == errors[1]
            refused += 1
            continue
        for f, h in zip(*outs):
            np.testing.assert_allclose(h, f, rtol=1e-5, atol=1e-6, err_msg=text)
    assert refused < 4
