"""The ``grad`` column: every operator is differentiable (has a rule) or says
why not, and every rule equals central differences in float64.

Each rule is checked through ``aot.gradient`` on ``sum(op(args) * R)`` with
a random constant ``R`` (so the seed is not all ones and a rule that only
gets the sum right, softmax's for instance, fails), against central
differences of the same function evaluated by the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.ops.gradients import NOT_DIFFERENTIABLE, RULES
from aot.ir.registry import all_ops, lookup

Domain = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape)


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape)


def unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-0.8, 0.8, shape)


def away_from_zero(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Away from the kinks of relu, abs, clip(+-0.5) and the ties of maximum."""
    x = rng.uniform(0.1, 0.4, shape) + rng.integers(0, 2, shape) * 0.5
    return x * rng.choice([-1.0, 1.0], shape)


def with_zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values with every third one exactly zero (products divide by nothing)."""
    x = rng.standard_normal(shape)
    x.reshape(-1)[::3] = 0.0
    return x


@dataclass
class Case:
    op: str
    shapes: list[tuple[int, ...]]
    attrs: dict[str, Any] = field(default_factory=dict)
    domain: Domain = normal
    #: builds the call from the parameters (default: op(*params, **attrs))
    build: Callable[..., Any] | None = None
    id: str = ""


CASES = [
    Case("add", [(2, 3), (3,)]),
    Case("subtract", [(2, 1), (2, 3)]),
    Case("multiply", [(1, 3), (2, 3)]),
    Case("divide", [(2, 3), (3,)], domain=positive),
    Case("power", [(2, 3), (2, 3)], domain=positive),
    Case("maximum", [(2, 3), (3,)], domain=away_from_zero),
    Case("minimum", [(2, 3), (2, 3)], domain=away_from_zero),
    Case("negative", [(2, 3)]),
    Case("copy", [(2, 3)]),
    Case("exp", [(2, 3)]),
    Case("log", [(2, 3)], domain=positive),
    Case("log2", [(2, 3)], domain=positive),
    Case("log10", [(2, 3)], domain=positive),
    Case("sqrt", [(2, 3)], domain=positive),
    Case("rsqrt", [(2, 3)], domain=positive),
    Case("tanh", [(2, 3)]),
    Case("sigmoid", [(2, 3)]),
    Case("sin", [(2, 3)]),
    Case("cos", [(2, 3)]),
    Case("tan", [(2, 3)], domain=unit),
    Case("sinh", [(2, 3)]),
    Case("cosh", [(2, 3)]),
    Case("asin", [(2, 3)], domain=unit),
    Case("acos", [(2, 3)], domain=unit),
    Case("atan", [(2, 3)]),
    Case("erf", [(2, 3)]),
    Case("abs", [(2, 3)], domain=away_from_zero),
    Case("clip", [(2, 3)], {"a_min": -0.5, "a_max": 0.5}, domain=away_from_zero),
    Case("cast", [(2, 3)], {"dtype": "float64"}),
    Case("nn.relu", [(2, 3)], domain=away_from_zero),
    Case("nn.leaky_relu", [(2, 3)], {"alpha": 0.1}, domain=away_from_zero),
    Case("nn.dense", [(2, 3), (4, 3)]),
    Case("nn.dense", [(2, 2, 3), (4, 3)], id="nn.dense-3d"),
    Case("nn.bias_add", [(2, 4, 3), (4,)]),
    Case("nn.bias_add", [(2, 3, 4), (4,)], {"axis": -1}, id="nn.bias_add-last"),
    Case("nn.softmax", [(2, 5)]),
    Case("nn.softmax", [(3, 2)], {"axis": 0}, id="nn.softmax-axis0"),
    Case("nn.log_softmax", [(2, 5)]),
    Case("nn.global_avg_pool2d", [(1, 2, 3, 3)]),
    Case("nn.global_avg_pool2d", [(1, 3, 3, 2)], {"layout": "NHWC"}, id="gap-nhwc"),
    Case("nn.batch_flatten", [(2, 3, 2)]),
    Case("nn.avg_pool2d", [(1, 2, 5, 5)], {"pool_size": [2, 2], "strides": [2, 2]}),
    Case("nn.avg_pool2d", [(2, 2, 4, 5)], {"pool_size": [3, 3], "padding": [1, 1],
                                           "count_include_pad": True}, id="avg_pool2d-pad"),
    Case("nn.max_pool2d", [(2, 2, 4, 6)], {"pool_size": [2, 3], "strides": [2, 3]}),
    Case("nn.max_pool1d", [(2, 2, 6)], {"pool_size": [3], "strides": [3]}),
    Case("nn.avg_pool1d", [(1, 2, 6)], {"pool_size": [2], "strides": [2]}),
    Case("nn.max_pool3d", [(1, 2, 2, 4, 2)], {"pool_size": [1, 2, 2], "strides": [1, 2, 2]}),
    Case("nn.avg_pool3d", [(1, 1, 2, 4, 2)], {"pool_size": [2, 2, 1], "strides": [2, 2, 1]}),
    Case("nn.adaptive_max_pool1d", [(2, 2, 6)], {"output_size": [2]}),
    Case("nn.adaptive_avg_pool1d", [(1, 2, 6)], {"output_size": [3]}),
    Case("nn.adaptive_max_pool2d", [(1, 2, 4, 6)], {"output_size": [2, 3]}),
    Case("nn.adaptive_avg_pool2d", [(1, 2, 4, 6)], {"output_size": [1]}),
    Case("nn.adaptive_max_pool3d", [(1, 1, 2, 4, 2)], {"output_size": [1, 2, 2]}),
    Case("nn.adaptive_avg_pool3d", [(1, 2, 2, 2, 4)], {"output_size": [2, 1, 2]}),
    Case("fast_exp", [(2, 3)]),
    Case("fast_tanh", [(2, 3)]),
    Case("fast_erf", [(2, 3)]),
    Case("nn.fast_softmax", [(2, 4)], {"axis": 0}),
    Case("strided_slice", [(5, 7)], {"begin": [1, 0], "end": [4, 7]}),
    Case("strided_slice", [(5, 7, 3)], {"begin": [0, -6], "end": [5, 7], "strides": [2, 3],
                                        "axes": [0, 1]}, id="strided_slice-strides"),
    Case("strided_slice", [(6, 4)], {"begin": [1, 1], "end": [2, 3], "slice_mode": "size"},
         id="strided_slice-size"),
    Case("take", [(5, 3)], build=lambda a: B.call(
        "take", a, B.const(np.array([[4, 0], [4, 2]], "int32")), axis=0)),
    Case("take", [(2, 4, 3)], id="take-middle-clip", build=lambda a: B.call(
        "take", a, B.const(np.array([3, -1, 7, 1], "int32")), axis=1)),
    Case("take", [(2, 3)], id="take-flat-wrap", build=lambda a: B.call(
        "take", a, B.const(np.array([5, -1, 2, 5], "int64")), mode="wrap")),
    Case("variance", [(2, 3, 4), (2, 1, 4)], {"axis": [1], "keepdims": True}),
    Case("variance", [(3, 4)], {"axis": [1], "unbiased": True}, id="variance-unbiased",
         build=lambda a: B.call("variance", a, B.mean(a, axis=[1], keepdims=True), axis=[1],
                                unbiased=True)),
    Case("std", [(3, 4), (1, 1)]),
    Case("nn.layer_norm", [(2, 3, 4), (3,), (3,)], {"axis": 1}),
    Case("nn.layer_norm", [(2, 5), (5,), (5,)], {"center": False, "epsilon": 0.1},
         id="layer_norm-no-center"),
    Case("nn.instance_norm", [(2, 3, 4), (3,), (3,)]),
    Case("nn.instance_norm", [(1, 2, 3, 2), (2,), (2,)], {"axis": 3, "scale": False},
         id="instance_norm-last-axis"),
    Case("nn.group_norm", [(2, 4, 3), (4,), (4,)], {"num_groups": 2}),
    Case("nn.group_norm", [(1, 6, 2, 2), (6,), (6,)], {"num_groups": 3, "center": False},
         id="group_norm-no-center"),
    Case("nn.l2_normalize", [(2, 5)], {"eps": 1e-6, "axis": [1]}),
    Case("nn.l2_normalize", [(2, 3, 2)], {"eps": 1e-6}, id="l2_normalize-all-axes"),
    Case("nn.l2_normalize", [(2, 3)], {"eps": 100.0, "axis": [1]}, domain=unit,
         id="l2_normalize-eps-floor"),
    Case("trilu", [(2, 3, 4)], id="trilu-upper", build=lambda a: B.call(
        "trilu", a, B.const(np.array(1, "int64")))),
    Case("trilu", [(4, 3)], id="trilu-lower", build=lambda a: B.call(
        "trilu", a, B.const(np.array(-1, "int32")), upper=False)),
    Case("scatter_elements", [(3, 4), (2, 3)], id="scatter_elements-add", build=lambda a, u:
         B.call("scatter_elements", a, B.const(np.array([[1, -1, 1], [0, 0, 9]], "int64")), u,
                axis=1, reduction="add")),
    Case("scatter_nd", [(3, 4), (3, 4)], id="scatter_nd-add", build=lambda a, u: B.call(
        "scatter_nd", a, B.const(np.array([[2, 0, 2]], "int32")), u, mode="add")),
    Case("nn.depth_to_space", [(1, 8, 2, 3)], {"block_size": 2}, id="d2s-dcr"),
    Case("nn.depth_to_space", [(2, 8, 3, 1)], {"block_size": 2, "mode": "CRD"}, id="d2s-crd"),
    Case("nn.space_to_depth", [(1, 2, 4, 2)], {"block_size": 2, "layout": "NHWC"}, id="s2d"),
    Case("nn.mirror_pad", [(3, 4)], {"pad_width": [[2, 1], [0, 3]], "mode": "REFLECT"},
         id="mirror_pad-reflect"),
    Case("nn.mirror_pad", [(2, 3)], {"pad_width": [[2, 0], [1, 3]]}, id="mirror_pad-symmetric"),
    Case("cumsum", [(2, 3, 4)], {"axis": 1}),
    Case("cumsum", [(2, 3)], {"exclusive": True}, id="cumsum-flat-exclusive"),
    Case("cumsum", [(3, 4)], {"axis": -1, "exclusive": True}, id="cumsum-exclusive"),
    Case("nn.global_max_pool2d", [(2, 3, 4, 5)]),
    Case("nn.global_max_pool2d", [(1, 4, 5, 2)], {"layout": "NHWC"}, id="gmp-nhwc"),
    Case("layout_transform", [(1, 8, 3, 2)], {"src_layout": "NCHW", "dst_layout": "NCHW4c"}),
    Case("layout_transform", [(2, 3, 4, 5)], {"src_layout": "NCHW", "dst_layout": "NHWC"},
         id="layout_transform-nhwc"),
    Case("nn.upsampling", [(1, 2, 3, 2)], {"scale_h": 2.0, "scale_w": 3.0}),
    Case("nn.matmul", [(2, 3), (3, 4)]),
    Case("nn.matmul", [(3, 2), (3, 4)], {"transpose_a": True}, id="matmul-ta"),
    Case("nn.matmul", [(2, 3), (4, 3)], {"transpose_b": True}, id="matmul-tb"),
    Case("nn.matmul", [(3, 2), (4, 3)], {"transpose_a": True, "transpose_b": True},
         id="matmul-tab"),
    Case("nn.batch_matmul", [(2, 2, 3), (2, 4, 3)], {"transpose_b": True}),
    Case("nn.batch_matmul", [(2, 3, 2), (1, 3, 4)], {"transpose_a": True, "transpose_b": False},
         id="bmm-broadcast"),
    Case("nn.prelu", [(2, 3, 2), (3,)], domain=away_from_zero),
    Case("nn.pad", [(2, 3), ()], {"pad_width": [[1, 0], [2, 1]]}),
    Case("reverse", [(2, 3)], {"axis": 1}),
    Case("max", [(2, 3, 4)], {"axis": [1]}),
    Case("min", [(2, 3)], id="min-all"),
    Case("logsumexp", [(2, 3, 4)], {"axis": [0, 2]}),
    Case("split", [(2, 6)],
         build=lambda a: B.add(B.proj(B.call("split", a, indices_or_sections=[2, 5],
                                                      axis=1), 2),
                               B.proj(B.call("split", a, indices_or_sections=3,
                                                      axis=-1), 0))),
    Case("stack", [(2, 3), (2, 3)], build=lambda a, b: B.call("stack", B.tuple_(a, b), axis=1)),
    Case("tile", [(2, 3)], {"reps": [2, 1, 2]}),
    Case("repeat", [(2, 3)], {"repeats": 2, "axis": -1}),
    Case("cast_like", [(2, 3), (3,)]),
    Case("nn.conv2d", [(2, 3, 5, 5), (4, 3, 3, 3)], {"padding": [1, 1]}),
    Case("nn.conv2d", [(1, 2, 7, 6), (3, 2, 2, 3)],
         {"strides": [2, 2], "padding": [1, 0, 0, 1], "dilation": [2, 1]}, id="conv2d-strided"),
    Case("nn.conv2d", [(2, 3, 6, 6), (3, 1, 3, 3)],
         {"groups": 3, "strides": [2, 2], "padding": [1, 1]}, id="conv2d-depthwise"),
    Case("gather", [(3, 4)], build=lambda a: B.call(
        "gather", a, B.const(np.array([[3, 0], [1, 1], [-2, 9]], "int32")), axis=1)),
    Case("gather", [(3, 2)], id="gather-axis0", build=lambda a: B.call(
        "gather", a, B.const(np.array([[2, 0], [2, 2], [0, 1], [1, 2]], "int64")), axis=0)),
    Case("gather_nd", [(3, 4, 2)], build=lambda a: B.call(
        "gather_nd", a, B.const(np.array([[0, 2, 2], [3, 1, 3]], "int32")))),
    Case("gather_nd", [(2, 3, 2)], id="gather_nd-batch", build=lambda a: B.call(
        "gather_nd", a, B.const(np.array([[[2, 0, 2], [1, 1, 5]]], "int32")), batch_dims=1)),
    Case("prod", [(2, 3, 4)], {"axis": [1]}),
    Case("prod", [(2, 3, 2)], {"axis": [0, 2], "keepdims": True}, domain=with_zeros,
         id="prod-zeros"),
    Case("cumprod", [(2, 4)], {"axis": 1}, domain=with_zeros),
    Case("cumprod", [(2, 3)], {"exclusive": True}, id="cumprod-flat-exclusive"),
    Case("einsum", [(2, 3), (3, 4)],
         build=lambda a, b: B.call("einsum", B.tuple_(a, b), equation="ij,jk->ik")),
    Case("einsum", [(2, 3, 2), (2,)], id="einsum-summed",
         build=lambda a, b: B.call("einsum", B.tuple_(a, b), equation="ijk,k->i")),
    Case("one_hot", [(), ()], build=lambda on, off: B.call(
        "one_hot", B.const(np.array([[2, 0], [3, 9]], "int32")), on, off, depth=4, axis=1,
        dtype="float64")),
    Case("sort", [(2, 5)], {"is_ascend": False}),
    Case("topk", [(2, 5)], build=lambda a: B.proj(B.call("topk", a, k=3), 0)),
    Case("topk", [(4, 2)], id="topk-values", build=lambda a: B.call(
        "topk", a, k=2, axis=0, ret_type="values", is_ascend=True)),
    Case("image.resize2d", [(1, 2, 3, 4)], {"size": [5, 3]}),
    Case("image.resize2d", [(1, 3, 2, 2)], {"size": [4, 3], "layout": "NHWC",
                                            "method": "nearest_neighbor"}, id="resize-nearest"),
    Case("image.resize2d", [(1, 1, 4, 3)], {"size": [3, 5], "method": "cubic",
                                            "coordinate_transformation_mode": "align_corners"},
         id="resize-cubic"),
    Case("nn.conv1d", [(2, 3, 7), (4, 3, 3)], {"strides": [2], "padding": [1, 0]}),
    Case("nn.conv2d_transpose", [(1, 2, 3, 3), (2, 3, 3, 3)],
         {"strides": [2, 2], "padding": [1, 1], "output_padding": [1, 1]}),
    Case("nn.conv2d_transpose", [(2, 2, 3, 2), (2, 1, 2, 3)],
         {"dilation": [2, 1], "padding": [0, 1, 1, 0]}, id="conv2d_transpose-dilated"),
    Case("nn.conv1d_transpose", [(2, 2, 4), (2, 3, 3)],
         {"strides": [2], "dilation": [2], "padding": [1, 2], "output_padding": [1]}),
    Case("nn.conv3d", [(1, 2, 3, 4, 3), (2, 2, 2, 2, 2)],
         {"strides": [1, 2, 1], "padding": [1, 0, 1, 0, 1, 0], "dilation": [1, 1, 2]}),
    Case("nn.conv3d", [(2, 2, 3, 3, 2), (2, 1, 2, 2, 1)],
         {"groups": 2, "strides": [2, 1, 1], "padding": [1]}, id="conv3d-depthwise"),
    Case("nn.conv3d_transpose", [(1, 2, 2, 3, 2), (2, 2, 2, 2, 3)],
         {"strides": [2, 1, 2], "padding": [1, 0, 0, 0, 1, 1], "dilation": [1, 2, 1],
          "output_padding": [1, 0, 0]}),
    Case("sum", [(2, 3, 4)], {"axis": [1]}),
    Case("sum", [(2, 3, 4)], {"axis": [0, 2], "keepdims": True}, id="sum-keepdims"),
    Case("sum", [(2, 3, 4)], {"axis": [1], "exclude": True}, id="sum-exclude"),
    Case("sum", [(2, 3)], id="sum-all"),
    Case("mean", [(2, 3, 4)], {"axis": [-1]}),
    Case("mean", [(2, 3)], id="mean-all"),
    Case("reshape", [(2, 3)], {"newshape": [3, 2]}),
    Case("reshape_like", [(2, 3), (6,)]),
    Case("squeeze", [(2, 1, 3)], {"axis": [1]}),
    Case("expand_dims", [(2, 3)], {"axis": 1}),
    Case("transpose", [(2, 3, 4)], {"axes": [1, 0, 2]}),
    Case("transpose", [(2, 3, 4)], {"axes": [-1, 0, 1]}, id="transpose-neg"),
    Case("transpose", [(2, 3)], id="transpose-default"),
    Case("where", [(2, 3), (3,)],
         build=lambda a, b: B.call("where", B.const(np.array([[True, False, True],
                                                              [False, False, True]])), a, b)),
    Case("broadcast_to", [(3,)], {"shape": [2, 3]}),
    Case("broadcast_to_like", [(1, 3), (2, 3)]),
    Case("collapse_sum_like", [(2, 3), (3,)]),
    Case("collapse_sum_to", [(2, 3)],
         build=lambda a: B.call("collapse_sum_to", a, B.const(np.array([1, 3], "int64")),
                                shape=[1, 3])),
    Case("concatenate", [(2, 3), (2, 1), (2, 2)], {"axis": 1},
         build=lambda *ps: B.call("concatenate", B.tuple_(*ps), axis=1)),
    Case("zeros_like", [(2, 3)]),
    Case("ones_like", [(2, 3)]),
    Case("full_like", [(2, 3), ()]),
    Case("full", [()], {"shape": [2, 3]}),
    Case("zeros", [(2, 3)], build=lambda a: B.add(a, B.call("zeros", shape=[2, 3],
                                                            dtype="float64"))),
    Case("ones", [(2, 3)], build=lambda a: B.multiply(a, B.call("ones", shape=[2, 3],
                                                                dtype="float64"))),
]


def loss_module(case: Case, rng: np.random.Generator) -> tuple[aot.IRModule, list[np.ndarray]]:
    params = [B.var(f"p{i}", B.tensor(s, "float64")) for i, s in enumerate(case.shapes)]
    if case.build is not None:
        out = case.build(*params)
    else:
        out = B.call(case.op, *params, **case.attrs)
    typed = aot.infer_types(B.module(main=B.function(params, out)))
    out_shape = typed["main"].body.type.shape
    weights = B.const(rng.standard_normal(out_shape))
    loss = B.sum(B.multiply(out, weights))
    mod = B.module(main=B.function(params, loss))
    return mod, [case.domain(rng, s) for s in case.shapes]


def central_differences(mod: aot.IRModule, args: list[np.ndarray],
                        eps: float = 1e-6) -> list[np.ndarray]:
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up = [x.copy() for x in args]
            down = [x.copy() for x in args]
            up[i][idx] += eps
            down[i][idx] -= eps
            g[idx] = (float(aot.interpret(mod, *up)) - float(aot.interpret(mod, *down))) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id or c.op)
def test_rule_against_central_differences(case: Case) -> None:
    rng = np.random.default_rng(sum(map(ord, case.id or case.op)))
    mod, args = loss_module(case, rng)
    result, grads = aot.interpret(aot.gradient(mod), *args)
    np.testing.assert_allclose(result, aot.interpret(mod, *args), rtol=1e-12)
    expected = central_differences(mod, args)
    assert len(grads) == len(expected)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_every_rule_has_a_numeric_case() -> None:
    assert set(RULES) == {c.op for c in CASES}


def test_catalogue_coverage_is_explicit() -> None:
    """Every operator has a rule or a reason, never both, and nothing else
    is listed; the records' ``grad`` column is the rule."""
    names = {o.name for o in all_ops()}
    assert not set(RULES) & set(NOT_DIFFERENTIABLE)
    assert set(RULES) | set(NOT_DIFFERENTIABLE) == names
    for o in all_ops():
        assert (o.grad is not None) == (o.name in RULES), o.name
        assert o.grad is RULES.get(o.name)
    for name, why in NOT_DIFFERENTIABLE.items():
        assert why and lookup(name) is not None and lookup(name).grad is None


def test_differentiable_operators() -> None:
    """The operators the issue lists first all have rules."""
    for name in ["add", "subtract", "multiply", "divide", "negative", "exp", "log", "sqrt",
                 "tanh", "sigmoid", "nn.relu", "nn.dense", "nn.bias_add", "sum", "mean",
                 "reshape", "transpose", "nn.softmax", "nn.log_softmax"]:
        assert lookup(name).grad is not None, name


def test_every_rule_in_c_equals_the_interpreter(tmp_path) -> None:
    """All cases at once in float32: one program whose loss is the sum of
    every case's loss, its gradient compiled to C (one build) against the
    interpreter, parameter by parameter."""
    rng = np.random.default_rng(7)
    params, args, losses = [], [], []
    for k, case in enumerate(CASES):
        ps = [B.var(f"c{k}_{i}", B.tensor(s, "float32")) for i, s in enumerate(case.shapes)]
        f32 = [B.cast(p, dtype="float64") for p in ps]
        out = case.build(*f32) if case.build is not None else B.call(case.op, *f32, **case.attrs)
        typed = aot.infer_types(B.module(main=B.function(ps, out)))
        weights = B.const(rng.standard_normal(typed["main"].body.type.shape))
        losses.append(B.cast(B.sum(B.multiply(out, weights)), dtype="float32"))
        params += ps
        args += [case.domain(rng, s).astype(np.float32) for s in case.shapes]
    total = losses[0]
    for loss in losses[1:]:
        total = B.add(total, loss)
    grad = aot.gradient(B.module(main=B.function(params, total)))
    art = aot.compile(grad, tmp_path / "art", name="rules")
    got = aot.load(art)(*args)
    want = aot.interpret(grad, *args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for p, g, w in zip(params, got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=p.name_hint)


@pytest.mark.parametrize("src, message", [
    ("""def @main(%x: Tensor[(1, 4, 3, 3), float32], %w: Tensor[(4, 1, 2, 2), float32]) {
          nn.conv2d_transpose(%x, %w, channels=2, kernel_size=[2, 2], groups=2) }""",
     "operator nn.conv2d_transpose: the gradient rule handles groups=1, not groups=2"),
    ("""def @main(%x: Tensor[(1, 5, 3), float32], %w: Tensor[(2, 3, 2), float32]) {
          nn.conv1d(%x, %w, channels=2, kernel_size=[2], data_layout="NWC") }""",
     "operator nn.conv1d: the gradient rule handles NCW data and OIW kernels only"),
    ("""def @main(%x: Tensor[(1, 4, 2, 2, 2), float32], %w: Tensor[(2, 2, 1, 1, 1), float32]) {
          nn.conv3d(%x, %w, channels=2, kernel_size=[1, 1, 1], groups=2) }""",
     "operator nn.conv3d: the gradient rule handles groups=1 and depthwise convolutions, "
     "not groups=2 with 2 input channels per group"),
    ("""def @main(%x: Tensor[(2, 3, 3), float32]) { einsum((%x,), equation="bii->b") }""",
     "operator einsum: the gradient rule does not handle repeated axes"),
])
def test_rules_refuse_what_they_do_not_handle(src: str, message: str) -> None:
    with pytest.raises(aot.DiagnosticError, match=message):
        aot.gradient(aot.parse(src))
