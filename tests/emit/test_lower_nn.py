"""Lowerings of the nn family (aot/emit/lower/ops/nn.py) against the
interpreter, through the kernel-IR evaluator: every operator over the
attribute tables of tests/ops/test_nn.py (small shapes), fused chains in
one group, and the loop structure of the multiply-accumulate kernels."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.kernel import ir as K
from aot.emit.lower.group import lower_group
from aot.emit.kernel.evaluate import evaluate
from aot.emit.kernel.walk import children, postorder, walk_stmts
from aot.emit.kernel.simplify import simplify_kernel
from kernel_c_harness import build, call, compilers
from cases import nn as table
from lowering_harness import assert_close, check_lowering, lower_main, main_as_group

RNG = np.random.default_rng(11)
FLOATS = ["float16", "float32", "float64"]
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


def sample(shape, dtype, lo=-100, hi=100):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dtype)


def tt(shape, dtype):
    """Relay's spelling of a tensor type."""
    dims = ", ".join(str(d) for d in shape)
    return f"Tensor[({dims}{',' if len(shape) == 1 else ''}), {dtype}]"


def program(params, body):
    ps = ", ".join(f"%{name}: {tt(shape, dt)}" for name, shape, dt in params)
    return f'#[version = "0.0.5"]\ndef @main({ps}) {{\n  {body}\n}}\n'


def check(params, body, args, dtype="float32"):
    tol = RTOL.get(dtype, 0)
    return check_lowering(program(params, body), args, rtol=tol, atol=tol)


def fnum(x):
    return f"{x!r}f"


# ------------------------------------------------------------ activations

@pytest.mark.parametrize("dtype", FLOATS + ["int8", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_relu(dtype, shape):
    x = sample(shape, dtype) if dtype != "bool" else RNG.random(shape) < 0.5
    x = np.asarray(x)
    if dtype.startswith("float") and x.size > 1:
        x.reshape(-1)[:2] = [np.nan, -0.0]
    check([("x", shape, dtype)], "nn.relu(%x)", [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.25, 1.5])
def test_leaky_relu_float(dtype, alpha):
    x = sample((3, 7), dtype)
    check([("x", (3, 7), dtype)], f"nn.leaky_relu(%x, alpha={fnum(alpha)})", [x], dtype)


@pytest.mark.parametrize("dtype,alpha", [("int32", 2.7), ("int32", 0.5), ("int8", -3.9),
                                         ("int8", 100.0), ("uint8", 3.0)])
def test_leaky_relu_integer_converts_alpha_like_the_reference(dtype, alpha):
    x = sample((4, 5), dtype)
    check([("x", (4, 5), dtype)], f"nn.leaky_relu(%x, alpha={fnum(alpha)})", [x], dtype)


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 4), 1), ((2, 5), 1), ((4, 6, 3), -1),
                                        ((3, 2, 2), 0)])
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_prelu(shape, axis, dtype):
    x, a = sample(shape, dtype), sample((shape[axis],), dtype)
    check([("x", shape, dtype), ("a", (shape[axis],), dtype)],
          f"nn.prelu(%x, %a, axis={axis})", [x, a], dtype)


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 5), 1), ((2, 3), 1), ((2, 3, 4), -1),
                                        ((4,), 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
def test_bias_add(shape, axis, dtype):
    x, b = sample(shape, dtype), sample((shape[axis],), dtype)
    check([("x", shape, dtype), ("b", (shape[axis],), dtype)],
          f"nn.bias_add(%x, %b, axis={axis})", [x, b], dtype)


# --------------------------------------------------------------- softmax

@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((2, 7), -1), ((2, 3, 4), 1),
                                        ((1, 2, 3, 4), 3), ((2, 3, 2), 0)])
def test_softmax_and_log_softmax(op, dtype, shape, axis):
    x = sample(shape, dtype) * 4
    check([("x", shape, dtype)], f"{op}(%x, axis={axis})", [x], dtype)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_large_inputs_and_nan(op):
    x = np.array([[1000.0, 1000.0, -1000.0], [np.nan, 1.0, 2.0],
                  [-np.inf, 0.0, 1.0]], dtype=np.float32)
    check([("x", (3, 3), "float32")], f"{op}(%x)", [x])


# -------------------------------------------------------- dense / matmul

@pytest.mark.parametrize("shape,units,dt,wdt,out", table.DENSE)
def test_dense(shape, units, dt, wdt, out):
    x = sample(shape, dt, -128, 127)
    w = sample((units, shape[-1]), wdt, -128, 127)
    attrs = f"units={units}" + (f', out_dtype="{out}"' if out else "")
    check([("x", shape, dt), ("w", (units, shape[-1]), wdt)], f"nn.dense(%x, %w, {attrs})",
          [x, w], out or dt)


def test_dense_int8_is_exact_for_extreme_values():
    x = np.full((1, 64), -128, np.int8)
    w = np.full((2, 64), -128, np.int8)
    check([("x", (1, 64), "int8"), ("w", (2, 64), "int8")],
          'nn.dense(%x, %w, out_dtype="int32")', [x, w], "int32")


@pytest.mark.parametrize("ashape,bshape,ta,tb", table.MATMUL)
@pytest.mark.parametrize("dtype", table.MATMUL_DTYPES)
def test_matmul(ashape, bshape, ta, tb, dtype):
    a, b = sample(ashape, dtype), sample(bshape, dtype)
    check([("a", ashape, dtype), ("b", bshape, dtype)],
          f"nn.matmul(%a, %b, transpose_a={ta}, transpose_b={tb})", [a, b], dtype)


@pytest.mark.parametrize("xs,ys,ta,tb", table.BATCH_MATMUL)
@pytest.mark.parametrize("dtype", table.BATCH_MATMUL_DTYPES)
def test_batch_matmul(xs, ys, ta, tb, dtype):
    x, y = sample(xs, dtype), sample(ys, dtype)
    out = ', out_dtype="int32"' if dtype == "int8" else ""
    check([("x", xs, dtype), ("y", ys, dtype)],
          f"nn.batch_matmul(%x, %y, transpose_a={ta}, transpose_b={tb}{out})", [x, y],
          "int32" if out else dtype)


# -------------------------------------------------------- normalisation

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((2, 3, 2, 2), 1), ((5, 3), 1), ((2, 4, 3), -1)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False)])
def test_batch_norm(dtype, shape, axis, center, scale):
    c = shape[axis]
    x = sample(shape, dtype)
    gamma, beta, mean = (sample((c,), dtype) for _ in range(3))
    var = (np.abs(sample((c,), dtype)) + 0.5).astype(dtype)
    params = [("x", shape, dtype)] + [(n, (c,), dtype) for n in ("g", "b", "m", "v")]
    check(params, f"nn.batch_norm(%x, %g, %b, %m, %v, axis={axis}, epsilon=0.001f, "
                  f"center={center}, scale={scale})", [x, gamma, beta, mean, var], dtype)


def test_batch_norm_output_fused_with_relu():
    shape, c = (2, 3, 2), 3
    args = [sample(shape, "float32")] + [sample((c,), "float32") for _ in range(3)] \
        + [np.abs(sample((c,), "float32")) + 0.5]
    params = [("x", shape, "float32")] + [(n, (c,), "float32") for n in ("g", "b", "m", "v")]
    check(params, "%0 = nn.batch_norm(%x, %g, %b, %m, %v);\n  nn.relu(%0.0)", args)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((2, 5), -1), ((2, 3, 6), 2), ((4, 3, 2), 1)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, False)])
def test_layer_norm(dtype, shape, axis, center, scale):
    x = sample(shape, dtype)
    gamma, beta = sample((shape[axis],), dtype), sample((shape[axis],), dtype)
    params = [("x", shape, dtype), ("g", (shape[axis],), dtype), ("b", (shape[axis],), dtype)]
    check(params, f"nn.layer_norm(%x, %g, %b, axis={axis}, center={center}, scale={scale})",
          [x, gamma, beta], dtype)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_dropout(dtype):
    x = sample((3, 4), dtype) if dtype != "bool" else RNG.random((3, 4)) < 0.5
    check([("x", (3, 4), dtype)], "nn.dropout(%x, rate=0.3f)", [x], dtype)


# ---------------------------------------------------------- flatten, pad

@pytest.mark.parametrize("shape", [(2,), (2, 3), (2, 3, 4, 5), (1, 1, 1)])
def test_batch_flatten(shape):
    check([("x", shape, "int16")], "nn.batch_flatten(%x)", [sample(shape, "int16")], "int16")


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 2, 2)])
def test_batch_flatten_of_a_fused_value_unravels_the_index(shape):
    check([("x", shape, "float32")], "nn.batch_flatten(negative(%x))",
          [sample(shape, "float32")])


PAD_CASES = [
    ((4,), [[1, 2]]),
    ((3, 4), [[0, 0], [2, 1]]),
    ((1, 2, 3, 4), [[0, 0], [0, 0], [2, 2], [1, 3]]),
    ((2, 3), [[1, 1], [0, 2]]),
]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape,widths", PAD_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_pad(mode, shape, widths, dtype):
    x = sample(shape, dtype)
    value = np.array(7.9, dtype=np.float32)
    check([("x", shape, dtype), ("v", (), "float32")],
          f'nn.pad(%x, %v, pad_width={widths}, pad_mode="{mode}")', [x, value], dtype)


@pytest.mark.parametrize("value,dtype", [(300.7, "int8"), (np.nan, "int32"), (-2.5, "uint8"),
                                         (0.1, "float16")])
def test_pad_value_converted_like_the_reference(value, dtype):
    x = sample((2, 2), dtype)
    check([("x", (2, 2), dtype), ("v", (), "float64")],
          "nn.pad(%x, %v, pad_width=[[1, 0], [0, 1]])",
          [x, np.array(value, dtype=np.float64)], dtype)


def test_pad_of_an_empty_axis_is_all_value():
    x = np.zeros((0, 2), np.float32)
    check([("x", (0, 2), "float32")], "nn.pad(%x, 3f, pad_width=[[1, 1], [0, 0]])", [x])


# ----------------------------------------------------------- fused chains

def test_dense_bias_add_relu_is_one_kernel_with_an_epilogue():
    x, w, b = sample((2, 6), "float32"), sample((4, 6), "float32"), sample((4,), "float32")
    group = check([("x", (2, 6), "float32"), ("w", (4, 6), "float32"), ("b", (4,), "float32")],
                  "%0 = nn.dense(%x, %w, units=4);\n  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)",
                  [x, w, b])
    assert group.anchor == "nn.dense"
    assert group.scratch == ()


def test_dense_add_tanh():
    x, w, c = sample((3, 5), "float32"), sample((2, 5), "float32"), sample((3, 2), "float32")
    check([("x", (3, 5), "float32"), ("w", (2, 5), "float32"), ("c", (3, 2), "float32")],
          "%0 = nn.dense(%x, %w);\n  %1 = add(%0, %c);\n  tanh(%1)", [x, w, c])


def test_int8_dense_with_a_cast_prologue_and_bias_epilogue():
    x, w, b = sample((2, 8), "int8"), sample((3, 8), "int8"), sample((3,), "int32")
    check([("x", (2, 8), "int8"), ("w", (3, 8), "int8"), ("b", (3,), "int32")],
          '%0 = nn.dense(negative(%x), %w, out_dtype="int32");\n  nn.bias_add(%0, %b)',
          [x, w, b], "int32")


def test_pad_before_an_elementwise_op():
    x = sample((2, 3), "float32")
    check([("x", (2, 3), "float32")],
          '%0 = nn.pad(%x, 1.5f, pad_width=[[1, 1], [2, 0]]);\n  exp(%0)', [x])
    check([("x", (2, 3), "float32")],
          '%0 = nn.pad(sigmoid(%x), 0f, pad_width=[[1, 1], [2, 0]], pad_mode="reflect");\n'
          '  multiply(%0, 2f)', [x])


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_times_a_scalar(op):
    x = sample((2, 3, 4), "float32")
    check([("x", (2, 3, 4), "float32")], f"%0 = {op}(%x, axis=1);\n  multiply(%0, 3f)", [x])


def test_softmax_of_a_fused_prologue():
    x = sample((3, 4), "float16")
    check([("x", (3, 4), "float16")], "nn.softmax(multiply(%x, 2f16))", [x], "float16")


def test_batch_matmul_then_relu():
    x, y = sample((2, 3, 4), "float32"), sample((2, 5, 4), "float32")
    check([("x", (2, 3, 4), "float32"), ("y", (2, 5, 4), "float32")],
          "nn.relu(nn.batch_matmul(%x, %y, transpose_b=True))", [x, y])


# ------------------------------------------- structure of the MAC kernels

def _mac_statements(text):
    """The simplified kernel of ``text``'s group, its reduction loop (the
    innermost loop whose body only accumulates into one scalar) and the
    accumulations, in order of k: the unrolled copies in the loop, then
    the straight-line remainder after it."""
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    loops = []
    for s in walk_stmts(kernel.body):
        if isinstance(s, K.Block):
            for i, st in enumerate(s.stmts):
                if isinstance(st, K.For) and _accumulations(st.body) is not None:
                    rest = [t for t in s.stmts[i + 1:] if isinstance(t, K.Assign)]
                    loops.append((st, _accumulations(st.body), rest))
    assert len(loops) == 1, loops
    return group, loops[0]


def _is_accumulation(s):
    """``acc = acc + a * b`` (integers) or ``acc = fmaf(a, b, acc)``."""
    if not isinstance(s, K.Assign):
        return False
    v = s.value
    if isinstance(v, K.Call):
        return v.name == "fmaf" and v.args[2] == s.var
    return isinstance(v, K.BinOp) and v.op is K.BinaryOperator.ADD and v.a == s.var


def _product(s):
    """The product of an accumulation: the expression holding its loads."""
    return s.value if isinstance(s.value, K.Call) else s.value.b


def _accumulations(body):
    stmts = body.stmts if isinstance(body, K.Block) else (body,)
    if not all(_is_accumulation(s) for s in stmts):
        return None
    if len({s.var for s in stmts}) != 1:
        return None
    return list(stmts)


def _loads(expr):
    found = []
    postorder(expr, children, lambda e, _: found.append(e) if isinstance(e, K.Load) else None)
    return found


def _addresses(loop, body, tail, operand):
    """The flat index read by ``operand`` (0: data, 1: weight) for k = 0,
    1, ... through the reduction, other loop variables fixed at 1."""
    names = {v.name for st in body + tail for v in _vars(st.value)}
    env = {n: 1 for n in names}
    out = []
    for it in range(int(loop.extent.value)):
        env[loop.var.name] = it
        for st in body:
            out.append(int(evaluate(_loads(_product(st))[operand].index, env, {})))
    for st in tail:
        out.append(int(evaluate(_loads(_product(st))[operand].index, env, {})))
    return out


def _vars(expr):
    found = []
    postorder(expr, children, lambda e, _: found.append(e) if isinstance(e, K.Var) else None)
    return found


@pytest.mark.parametrize("body,params,contiguous,scratch", [
    ("nn.dense(%x, %w)", [("x", (2, 12), "float32"), ("w", (3, 12), "float32")],
     (True, True), False),
    ('nn.dense(%x, %w, out_dtype="int32")', [("x", (2, 10), "int8"), ("w", (3, 10), "int8")],
     (True, True), False),
    ("nn.dense(%x, %w)", [("x", (2, 5), "float32"), ("w", (3, 5), "float32")],
     (True, True), False),
    ("nn.matmul(%x, %w)", [("x", (2, 12), "float32"), ("w", (12, 3), "float32")],
     (True, False), False),
    ("nn.matmul(%x, %w, transpose_a=True, transpose_b=True)",
     [("x", (12, 2), "float32"), ("w", (3, 12), "float32")], (False, True), False),
    # neither operand is contiguous in k: the column of x is copied first
    ("nn.matmul(%x, %w, transpose_a=True)",
     [("x", (12, 2), "float32"), ("w", (12, 3), "float32")], (True, False), True),
    ("nn.batch_matmul(%x, %y, transpose_b=True)",
     [("x", (2, 3, 12), "float32"), ("y", (2, 4, 12), "float32")],
     (True, True), False),
    ("nn.batch_matmul(%x, %y, transpose_a=True)",
     [("x", (2, 11, 3), "int16"), ("y", (2, 11, 4), "int16")], (True, False), True),
])
def test_mac_loop_is_a_scalar_accumulation_with_constant_bounds(body, params, contiguous,
                                                                 scratch):
    reduce = params[0][1][-1] if "transpose_a" not in body else params[0][1][-2]
    group, (loop, accs, tail) = _mac_statements(program(params, body))
    assert isinstance(loop.extent, K.Const)
    assert int(loop.extent.value) * len(accs) + len(tail) == reduce
    for operand, want in enumerate(contiguous):
        addresses = _addresses(loop, accs, tail, operand)
        steps = {b - a for a, b in zip(addresses, addresses[1:])}
        assert (steps == {1}) == want, (operand, addresses)
    assert bool(group.scratch) == scratch


# ------------------------------------------------- the printed C, compiled

C_CASES = [
    # (params, body)
    ([("x", (2, 5), "float32")], "nn.relu(%x)"),
    ([("x", (2, 5), "float16")], "nn.relu(%x)"),
    ([("x", (2, 5), "int8")], "nn.leaky_relu(%x, alpha=3f)"),
    ([("x", (2, 3, 2), "float32"), ("a", (3,), "float32")], "nn.prelu(%x, %a)"),
    ([("x", (2, 3), "int8"), ("b", (3,), "int8")], "nn.bias_add(%x, %b)"),
    ([("x", (2, 3, 4), "float32")], "nn.softmax(%x, axis=1)"),
    ([("x", (2, 5), "float16")], "nn.log_softmax(%x)"),
    ([("x", (2, 10), "float32"), ("w", (3, 10), "float32")], "nn.dense(%x, %w)"),
    ([("x", (2, 9), "uint8"), ("w", (3, 9), "int8")], 'nn.dense(%x, %w, out_dtype="int32")'),
    ([("x", (2, 9), "int8"), ("w", (3, 9), "uint8")], 'nn.dense(%x, %w, out_dtype="uint8")'),
    ([("x", (2, 6), "float16"), ("w", (3, 6), "float16")], "nn.dense(%x, %w)"),
    ([("x", (2, 7), "float16"), ("w", (6, 7), "float16")], "nn.dense(%x, %w)"),
    ([("x", (9, 2), "float32"), ("w", (9, 3), "float32")], "nn.matmul(%x, %w, transpose_a=True)"),
    ([("x", (2, 9, 3), "int16"), ("y", (1, 4, 9), "int16")],
     'nn.batch_matmul(%x, %y, transpose_a=True, transpose_b=True, out_dtype="int32")'),
    ([("x", (2, 3, 2), "float32")] + [(n, (3,), "float32") for n in "gbmv"],
     "nn.batch_norm(%x, %g, %b, %m, %v)"),
    ([("x", (2, 3, 4), "float32"), ("g", (3,), "float32"), ("b", (3,), "float32")],
     "nn.layer_norm(%x, %g, %b, axis=1)"),
    ([("x", (2, 3), "int8")], "nn.dropout(%x)"),
    ([("x", (2, 3, 2), "float32")], "nn.batch_flatten(nn.relu(%x))"),
    ([("x", (2, 3), "int8"), ("v", (), "float32")], "nn.pad(%x, %v, pad_width=[[1, 0], [2, 1]])"),
    ([("x", (2, 3), "float32")], 'nn.pad(%x, 0f, pad_width=[[1, 1], [2, 2]], pad_mode="reflect")'),
    ([("x", (2, 3), "uint8")], 'nn.pad(%x, 0u8, pad_width=[[0, 3], [1, 0]], pad_mode="edge")'),
    ([("x", (2, 8), "float32"), ("w", (3, 8), "float32"), ("b", (3,), "float32")],
     "nn.relu(nn.bias_add(nn.dense(%x, %w), %b))"),
]


def _c_args(params):
    out = []
    for _, shape, dtype in params:
        x = sample(shape, dtype)
        if dtype == "float32" and x.size > 1:
            x.reshape(-1)[1] = np.nan
        out.append(np.asarray(x))
    return out


@pytest.mark.parametrize("compiler", compilers())
def test_printed_c_matches_the_interpreter(tmp_path, compiler):
    """Every kernel of the table in one -Werror build, run through ctypes,
    compared with the interpreter."""
    cases = []
    for n, (params, body) in enumerate(C_CASES):
        mod = aot.infer_types(aot.parse(program(params, body)))
        group = lower_group(main_as_group(mod), f"k{n}")
        cases.append((body, mod, group, simplify_kernel(group.kernel), _c_args(params)))
    lib = build([k for _, _, _, k, _ in cases], tmp_path, "nn", compiler)
    for body, mod, group, kernel, args in cases:
        arrays = {b.name: np.ascontiguousarray(a, b.dtype.np).reshape(-1).copy()
                  for b, a in zip(group.inputs, args)}
        for b, data in group.constants:
            arrays[b.name] = np.asarray(data, b.dtype.np).reshape(-1).copy()
        for b in (*group.outputs, *group.scratch):
            arrays[b.name] = np.zeros(b.size, b.dtype.np)
        call(lib, kernel, arrays)
        want = aot.interpret(mod, *args)
        wants = want if isinstance(want, tuple) else (want,)
        for b, w in zip(group.outputs, wants):
            w = np.asarray(w)
            tol = RTOL.get(w.dtype.name, 0)
            assert_close(arrays[b.name].reshape(w.shape), w, tol, tol, f"{b.name} of {body}")


@pytest.mark.parametrize("params,body", [
    ([("x", (2, 0), "float32"), ("w", (3, 0), "float32")], "nn.dense(%x, %w)"),
    ([("x", (2, 0), "int8"), ("w", (3, 0), "int8")], 'nn.dense(%x, %w, out_dtype="int32")'),
    ([("x", (0, 3), "float32"), ("w", (4, 3), "float32")], "nn.dense(%x, %w)"),
    ([("x", (0, 3), "float32")], "nn.softmax(%x)"),
    ([("x", (0, 3), "float32"), ("g", (3,), "float32"), ("b", (3,), "float32")],
     "nn.layer_norm(%x, %g, %b)"),
    ([("x", (2, 0, 3), "float32"), ("y", (2, 4, 3), "float32")],
     "nn.batch_matmul(%x, %y, transpose_b=True)"),
])
def test_empty_tensors(params, body):
    check(params, body, [sample(shape, dt) for _, shape, dt in params])
