"""Operators added for model breadth (issue 19) compiled to C against the
interpreter, all in one build: scatter_elements and scatter_nd in every
reduction (repeated positions, negative and out-of-range indices, int8
and float data, fused operands and epilogues); nn.depth_to_space (DCR,
CRD) and nn.space_to_depth in NCHW and NHWC; the bitwise operators and
shifts on every integer width with shift amounts out of range;
nn.mirror_pad in both modes at the largest widths."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from test_ops_c import text_case as case, values

T34 = "Tensor[(3, 4), float32]"
X34 = values((3, 4), seed=1)


def scatter_cases():
    out = []
    idx = np.array([[1, -1, 9], [0, 0, 0]], np.int64)       # repeated, negative, clamped
    upd = values((2, 3), seed=2)
    for red in ("update", "add", "mul", "mean", "min", "max"):
        out.append(case(f"scatter_elements:{red}",
                        f"%x: {T34}, %i: Tensor[(2, 3), int64], %u: Tensor[(2, 3), float32]",
                        f'scatter_elements(%x, %i, %u, axis=1, reduction="{red}")',
                        X34, idx, upd))
    out += [
        case("scatter_elements:axis0-int8",
             "%x: Tensor[(3, 4), int8], %i: Tensor[(1, 4), int16], %u: Tensor[(1, 4), int8]",
             'scatter_elements(%x, %i, %u, reduction="add")', values((3, 4), "int8"),
             np.array([[2, -3, 0, 1]], np.int16), values((1, 4), "int8", seed=4)),
        case("scatter_elements:int-mean",
             "%x: Tensor[(5), int32], %i: Tensor[(3), uint8], %u: Tensor[(3), int32]",
             'scatter_elements(%x, %i, %u, reduction="mean")',
             np.array([3, -7, 1, 0, 5], np.int32), np.array([1, 1, 4], np.uint8),
             np.array([-2, 4, 8], np.int32)),
        case("scatter_elements:fused",
             f"%x: {T34}, %i: Tensor[(3, 1), int32], %u: Tensor[(3, 1), float32]",
             "exp(scatter_elements(negative(%x), add(%i, 1), multiply(%u, 2f), axis=-1))",
             X34, np.array([[0], [2], [-5]], np.int32), values((3, 1), seed=5)),
    ]
    nd = np.array([[0, 2, 0, 7], [3, 1, 3, -1]], np.int64)    # (M=2, 4): repeated, clamped
    for mode in ("update", "add", "mul", "min", "max"):
        out.append(case(f"scatter_nd:{mode}",
                        "%x: Tensor[(3, 4, 2), float32], %i: Tensor[(2, 4), int64], "
                        "%u: Tensor[(4, 2), float32]",
                        f'scatter_nd(%x, %i, %u, mode="{mode}")',
                        values((3, 4, 2), seed=6), nd, values((4, 2), seed=7)))
    out += [
        case("scatter_nd:rows-int8",
             "%x: Tensor[(4, 3), int8], %i: Tensor[(1, 2, 2), int32], "
             "%u: Tensor[(2, 2, 3), int8]",
             'scatter_nd(%x, %i, %u, mode="add")', values((4, 3), "int8"),
             np.array([[[3, 0], [3, 1]]], np.int32), values((2, 2, 3), "int8", seed=8)),
        case("scatter_nd:fused",
             "%x: Tensor[(3, 4), float32], %i: Tensor[(2, 1), int32], %u: Tensor[(1), float32]",
             "negative(scatter_nd(exp(%x), %i, %u))", X34, np.array([[2], [3]], np.int32),
             np.array([7.5], np.float32)),
    ]
    return out


def sub_pixel_cases():
    out = []
    for layout, shape in (("NCHW", (2, 8, 3, 2)), ("NHWC", (1, 3, 2, 8))):
        x = values(shape, seed=9)
        ty = f"Tensor[{shape}, float32]"
        for mode in ("DCR", "CRD"):
            out.append(case(f"nn.depth_to_space:{layout}-{mode}", f"%x: {ty}",
                            f'nn.depth_to_space(exp(%x), block_size=2, layout="{layout}", '
                            f'mode="{mode}")', x))
    out += [
        case("nn.space_to_depth:NCHW", "%x: Tensor[(1, 2, 6, 4), int8]",
             "nn.space_to_depth(%x, block_size=2)", values((1, 2, 6, 4), "int8")),
        case("nn.space_to_depth:NHWC-3", "%x: Tensor[(1, 3, 6, 2), float32]",
             'negative(nn.space_to_depth(%x, block_size=3, layout="NHWC"))',
             values((1, 3, 6, 2))),
        case("nn.depth_to_space:roundtrip", "%x: Tensor[(1, 2, 4, 4), float32]",
             'nn.depth_to_space(nn.space_to_depth(%x, block_size=2), block_size=2, mode="DCR")',
             values((1, 2, 4, 4))),
    ]
    return out


def bit_cases():
    out = []
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        a = values((3, 4), dt, seed=11, lo=-120, hi=120)
        b = values((4,), dt, seed=12, lo=-120, hi=120)
        ty = f"%a: Tensor[(3, 4), {dt}], %b: Tensor[(4), {dt}]"
        for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            out.append(case(f"{op}:{dt}", ty, f"{op}(%a, %b)", a, b))
        out.append(case(f"bitwise_not:{dt}", ty, "bitwise_not(bitwise_xor(%a, %b))", a, b))
        bits = np.dtype(dt).itemsize * 8
        amounts = np.array([0, 1, bits - 1, bits, bits + 3, 3, 2, 5] +
                           ([-1, -bits, 7, 4] if dt.startswith("int") else [7, 4, 6, 255]),
                           np.int64).astype(dt).reshape(3, 4)
        for op in ("left_shift", "right_shift"):
            out.append(case(f"{op}:{dt}", f"%a: Tensor[(3, 4), {dt}], %s: Tensor[(3, 4), {dt}]",
                            f"{op}(%a, %s)", a, amounts))
    out.append(case("right_shift:scalar-amount", "%a: Tensor[(5), int16], %s: int16",
                    "right_shift(left_shift(%a, %s), %s)", values((5,), "int16", seed=13),
                    np.array(9, np.int16)))
    return out


def mirror_pad_cases():
    x = values((2, 3, 4), seed=14)
    ty = "%x: Tensor[(2, 3, 4), float32]"
    return [
        case("nn.mirror_pad:reflect", ty,
             'nn.mirror_pad(exp(%x), pad_width=[[1, 0], [2, 2], [0, 3]], mode="REFLECT")', x),
        case("nn.mirror_pad:symmetric", ty,
             'nn.mirror_pad(%x, pad_width=[[2, 1], [3, 0], [1, 4]], mode="SYMMETRIC")', x),
        case("nn.mirror_pad:int8-fused", "%x: Tensor[(5), int8]",
             'negative(nn.mirror_pad(%x, pad_width=[[4, 3]], mode="REFLECT"))',
             values((5,), "int8")),
    ]


def all_cases():
    return scatter_cases() + sub_pixel_cases() + bit_cases() + mirror_pad_cases()


def test_breadth_operators_in_c():
    check_cases(all_cases(), "breadth")
