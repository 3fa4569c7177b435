"""The nn family (aot/ir/ops/nn.py) compiled to C against the interpreter:
activations, bias_add and softmax over dtypes and axes; dense, matmul and
batch_matmul over the shapes, transposes and (integer, widening, wrapping)
out_dtypes of tests/emit/test_lower_nn.py; batch_norm, layer_norm,
instance_norm, group_norm, l2_normalize, einsum,
dropout, batch_flatten and every pad mode.  One build per test (see
test_ops_c.py)."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from cases import nn as table
from test_ops_c import case, data, rng_for

FLOATS = ["float32", "float16", "float64"]


def fnum(x: float) -> str:
    return f"{x!r}f"


# ------------------------------------------------------------ activations

def activation_cases():
    out = []
    for dt in FLOATS + ["int8", "int32", "uint8", "bool"]:
        for shape in [(), (5,), (2, 3, 4)]:
            out.append(case(f"nn.relu:{dt}-{shape}", [("x", shape, dt)], "nn.relu(%x)",
                            specials=True))
    for dt in FLOATS:
        for alpha in [0.0, 0.01, 0.25, 1.5]:
            out.append(case(f"nn.leaky_relu:{dt}-{alpha}", [("x", (3, 7), dt)],
                            f"nn.leaky_relu(%x, alpha={fnum(alpha)})", specials=True))
    for dt, alpha in [("int32", 2.7), ("int32", 0.5), ("int8", -3.9), ("int8", 100.0),
                      ("uint8", 3.0)]:
        out.append(case(f"nn.leaky_relu:{dt}-{alpha}", [("x", (4, 5), dt)],
                        f"nn.leaky_relu(%x, alpha={fnum(alpha)})", specials=True))
    for shape, axis in [((2, 3, 4, 4), 1), ((2, 5), 1), ((4, 6, 3), -1), ((3, 2, 2), 0)]:
        for dt in ["float32", "int16", "float16"]:
            c = shape[axis]
            out.append(case(f"nn.prelu:{dt}-{shape}-{axis}", [("x", shape, dt), ("a", (c,), dt)],
                            f"nn.prelu(%x, %a, axis={axis})", specials=True))
    for shape, axis in [((2, 3, 4, 5), 1), ((2, 3), 1), ((2, 3, 4), -1), ((4,), 0)]:
        for dt in ["float32", "int32", "int8", "float64"]:
            c = shape[axis]
            out.append(case(f"nn.bias_add:{dt}-{shape}-{axis}",
                            [("x", shape, dt), ("b", (c,), dt)],
                            f"nn.bias_add(%x, %b, axis={axis})", specials=True))
    return out


def softmax_cases():
    out = []
    for op in ["nn.softmax", "nn.log_softmax"]:
        for dt in FLOATS:
            for shape, axis in [((5,), 0), ((2, 7), -1), ((2, 3, 4), 1), ((1, 2, 3, 4), 3),
                                ((2, 3, 2), 0)]:
                name = f"{op}:{dt}-{shape}-{axis}"
                x = data(rng_for(name), shape, dt) * np.asarray(4, dt)
                out.append(case(name, [("x", shape, dt)], f"{op}(%x, axis={axis})", [x]))
        x = np.array([[1000.0, 1000.0, -1000.0], [np.nan, 1.0, 2.0], [-np.inf, 0.0, 1.0],
                      [np.inf, 0.0, 1.0], [-0.0, 0.0, -0.0], [-np.inf, -np.inf, -np.inf],
                      [np.inf, np.inf, 1.0], [3e38, -3e38, 0.0]], np.float32)
        out.append(case(f"{op}:edges", [("x", x.shape, "float32")], f"{op}(%x)", [x]))
        with np.errstate(over="ignore"):         # 3e38 becomes inf
            x16 = x.astype(np.float16)
        out.append(case(f"{op}:f16-edges", [("x", x.shape, "float16")], f"{op}(%x, axis=1)",
                        [x16]))
    return out


# -------------------------------------------------------- dense / matmul

def linear_cases():
    out = []
    for shape, units, dt, wdt, odt in table.DENSE:
        attrs = f"units={units}" + (f', out_dtype="{odt}"' if odt else "")
        name = f"nn.dense:{shape}-{units}-{dt}-{wdt}-{odt}"
        out.append(case(name, [("x", shape, dt), ("w", (units, shape[-1]), wdt)],
                        f"nn.dense(%x, %w, {attrs})", lo=-128, hi=127,
                        rtol=1e-5 if (odt or dt) == "float32" else None))
    ext = np.full((1, 64), -128, np.int8)
    out.append(case("nn.dense:int8-extremes", [("x", (1, 64), "int8"), ("w", (2, 64), "int8")],
                    'nn.dense(%x, %w, out_dtype="int32")', [ext, np.full((2, 64), -128, np.int8)]))
    out.append(case("nn.dense:nan-inf", [("x", (2, 4), "float32"), ("w", (3, 4), "float32")],
                    "nn.dense(%x, %w)", specials=True))
    for ashape, bshape, ta, tb in table.MATMUL:
        for dt in table.MATMUL_DTYPES:
            out.append(case(f"nn.matmul:{ashape}-{bshape}-{ta}-{tb}-{dt}",
                            [("a", ashape, dt), ("b", bshape, dt)],
                            f"nn.matmul(%a, %b, transpose_a={ta}, transpose_b={tb})"))
    out.append(case("nn.matmul:units-int8", [("a", (3, 6), "int8"), ("b", (6, 2), "int8")],
                    'nn.matmul(%a, %b, units=2, out_dtype="int32")'))
    for xs, ys, ta, tb in table.BATCH_MATMUL:
        for dt in table.BATCH_MATMUL_DTYPES:
            odt = ', out_dtype="int32"' if dt == "int8" else ""
            out.append(case(f"nn.batch_matmul:{xs}-{ys}-{ta}-{tb}-{dt}",
                            [("x", xs, dt), ("y", ys, dt)],
                            f"nn.batch_matmul(%x, %y, transpose_a={ta}, transpose_b={tb}{odt})"))
    return out


# ---------------------------------------------------------------- einsum

def einsum_cases():
    """Contractions, diagonals, implicit results, broadcast ellipses,
    integer wrap-around, one operand and three."""
    out = []
    for eq, shapes in [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]),
                       ("ii", [(3, 3)]), ("ij,jk", [(3, 4), (4, 2)]),
                       ("...j,...j->...", [(2, 3, 4), (1, 3, 4)]), ("bij->jb", [(2, 3, 4)]),
                       ("i,j->ij", [(3,), (4,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
                       ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("i,i", [(6,), (6,)]),
                       ("Ab,bC->AC", [(2, 3), (3, 2)])]:
        for dt in ("float32", "int8", "float16"):
            params = [(f"x{i}", s, dt) for i, s in enumerate(shapes)]
            operands = ", ".join(f"%x{i}" for i in range(len(shapes)))
            out.append(case(f"einsum:{eq}-{dt}", params,
                            f'einsum(({operands},), equation="{eq}")'))
    out.append(case("einsum:fused", [("a", (3, 4), "float32"), ("b", (4, 2), "float32")],
                    'nn.relu(einsum((%a, negative(%b)), equation="ij,jk->ik"))'))
    return out


# ------------------------------------------- normalisation, flatten, pad

def norm_and_shape_cases():
    out = []
    for dt in FLOATS:
        for shape, axis in [((2, 3, 2, 2), 1), ((5, 3), 1), ((2, 4, 3), -1)]:
            for center, scale in [(True, True), (False, True), (True, False)]:
                name = f"nn.batch_norm:{dt}-{shape}-{axis}-{center}-{scale}"
                rng = rng_for(name)
                c = shape[axis]
                args = [data(rng, shape, dt)] + [data(rng, (c,), dt) for _ in range(3)]
                args.append(np.abs(data(rng, (c,), dt)) + np.asarray(0.5, dt))
                params = [("x", shape, dt)] + [(n, (c,), dt) for n in ("g", "b", "m", "v")]
                out.append(case(name, params,
                                f"nn.batch_norm(%x, %g, %b, %m, %v, axis={axis}, "
                                f"epsilon=0.001f, center={center}, scale={scale})", args))
    params = [("x", (2, 3, 2), "float32")] + [(n, (3,), "float32") for n in "gbmv"]
    rng = rng_for("bn-relu")
    args = [data(rng, (2, 3, 2), "float32")] + [data(rng, (3,), "float32") for _ in range(3)]
    args.append(np.abs(data(rng, (3,), "float32")) + np.float32(0.5))
    out.append(case("nn.batch_norm:item-relu", params,
                    "%0 = nn.batch_norm(%x, %g, %b, %m, %v);\n  nn.relu(%0.0)", args))
    for dt in FLOATS:
        for shape, axis in [((2, 5), -1), ((2, 3, 6), 2), ((4, 3, 2), 1)]:
            for center, scale in [(True, True), (False, False), (True, False)]:
                c = shape[axis]
                out.append(case(f"nn.layer_norm:{dt}-{shape}-{axis}-{center}-{scale}",
                                [("x", shape, dt), ("g", (c,), dt), ("b", (c,), dt)],
                                f"nn.layer_norm(%x, %g, %b, axis={axis}, epsilon=1e-05f, "
                                f"center={center}, scale={scale})"))
    for dt in FLOATS:
        for shape, axis in [((2, 3, 4), 1), ((1, 2, 3, 3), 1), ((2, 3, 2, 4), -1)]:
            c = shape[axis]
            vecs = [("g", (c,), dt), ("b", (c,), dt)]
            out.append(case(f"nn.instance_norm:{dt}-{shape}-{axis}", [("x", shape, dt), *vecs],
                            f"nn.instance_norm(%x, %g, %b, axis={axis}, epsilon=1e-05f)"))
        for shape, groups, center, scale in [((2, 4, 3), 2, True, True),
                                             ((1, 6, 2, 2), 3, False, True),
                                             ((2, 4), 4, True, False),
                                             ((1, 4, 2, 3), 1, True, True)]:
            vecs = [("g", (shape[1],), dt), ("b", (shape[1],), dt)]
            out.append(case(f"nn.group_norm:{dt}-{shape}-{groups}-{center}-{scale}",
                            [("x", shape, dt), *vecs],
                            f"nn.group_norm(%x, %g, %b, num_groups={groups}, epsilon=1e-05f, "
                            f"center={center}, scale={scale})"))
        for shape, axis in [((2, 5), "[1]"), ((2, 3, 4), "[0, 2]"), ((3, 4), None)]:
            given = "" if axis is None else f", axis={axis}"
            out.append(case(f"nn.l2_normalize:{dt}-{shape}-{axis}", [("x", shape, dt)],
                            f"nn.l2_normalize(%x, eps=1e-06f{given})"))
    out.append(case("nn.l2_normalize:zero-rows", [("x", (2, 3), "float32")],
                    "nn.l2_normalize(%x, eps=1e-06f, axis=[1])",
                    [np.array([[0, 0, 0], [3, 0, -4]], np.float32)]))
    const = np.array([[2.0, 2.0, 2.0, 2.0], [1e4, 1e4 + 1, 1e4, 1e4 - 1],
                      [np.nan, 0, 1, 2]], np.float32)
    out.append(case("nn.layer_norm:constant-rows",
                    [("x", (3, 4), "float32"), ("g", (4,), "float32"), ("b", (4,), "float32")],
                    "nn.layer_norm(%x, %g, %b, epsilon=0.001f)",
                    [const, np.ones(4, np.float32), np.zeros(4, np.float32)]))
    out.append(case("nn.prelu:nan-alpha", [("x", (2, 3), "float32"), ("a", (3,), "float32")],
                    "nn.prelu(%x, %a)",
                    [np.array([[-1, 0, -0.0], [2, -3, np.nan]], np.float32),
                     np.array([np.nan, np.inf, 0.5], np.float32)]))
    for dt in ["float32", "int8", "bool", "float16"]:
        out.append(case(f"nn.dropout:{dt}", [("x", (3, 4), dt)], "nn.dropout(%x, rate=0.3f)",
                        specials=True))
    out.append(case("nn.dropout:item", [("x", (3, 4), "float32")],
                    "%0 = nn.dropout(%x, rate=0.5f);\n  exp(%0.0)"))
    for shape in [(2,), (2, 3), (2, 3, 4, 5), (1, 1, 1)]:
        for dt in ["int16", "float32"]:
            out.append(case(f"nn.batch_flatten:{shape}-{dt}", [("x", shape, dt)],
                            "nn.batch_flatten(%x)"))
    out.append(case("nn.batch_flatten:fused", [("x", (2, 3, 2, 2), "float32")],
                    "nn.batch_flatten(negative(%x))"))
    for mode in ["constant", "edge", "reflect"]:
        for shape, widths in [((4,), [[1, 2]]), ((3, 4), [[0, 0], [2, 1]]),
                              ((1, 2, 3, 4), [[0, 0], [0, 0], [2, 2], [1, 3]]),
                              ((2, 3), [[1, 1], [0, 2]])]:
            for dt in ["float32", "int8", "uint8", "float16"]:
                name = f"nn.pad:{mode}-{shape}-{dt}"
                x = data(rng_for(name), shape, dt)
                out.append(case(name, [("x", shape, dt), ("v", (), "float32")],
                                f'nn.pad(%x, %v, pad_width={widths}, pad_mode="{mode}")',
                                [x, np.array(7.9, np.float32)]))
    for value, dt in [(300.7, "int8"), (np.nan, "int32"), (-2.5, "uint8"), (0.1, "float16"),
                      (-np.inf, "float32"), (1e10, "int32")]:
        name = f"nn.pad:value-{value}-{dt}"
        out.append(case(name, [("x", (2, 2), dt), ("v", (), "float64")],
                        "nn.pad(%x, %v, pad_width=[[1, 0], [0, 1]])",
                        [data(rng_for(name), (2, 2), dt), np.array(value, np.float64)]))
    out.append(case("nn.pad:reflect-widest", [("x", (3, 4), "int16")],
                    'nn.pad(%x, 0f, pad_width=[[2, 2], [3, 3]], pad_mode="reflect")'))
    out.append(case("nn.pad:edge-of-one", [("x", (1, 1), "float32")],
                    'nn.pad(%x, 0f, pad_width=[[2, 1], [0, 3]], pad_mode="edge")'))
    out.append(case("nn.pad:literal-value", [("x", (2, 3), "float32")],
                    "nn.pad(%x, 1.5f, pad_width=[[1, 1], [2, 0]])"))
    out.append(case("nn.pad:empty-axis", [("x", (0, 2), "float32")],
                    "nn.pad(%x, 3f, pad_width=[[1, 1], [0, 0]])",
                    [np.zeros((0, 2), np.float32)]))
    return out


def zero_variance_cases():
    """var + epsilon == 0: (x - mean) / 0 is +-inf, or NaN where x == mean."""
    return [case("nn.batch_norm:zero-variance",
                 [("x", (2, 3), "float32")] + [(n, (3,), "float32") for n in "gbmv"],
                 "nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0f).0",
                 [np.array([[1, 2, np.inf], [0, -1, 3]], np.float32),
                  np.array([1, 2, 3], np.float32), np.array([0, 1, 0], np.float32),
                  np.array([1, 2, 3], np.float32), np.array([0, 4, 1], np.float32)])]


def all_cases():
    return (activation_cases() + softmax_cases() + linear_cases() + norm_and_shape_cases()
            + zero_variance_cases() + einsum_cases())


def test_activations_and_bias_add():
    check_cases(activation_cases(), "nn_act")


def test_softmax():
    check_cases(softmax_cases(), "nn_softmax")


def test_dense_matmul_batch_matmul():
    check_cases(linear_cases(), "nn_linear")


def test_einsum():
    check_cases(einsum_cases(), "nn_einsum")


def test_normalisation_dropout_flatten_pad():
    check_cases(norm_and_shape_cases(), "nn_norm")


def test_batch_norm_with_zero_variance():
    check_cases(zero_variance_cases(), "nn_bn_zero")
