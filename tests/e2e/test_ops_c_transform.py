"""The transform family (aot/ir/ops/transform*.py, layout.py) compiled to C
against the interpreter: shape transforms with Relay's special reshape
values, concatenation/stacking/splitting, tile/repeat/broadcast and the
collapse_sum anchors; strided_slice in every attribute form, take in every
mode with out-of-range indices of every integer dtype, gather, one_hot and
where; cast and clip on edge values (NaN, infinities, saturation,
wrap-around, -0.0), the value-creating operators and layout_transform.
Rows from tests/cases/transform.py.  One build per test (see
test_ops_c.py)."""

from __future__ import annotations

import numpy as np
import pytest

from c_harness import check_cases
from cases import transform as table
from cases.common import attr_text, tensor_type as tt
from test_ops_c import text_case as case, values

F234 = "Tensor[(2, 3, 4), float32]"
X = values((2, 3, 4), specials=True)

def shape_cases():
    out = []
    for n, (shape, newshape, _) in enumerate(table.small(table.RESHAPES)):
        allow = ", allowzero=True" if table.reshape_allows_zero(shape) else ""
        for inner, what in (("%x", "buffer"), ("exp(%x)", "fused")):
            out.append(case(f"reshape:{n}-{what}", f"%x: {tt(shape, 'float32')}",
                            f"reshape({inner}, newshape={newshape}{allow})", values(shape, seed=n)))
    for label, dt, newshape in table.labelled_dtypes(table.RESHAPE_DTYPES):
        inner = "logical_not(%x)" if dt == "bool" else "negative(%x)"
        out.append(case(f"reshape:{label}", f"%x: {tt((2, 3, 4), dt)}",
                        f"reshape({inner}, newshape={newshape})", values((2, 3, 4), dt)))
    out += [
        case("reshape_like:plain", f"%x: {F234}, %y: Tensor[(6, 4), int8]",
             "reshape_like(exp(%x), %y)", X, values((6, 4), "int8")),
        case("reshape_like:span", f"%x: {F234}, %y: Tensor[(5, 12, 7), int8]",
             "reshape_like(%x, %y, lhs_begin=1, lhs_end=3, rhs_begin=1, rhs_end=2)",
             X, values((5, 12, 7), "int8")),
        case("squeeze:all", "%x: Tensor[(1, 3, 1, 2), float32]", "squeeze(exp(%x))",
             values((1, 3, 1, 2))),
        case("squeeze:axis", "%x: Tensor[(1, 3, 1, 2), int16]", "squeeze(%x, axis=[-2])",
             values((1, 3, 1, 2), "int16")),
        case("squeeze:first", "%x: Tensor[(1, 3, 1), bool]", "squeeze(%x, axis=[0])",
             values((1, 3, 1), "bool")),
        case("expand_dims:two", f"%x: {F234}", "expand_dims(exp(%x), axis=1, num_newaxis=2)", X),
        case("expand_dims:neg", "%x: Tensor[(2, 3), uint8]", "expand_dims(%x, axis=-1)",
             values((2, 3), "uint8")),
        case("expand_dims:zero", f"%x: {F234}", "expand_dims(exp(%x), axis=0, num_newaxis=0)", X),
        case("expand_dims:scalar", "%x: float32", "expand_dims(%x, axis=0)",
             np.array(2.5, np.float32)),
        case("transpose:reverse", f"%x: {F234}", "transpose(%x)", X),
        case("transpose:perm", f"%x: {F234}", "transpose(%x, axes=[1, 2, 0])", X),
        case("transpose:neg", f"%x: {F234}", "transpose(exp(%x), axes=[0, -1, -2])", X),
        case("transpose:f16", f"%x: {tt((2, 3, 4), 'float16')}", "transpose(%x, axes=[2, 0, 1])",
             values((2, 3, 4), "float16")),
        case("transpose:int8-4d", "%x: Tensor[(2, 1, 3, 2), int8]",
             "transpose(%x, axes=[3, 1, 0, 2])", values((2, 1, 3, 2), "int8")),
        case("reverse:0", f"%x: {F234}", "reverse(%x, axis=0)", X),
        case("reverse:last", f"%x: {F234}", "reverse(exp(%x), axis=-1)", X),
        case("reverse:int32", "%x: Tensor[(5, 2), int32]", "reverse(%x, axis=0)",
             values((5, 2), "int32")),
        case("concatenate:last", f"%x: {F234}", "concatenate((%x, %x), axis=-1)", X),
        case("concatenate:three", f"%x: {F234}, %y: Tensor[(2, 1, 4), float32]",
             "concatenate((%x, %y, exp(%x)), axis=1)", X, values((2, 1, 4), seed=1)),
        case("concatenate:first", f"%x: {F234}, %y: Tensor[(1, 3, 4), float32]",
             "concatenate((%y, %x), axis=0)", X, values((1, 3, 4), seed=2)),
        case("concatenate:one", f"%x: {F234}", "concatenate((%x,), axis=2)", X),
        case("concatenate:empty-part", f"%x: {F234}, %e: Tensor[(2, 0, 4), float32]",
             "concatenate((%e, %x, %e, %x), axis=1)", X, np.zeros((2, 0, 4), np.float32)),
        case("concatenate:int16", "%a: Tensor[(3), int16], %b: Tensor[(2), int16]",
             "concatenate((%a, add(%b, %b), %a), axis=0)", values((3,), "int16"),
             values((2,), "int16", seed=1)),
        case("concatenate:bool", "%a: Tensor[(2, 1), bool], %b: Tensor[(2, 3), bool]",
             "concatenate((%a, %b), axis=1)", values((2, 1), "bool"), values((2, 3), "bool", 1)),
        case("stack:0", f"%x: {F234}", "stack((%x, exp(%x)), axis=0)", X),
        case("stack:mid", f"%x: {F234}", "stack((%x, %x, exp(%x)), axis=1)", X),
        case("stack:last", f"%x: {F234}", "stack((%x, negative(%x)), axis=-1)", X),
        case("stack:one", f"%x: {F234}", "stack((%x,), axis=3)", X),
        case("stack:uint8", "%a: Tensor[(3), uint8], %b: Tensor[(3), uint8]",
             "stack((%a, %b), axis=1)", values((3,), "uint8"), values((3,), "uint8", 1)),
        case("split:sections", f"%x: {F234}", "split(%x, indices_or_sections=3, axis=1)", X),
        case("split:indices", f"%x: {F234}",
             "split(exp(%x), indices_or_sections=[1, 3], axis=2)", X),
        case("split:item", f"%x: {F234}",
             "add(split(%x, indices_or_sections=2, axis=0).1, "
             "split(%x, indices_or_sections=2, axis=0).0)", X),
        case("split:int8-neg-axis", "%x: Tensor[(2, 6), int8]",
             "split(%x, indices_or_sections=[2, 4, 5], axis=-1)", values((2, 6), "int8")),
        case("tile:plain", f"%x: {F234}", "tile(%x, reps=[2, 1, 2])", X),
        case("tile:longer", "%x: Tensor[(2, 3), float32]", "tile(exp(%x), reps=[2, 1, 3])",
             values((2, 3))),
        case("tile:shorter", f"%x: {F234}", "tile(%x, reps=[3])", X),
        case("tile:empty", f"%x: {F234}", "tile(%x, reps=[])", X),
        case("tile:int32", "%x: Tensor[(1, 3), int32]", "tile(%x, reps=[4, 1])",
             values((1, 3), "int32")),
        case("repeat:last", f"%x: {F234}", "repeat(%x, repeats=2, axis=-1)", X),
        case("repeat:0", f"%x: {F234}", "repeat(exp(%x), repeats=3, axis=0)", X),
        case("repeat:1", f"%x: {F234}", "repeat(%x, repeats=1, axis=1)", X),
        case("repeat:bool", "%x: Tensor[(2, 2), bool]", "repeat(%x, repeats=3, axis=1)",
             values((2, 2), "bool")),
        case("broadcast_to:plain", "%x: Tensor[(3, 1), float32]",
             "broadcast_to(%x, shape=[2, 3, 4])", values((3, 1))),
        case("broadcast_to:same", f"%x: {F234}", "broadcast_to(exp(%x), shape=[2, 3, 4])", X),
        case("broadcast_to:scalar-int8", "%x: int8", "broadcast_to(%x, shape=[2, 2])",
             np.array(-7, np.int8)),
        case("broadcast_to_like:plain", f"%x: Tensor[(4), uint8], %y: {F234}",
             "broadcast_to_like(%x, %y)", values((4,), "uint8"), X),
        case("broadcast_to_like:f16", "%x: Tensor[(2, 1), float16], %y: Tensor[(2, 5), int8]",
             "broadcast_to_like(%x, %y)", values((2, 1), "float16"), values((2, 5), "int8")),
    ]
    return out


def collapse_cases():
    return [
        case("collapse_sum_like:plain", f"%x: {F234}, %y: Tensor[(3, 1), float32]",
             "collapse_sum_like(%x, %y)", X, values((3, 1))),
        case("collapse_sum_like:lead", f"%x: {F234}, %y: Tensor[(4), float32]",
             "collapse_sum_like(exp(%x), %y)", X, values((4,))),
        case("collapse_sum_like:scalar", f"%x: {F234}, %y: float32", "collapse_sum_like(%x, %y)",
             X, np.float32(0)),
        case("collapse_sum_like:none", f"%x: {F234}, %y: {F234}", "collapse_sum_like(%x, %y)",
             X, X),
        case("collapse_sum_like:keep1",
             "%x: Tensor[(2, 1, 3), float32], %y: Tensor[(1, 1, 3), float32]",
             "collapse_sum_like(%x, %y)", values((2, 1, 3)), values((1, 1, 3))),
        case("collapse_sum_to:plain", f"%x: {F234}, %s: Tensor[(3), int64]",
             "collapse_sum_to(%x, %s, shape=[2, 1, 4])", X, np.array([2, 1, 4], np.int64)),
        case("collapse_sum_to:lead", f"%x: {F234}, %s: Tensor[(2), int64]",
             "collapse_sum_to(%x, %s, shape=[3, 4])", X, np.array([3, 4], np.int64)),
        case("collapse_sum_like:int8-wraps", "%x: Tensor[(40, 3), int8], %y: Tensor[(3), int8]",
             "collapse_sum_like(%x, %y)", values((40, 3), "int8", lo=100, hi=127),
             values((3,), "int8")),
        case("collapse_sum_like:uint64",
             "%x: Tensor[(3, 2), uint64], %y: Tensor[(1, 2), uint64]",
             "collapse_sum_like(%x, %y)",
             np.array([[2**64 - 1, 5], [2**63, 7], [2**63, 9]], np.uint64),
             np.zeros((1, 2), np.uint64)),
        case("collapse_sum_like:int32", "%x: Tensor[(2, 2), int32], %y: Tensor[(2), int32]",
             "collapse_sum_like(%x, %y)", np.array([[2**31 - 1, -5], [1, -2**31]], np.int32),
             np.zeros(2, np.int32)),
        case("collapse_sum_like:f16", "%x: Tensor[(8, 3), float16], %y: Tensor[(1, 3), float16]",
             "collapse_sum_like(%x, %y)", values((8, 3), "float16"), values((1, 3), "float16"),
             rtol=3e-3),
        case("collapse_sum_like:negzero",
             "%x: Tensor[(2, 2), float32], %y: Tensor[(1, 2), float32]",
             "collapse_sum_like(%x, %y)", np.full((2, 2), -0.0, np.float32),
             np.zeros((1, 2), np.float32)),
        case("collapse_sum_like:epilogue", f"%x: {F234}, %y: Tensor[(3, 1), float32]",
             "multiply(collapse_sum_like(exp(%x), %y), %y)", X, values((3, 1), seed=3)),
    ]


# ============================================================== index ops

X3 = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
T3 = "Tensor[(4, 5, 6), float32]"

def slice_take_cases():
    slices = [attr_text(a) for a in table.SLICES]
    out = [case(f"strided_slice:{n}", f"%x: {T3}", f"strided_slice(%x, {a})", X3)
           for n, a in enumerate(slices)]
    out += [case(f"strided_slice:{n}-fused", f"%x: {T3}",
                 f"strided_slice(exp(multiply(%x, 0.01f)), {a})", X3)
            for n, a in enumerate(slices) if n % 3 == 0]
    out += [case(f"strided_slice:{dt}", f"%x: {tt((3, 4), dt)}",
                 "strided_slice(%x, begin=[2, 3], end=[0, 0], strides=[-1, -2])",
                 values((3, 4), dt, specials=True)) for dt in ["int8", "bool", "float16"]]
    for mode in table.TAKE_MODES:
        for dt in table.INDEX_DTYPES:
            i = table.index_values(dt)
            if mode == "fast":          # fast promises in-range indices: give it those
                i = np.array([v for v in i.tolist() if -5 <= v < 5][:4], dtype=dt)
            out.append(case(f"take:{mode}-{dt}", f"%x: {T3}, %i: Tensor[({len(i)}), {dt}]",
                            f'take(%x, %i, axis=1, mode="{mode}")', X3, i))
    out += [
        case("take:none-clip", f"%x: {T3}, %i: Tensor[(2, 3), int32]",
             'take(%x, %i, mode="clip")', X3, np.array([[0, 119, 120], [-1, 57, 500]], np.int32)),
        case("take:none-wrap", f"%x: {T3}, %i: Tensor[(2, 3), int64]",
             'take(%x, %i, mode="wrap")', X3,
             np.array([[0, 119, 120], [-1, 57, -500]], np.int64)),
        case("take:axis0-2d", f"%x: {T3}, %i: Tensor[(2, 2), int32]",
             'take(%x, %i, axis=0, mode="wrap")', X3, np.array([[0, -1], [5, 2]], np.int32)),
        case("take:last-axis", f"%x: {T3}, %i: Tensor[(3), int32]",
             'take(%x, %i, axis=-1, mode="clip")', X3, np.array([5, 6, -3], np.int32)),
        case("take:scalar-index", f"%x: {T3}, %i: int32", "take(%x, %i, axis=2)", X3,
             np.array(4, np.int32)),
        case("take:batch1", "%x: Tensor[(2, 5, 3), float32], %i: Tensor[(2, 4), int32]",
             'take(%x, %i, axis=1, batch_dims=1, mode="wrap")', values((2, 5, 3)),
             np.array([[0, 4, 6, -1], [2, 3, -7, 1]], np.int32)),
        case("take:batch-neg", "%x: Tensor[(2, 3, 5), float32], %i: Tensor[(2, 3, 2), int32]",
             'take(%x, %i, axis=2, batch_dims=-1, mode="clip")', values((2, 3, 5)),
             np.array([[[0, 9], [-1, 2], [4, 3]], [[1, 1], [5, 0], [2, -4]]], np.int32)),
        case("take:axis-extent1", "%x: Tensor[(3, 1), float32], %i: Tensor[(4), int32]",
             'take(%x, %i, axis=1, mode="wrap")', values((3, 1)),
             np.array([0, 5, -3, 9], np.int32)),
        case("take:empty-indices", f"%x: {T3}, %i: Tensor[(0), int32]", "take(%x, %i, axis=1)",
             X3, np.zeros(0, np.int32)),
        case("take:pow2-wrap", "%x: Tensor[(8, 2), int16], %i: Tensor[(5), int8]",
             'take(%x, %i, axis=0, mode="wrap")', values((8, 2), "int16"),
             np.array([-128, -1, 7, 8, 127], np.int8)),
        case("take:computed", "%x: Tensor[(5, 3), float32], %i: Tensor[(4), float32]",
             'take(%x, cast(multiply(%i, 3f), dtype="int16"), axis=0, mode="wrap")',
             values((5, 3)), np.array([0.5, -1.2, 2.9, np.nan], np.float32)),
        case("take:bool-data", "%x: Tensor[(6), bool], %i: Tensor[(3), int32]",
             "take(%x, %i, axis=0)", values((6,), "bool"), np.array([5, 0, 9], np.int32)),
    ]
    return out


def gather_onehot_where_cases():
    out = []
    for axis, shape in table.GATHERS:
        for dt in table.GATHER_DTYPES:
            out.append(case(f"gather:{axis}-{dt}", f"%x: {T3}, %i: {tt(shape, dt)}",
                            f"gather(%x, %i, axis={axis})", X3,
                            values(shape, dt, seed=axis + 5, lo=-8, hi=8)))
    out.append(case("gather:fused", "%x: Tensor[(3, 4), float32], %i: Tensor[(3, 1), int32]",
                    "exp(gather(negative(%x), add(%i, 1), axis=1))", values((3, 4)),
                    np.array([[0], [2], [3]], np.int32)))
    out.append(case("gather:int8-data", "%x: Tensor[(3, 4), int8], %i: Tensor[(2, 4), int16]",
                    "gather(%x, %i, axis=0)", values((3, 4), "int8"),
                    np.array([[0, 2, 1, 2], [2, 2, 0, 1]], np.int16)))
    nd = np.array([[[0, 3], [1, 9]], [[4, 0], [-2, 1]]], np.int64)   # (M=2, 2, 2), clamped
    out += [
        case("gather_nd:tuples", f"%x: {T3}, %i: Tensor[(2, 2, 2), int64]",
             "gather_nd(%x, %i)", X3, nd),
        case("gather_nd:batch", f"%x: {T3}, %i: Tensor[(1, 4, 3), int16]",
             "gather_nd(%x, %i, batch_dims=1)", X3,
             values((1, 4, 3), "int16", seed=3, lo=-2, hi=7)),
        case("gather_nd:full", "%x: Tensor[(3, 4), int8], %i: Tensor[(2, 5), int32]",
             "gather_nd(%x, %i)", values((3, 4), "int8"),
             np.array([[0, 2, 1, 2, 5], [3, 0, 1, -1, 2]], np.int32)),
        case("gather_nd:fused", f"%x: {T3}, %i: Tensor[(1, 3), int32]",
             "exp(gather_nd(negative(%x), add(%i, 1)))", X3, np.array([[0, 2, 3]], np.int32)),
    ]
    for k in (-2, 0, 1, 7):
        for upper in (True, False):
            out.append(case(f"trilu:{k}-{upper}", f"%x: {T3}, %k: int64",
                            f"trilu(%x, %k, upper={upper})", X3, np.array(k, np.int64)))
    out.append(case("trilu:int8-k", "%x: Tensor[(3, 2), uint8], %k: int8",
                    "trilu(%x, %k, upper=False)", values((3, 2), "uint8"), np.array(-1, np.int8)))
    for axis, dt, odt in table.ONE_HOTS:
        i = table.one_hot_indices(dt)
        out.append(case(f"one_hot:{axis}-{dt}-{odt}", f"%i: Tensor[(2, 3), {dt}]",
                        f'one_hot(%i, 5f, -1f, depth=4, axis={axis}, dtype="{odt}")', i))
    out += [
        case("one_hot:convert", "%i: Tensor[(3), int32], %on: float32, %off: float32",
             'one_hot(%i, %on, %off, depth=3, axis=0, dtype="int8")',
             np.array([2, 0, 7], np.int32), np.float32(300.7), np.float32(-2.9)),
        case("one_hot:scalar", "%i: int32", 'one_hot(%i, 1f, 0f, depth=3, dtype="float32")',
             np.array(1, np.int32)),
        case("one_hot:uint64-huge", "%i: Tensor[(2), uint64]",
             'one_hot(%i, 1, 0, depth=3, dtype="int32")', np.array([2**64 - 1, 1], np.uint64)),
        case("where:bool", "%c: Tensor[(3, 1), bool], %x: Tensor[(2, 3, 4), float32], "
             "%y: Tensor[(4), float32]", "where(%c, %x, %y)", values((3, 1), "bool"),
             values((2, 3, 4)), values((4,), seed=1)),
        case("where:float-nan", "%c: Tensor[(4), float32], %x: Tensor[(4), int8], "
             "%y: Tensor[(4), int8]", "where(%c, %x, %y)",
             np.array([0.0, -0.0, np.nan, 2.5], np.float32), values((4,), "int8"),
             values((4,), "int8", seed=2)),
        case("where:int-scalar", "%c: Tensor[(2, 2), int32], %x: float32, "
             "%y: Tensor[(2, 2), float32]", "where(%c, %x, %y)",
             np.array([[0, 3], [-1, 0]], np.int32), np.float32(9), values((2, 2))),
        case("where:compare", "%x: Tensor[(2, 3), float32]",
             "where(greater(%x, 0f), exp(%x), multiply(%x, 0.5f))", values((2, 3))),
        case("where:uint8-f16", "%c: Tensor[(2, 3), uint8], %x: Tensor[(2, 3), float16], "
             "%y: Tensor[(3), float16]", "where(%c, %x, %y)", values((2, 3), "uint8", lo=0, hi=2),
             values((2, 3), "float16"), values((3,), "float16", seed=4)),
    ]
    return out


# =================================================== cast, clip, init, layout

def _tensor(x: np.ndarray) -> str:
    return tt(x.shape, x.dtype.name)


def cast_init_layout_cases():
    out = []
    for src, dst in table.CAST_PAIRS:
        x = table.edge_values(src)
        out.append(case(f"cast:{src}-{dst}", f"%x: {_tensor(x)}", f'cast(%x, dtype="{dst}")', x))
    out += [
        case("cast_like:f32-i16", "%x: Tensor[(20), float32], %y: Tensor[(2), int16]",
             "cast_like(%x, %y)", table.edge_values("float32"), np.zeros(2, np.int16)),
        case("cast_like:i8-f16", f"%x: {_tensor(table.edge_values('int8'))}, %y: Tensor[(1), float16]",
             "cast_like(%x, %y)", table.edge_values("int8"), np.zeros(1, np.float16)),
        case("cast:fused", "%x: Tensor[(20), float32]",
             'add(cast(multiply(%x, 2f), dtype="int8"), 3i8)', table.edge_values("float32")),
    ]
    for name, dt, bounds in table.CLIPS:
        x = table.edge_values(dt)
        out.append(case(f"clip:{name}", f"%x: {_tensor(x)}", f"clip(%x, {bounds})", x))
    out.append(case("clip:fused", "%x: Tensor[(2, 3), float32]",
                    "exp(clip(negative(%x), a_min=0f, a_max=1f))", values((2, 3))))
    out += [
        case("zeros:i16", "", 'zeros(shape=[2, 2], dtype="int16")'),
        case("zeros:scalar", "", 'zeros(shape=[], dtype="float32")'),
        case("zeros:added", "%x: Tensor[(3), float16]",
             'add(%x, zeros(shape=[2, 3], dtype="float16"))', values((3,), "float16")),
        case("ones:f32", "", 'ones(shape=[3], dtype="float32")'),
        case("ones:bool", "", 'ones(shape=[2, 3], dtype="bool")'),
        case("ones:multiplied", "%x: Tensor[(2, 1), int32]",
             'multiply(%x, ones(shape=[2, 4], dtype="int32"))', values((2, 1), "int32")),
        case("full:int8", "", 'full(7, shape=[2], dtype="int8")'),
        case("full:saturate", "%v: float32", 'full(%v, shape=[2, 2], dtype="int8")',
             np.float32(300.7)),
        case("full:nan-to-int", "%v: float32", 'full(%v, shape=[3], dtype="uint16")',
             np.float32(np.nan)),
        case("full:wrap", "%v: int32", 'full(%v, shape=[3], dtype="uint8")', np.int32(-1)),
        case("full:default-dtype", "%v: float16", "full(%v, shape=[2, 1])", np.float16(-0.0)),
        case("full:inf-f32", "%v: float64", 'full(%v, shape=[2], dtype="float32")',
             np.float64(1e300)),
        case("full_like:i16", "%x: Tensor[(2, 3), int16], %v: float64", "full_like(%x, %v)",
             values((2, 3), "int16"), np.float64(-7.9)),
        case("full_like:bool", "%x: Tensor[(4), bool], %v: float32", "full_like(%x, %v)",
             values((4,), "bool"), np.float32(np.nan)),
        case("full_like:f32-literal", "%x: Tensor[(2, 2), float32]", "full_like(%x, -2.5f)",
             values((2, 2))),
        case("zeros_like:f64", "%x: Tensor[(2, 3), float64]", "zeros_like(%x)",
             values((2, 3), "float64")),
        case("zeros_like:int8", "%x: Tensor[(3), int8]", "add(%x, zeros_like(%x))",
             values((3,), "int8")),
        case("ones_like:u32", "%x: Tensor[(2, 3), uint32]", "ones_like(%x)",
             values((2, 3), "uint32")),
        case("ones_like:fused", "%x: Tensor[(2, 3), float32]", "add(%x, ones_like(%x))",
             values((2, 3))),
        case("ones_like:bool", "%x: Tensor[(2), bool]", "ones_like(%x)", values((2,), "bool")),
        case("arange:f32", "", 'arange(0f, 5f, 2f, start=0f, stop=5f, step=2f, dtype="float32")'),
        case("arange:f32-frac", "",
             'arange(0.1f, 1f, 0.1f, start=0.1f, stop=1f, step=0.1f, dtype="float32")'),
        case("arange:neg-step", "",
             'arange(3f, -2f, -0.5f, start=3f, stop=-2f, step=-0.5f, dtype="float32")'),
        case("arange:f16", "", 'arange(1000f16, 1010f16, 0.7f16, start=1000f, stop=1010f, '
             'step=0.7f, dtype="float16")'),
        case("arange:int8-wraps", "", 'arange(100i8, 10i8, -30i8, start=100f, stop=10f, '
             'step=-30f, dtype="int8")'),
        case("arange:uint8", "", 'arange(250u8, 255u8, 1u8, start=250f, stop=255f, step=1f, '
             'dtype="uint8")'),
        case("arange:args", "%a: int32, %b: int32, %c: int32",
             'arange(%a, %b, %c, start=-3f, stop=9f, step=4f, dtype="int32")',
             np.int32(-3), np.int32(9), np.int32(4)),
        case("arange:args-f32", "%a: float32, %b: float32, %c: float32",
             'arange(%a, %b, %c, start=0.5f, stop=3f, step=0.25f, dtype="float32")',
             np.float32(0.5), np.float32(3), np.float32(0.25)),
        case("arange:empty", "",
             'arange(5f, 0f, 1f, start=5f, stop=0f, step=1f, dtype="float32")'),
        case("arange:fused", "%x: Tensor[(4), float32]",
             'multiply(%x, arange(0f, 4f, 1f, start=0f, stop=4f, step=1f, dtype="float32"))',
             values((4,))),
    ]
    for n, (shape, src, dst) in enumerate(table.LAYOUTS):
        dt = ["float32", "int8", "float16", "uint8", "int32"][n % 5]
        inner = "negative(%x)" if n % 2 else "%x"
        out.append(case(f"layout_transform:{src}-{dst}-{dt}", f"%x: {tt(shape, dt)}",
                        f'layout_transform({inner}, src_layout="{src}", dst_layout="{dst}")',
                        values(shape, dt, seed=n)))
    out.append(case("layout_transform:roundtrip", "%x: Tensor[(1, 8, 2, 2), float32]",
                    'layout_transform(add(layout_transform(%x, src_layout="NCHW", '
                    'dst_layout="NCHW4c"), 1f), src_layout="NCHW4c", dst_layout="NHWC")',
                    values((1, 8, 2, 2))))
    return out


def all_cases():
    return (shape_cases() + collapse_cases() + slice_take_cases() + gather_onehot_where_cases()
            + cast_init_layout_cases())


def test_shape_transforms():
    check_cases(shape_cases() + collapse_cases(), "tr_shape")


def test_strided_slice_and_take():
    check_cases(slice_take_cases(), "tr_slice")


def test_gather_one_hot_where():
    check_cases(gather_onehot_where_cases(), "tr_gather")


def test_cast_clip_init_layout():
    check_cases(cast_init_layout_cases(), "tr_init")


@pytest.mark.parametrize("rows", [3, 5, 9])
def test_concatenate_rows_alone(rows):
    """A kernel of its own (as the random chains draw it): gcc 12.2 -O3
    with AVX2 vectorised ``c ? x[i][j] : x[i-3][j]`` over a 6x2 nest with a
    masked load whose mask dropped row 3 (zeros); 5x2 and 9x2 likewise.
    concatenate now selects with ``aot_pick_f32`` over min/max-clamped
    indices (aot/emit/lower/ops/transform.py)."""
    check_cases([case(f"concatenate:rows-{rows}x2", f"%x: {tt((rows, 2), 'float32')}",
                      "concatenate((%x, %x), axis=0)", values((rows, 2), seed=rows))],
                name=f"rows{rows}")

