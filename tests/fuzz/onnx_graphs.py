"""Random ONNX graphs for differential testing against onnxruntime.

Design note
-----------
NNSmith-style generation: a graph grows one node at a time from a pool of
typed values (name, shape, dtype).  The candidate operators are the ONNX
converters' registry (:data:`aot.frontend.onnx.registry.CONVERTERS`)
filtered by their schemas at the graph's opset: an operator is eligible
when its inputs can be fed from the pool (float32 tensors; constant
inputs such as shapes, axes or weights are made as initializers) and we
know how to draw its attributes within the spec (a sampler per attribute
name: ``axis`` in ``[-rank, rank)``, ``perm`` a permutation, ``alpha`` a
positive float, ...; operators with structural attributes such as Conv,
pools, Gemm, Pad and Slice have a recipe of their own).  Each candidate
node is checked by ONNX shape inference in strict mode, which also gives
its output shapes for the pool; a node it rejects is dropped and another
drawn, so "operators whose input types fit" is decided by the spec's own
inference, not by a table of ours.  The graph's outputs are the values no
node consumed (at most three).  The finished model must run under
onnxruntime (the reference); a graph onnxruntime refuses is discarded.

Values stay small (inputs uniform in [-2, 2]) and shapes tiny (rank 1 to
4, dimensions 1 to 5) so a graph of up to eight nodes builds in C quickly;
NaN from a domain error (``Log`` of a negative, ``Sqrt``) is compared as
equal to NaN.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17

#: operators left out, with the reason (everything else in the registry
#: whose inputs and attributes we can draw is eligible)
EXCLUDED = {
    # integer or boolean only, or a dtype-changing output we do not chain
    "And": "bool", "Or": "bool", "Xor": "bool", "Not": "bool", "IsNaN": "bool output",
    "IsInf": "bool output", "Mod": "fmod semantics on floats need fmod=1 and integer-like data",
    "Shape": "int64 output", "Size": "int64 output", "Range": "scalar inputs",
    "ConstantOfShape": "no tensor input", "Constant": "no tensor input", "OneHot": "indices",
    "Cast": "dtype change", "CastLike": "dtype change",
    # quantized operators are another suite's subject
    "QuantizeLinear": "quantized", "DequantizeLinear": "quantized",
    "QLinearConv": "quantized", "QLinearMatMul": "quantized",
    # outputs whose order ties break differently by design
    "TopK": "ties", "ArgMax": "ties", "ArgMin": "ties",
    "Dropout": "training mode output mask", "Resize": "covered by its own tests",
    "Where": "bool condition", "GatherElements": "indices", "Gather": "indices",
    "GatherND": "indices",
    "BitwiseAnd": "integer", "BitwiseOr": "integer", "BitwiseXor": "integer",
    "BitwiseNot": "integer", "BitShift": "integer",
    # opset 23 and later (the graphs are opset 17): their node tests cover them
    "RMSNormalization": "opset 23", "Attention": "opset 23",
    "Mish": "opset 18",
    # integer class targets: tests/frontend/test_onnx_loss.py against onnxruntime
    "NegativeLogLikelihoodLoss": "targets", "SoftmaxCrossEntropyLoss": "targets",
    # ill-conditioned: near its poles tan turns an ulp of difference from
    # another libm (onnxruntime's LRN pow, say) into any difference at all
    # (found by the fuzzer: Tan(Tan(GlobalMaxPool(LRN(x)))) off by 0.7%)
    "Tan": "poles",
    # ill-conditioned at +-1 (infinite slope): Acos(Tanh(x)) turns the
    # last ulp of a saturated tanh into 3e-4 (found by the fuzzer)
    "Acos": "slope at +-1", "Asin": "slope at +-1",
    # subgraph and weight-shaped inputs: tests/frontend/test_onnx_control.py
    # and test_onnx_recurrent.py draw them against onnxruntime instead
    "If": "subgraphs", "Loop": "subgraphs", "Scan": "subgraphs", "GRU": "weights of gate shapes",
    "LSTM": "weights of gate shapes", "RNN": "weights of gate shapes",
}


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]


class Builder:
    """The graph under construction."""

    def __init__(self, rng: random.Random, prefix: str) -> None:
        self.rng = rng
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.pool: list[Value] = []
        self.used: set[str] = set()
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{self.prefix}_{stem}{self.count}"

    def const(self, array: np.ndarray, stem: str = "c") -> str:
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: tuple[int, ...]) -> str:
        return self.const(np.asarray(self.rng_array(shape), np.float32), "w")

    def rng_array(self, shape: tuple[int, ...]) -> np.ndarray:
        r = np.random.default_rng(self.rng.getrandbits(32))
        return r.uniform(-2, 2, size=shape).astype(np.float32)

    def add_input(self, shape: tuple[int, ...]) -> Value:
        name = self.fresh("in")
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        v = Value(name, shape)
        self.pool.append(v)
        return v

    def pick(self, rank: int | None = None, min_rank: int = 1) -> Value:
        ok = [v for v in self.pool if (rank is None or len(v.shape) == rank)
              and len(v.shape) >= min_rank]
        if not ok:
            shape = tuple(self.rng.randint(1, 5)
                          for _ in range(rank or self.rng.randint(max(1, min_rank), 4)))
            return self.add_input(shape)
        # prefer recent values so graphs are chains more than forests
        return ok[-1] if self.rng.random() < 0.6 else self.rng.choice(ok)


# --------------------------------------------------------------- attributes

def _axis(b: Builder, rank: int) -> int:
    return b.rng.randint(-rank, rank - 1)


def _axes(b: Builder, rank: int) -> list[int]:
    k = b.rng.randint(1, rank)
    return sorted(b.rng.sample(range(rank), k))


def _perm(b: Builder, rank: int) -> list[int]:
    p = list(range(rank))
    b.rng.shuffle(p)
    return p


def _scale(b: Builder, default: float) -> float:
    return round(default * b.rng.uniform(0.5, 1.5), 3) if default else round(b.rng.uniform(0.1, 1), 3)


FLOAT_DEFAULTS = {"alpha": 0.2, "beta": 0.5, "gamma": 1.05, "lambd": 0.5, "bias": 0.0}


def generic_attrs(b: Builder, schema: onnx.defs.OpSchema, rank: int) -> dict | None:
    """Random values for the optional attributes we know how to draw, or
    None if the schema has a required attribute we do not."""
    out: dict = {}
    A = onnx.defs.OpSchema.AttrType
    for a in schema.attributes.values():
        if b.rng.random() < 0.3 and not a.required:
            continue  # leave it at its default
        if a.name == "axis" and a.type == A.INT:
            out["axis"] = _axis(b, rank)
        elif a.name == "axes" and a.type == A.INTS:
            out["axes"] = _axes(b, rank)
        elif a.name == "keepdims" and a.type == A.INT:
            out["keepdims"] = b.rng.randint(0, 1)
        elif a.name == "perm" and a.type == A.INTS:
            out["perm"] = _perm(b, rank)
        elif a.name in FLOAT_DEFAULTS and a.type == A.FLOAT:
            out[a.name] = _scale(b, FLOAT_DEFAULTS[a.name])
        elif a.required:
            return None
    return out


# ------------------------------------------------------------------ recipes
#
# A recipe returns (op_type, inputs, attributes) or None (cannot apply).

Recipe = Callable[[Builder], "tuple[str, list[str], dict] | None"]


#: operators needing a minimum input rank (N, C, spatial...)
MIN_RANK = {"GlobalAveragePool": 3, "GlobalMaxPool": 3, "GlobalLpPool": 3}


def _unary_like(op: str, schema: onnx.defs.OpSchema) -> Recipe:
    def make(b: Builder):
        x = b.pick(min_rank=MIN_RANK.get(op, 1))
        attrs = generic_attrs(b, schema, len(x.shape))
        return None if attrs is None else (op, [x.name], attrs)
    return make


def _broadcast_partner(b: Builder, x: Value) -> str:
    """Another pool value or a constant broadcastable with ``x``."""
    same = [v for v in b.pool if v.shape == x.shape and v is not x]
    if same and b.rng.random() < 0.5:
        return b.rng.choice(same).name
    k = b.rng.randint(0, len(x.shape))
    shape = tuple(1 if b.rng.random() < 0.5 else d for d in x.shape[len(x.shape) - k:])
    return b.weight(shape)


def _binary(op: str) -> Recipe:
    def make(b: Builder):
        x = b.pick()
        y = _broadcast_partner(b, x)
        return (op, [x.name, y] if b.rng.random() < 0.7 else [y, x.name], {})
    return make


def _variadic(op: str) -> Recipe:
    def make(b: Builder):
        x = b.pick()
        n = b.rng.randint(1, 3)
        return (op, [x.name] + [_broadcast_partner(b, x) for _ in range(n - 1)], {})
    return make


def _matmul(b: Builder):
    x = b.pick()
    k = x.shape[-1]
    return ("MatMul", [x.name, b.weight((k, b.rng.randint(1, 5)))], {})


def _gemm(b: Builder):
    x = b.pick(rank=2)
    ta, tb = b.rng.randint(0, 1), b.rng.randint(0, 1)
    m, k = (x.shape[1], x.shape[0]) if ta else x.shape
    n = b.rng.randint(1, 5)
    a_in = x.name
    w = b.weight((n, k) if tb else (k, n))
    ins = [a_in, w]
    if b.rng.random() < 0.7:
        ins.append(b.weight(b.rng.choice([(n,), (1, n), (m, n)])))
    return ("Gemm", ins, {"transA": ta, "transB": tb, "alpha": _scale(b, 1.0),
                          "beta": _scale(b, 1.0)})


def _conv(b: Builder):
    x = b.pick(rank=b.rng.choice([3, 4, 4, 5]))
    c, spatial = x.shape[1], x.shape[2:]
    group = b.rng.choice([g for g in (1, 2, c) if c % g == 0])
    m = group * b.rng.randint(1, 2)
    kernel = [b.rng.randint(1, min(3, n + 2)) for n in spatial]
    pads = [b.rng.randint(0, k - 1) for k in kernel * 2]
    n = len(kernel)
    if any(size + pads[i] + pads[i + n] < kernel[i] for i, size in enumerate(spatial)):
        return None
    attrs = {"kernel_shape": kernel, "strides": [b.rng.randint(1, 2) for _ in kernel],
             "pads": pads, "group": group}
    ins = [x.name, b.weight((m, c // group, *kernel))]
    if b.rng.random() < 0.6:
        ins.append(b.weight((m,)))
    return ("Conv", ins, attrs)


def _conv_transpose(b: Builder):
    x = b.pick(rank=b.rng.choice([3, 4, 4, 5]))
    c, n = x.shape[1], len(x.shape) - 2
    group = b.rng.choice([g for g in (1, c) if c % g == 0])
    m = group * b.rng.randint(1, 2)
    kernel = [b.rng.randint(1, 3) for _ in range(n)]
    strides = [b.rng.randint(1, 2) for _ in range(n)]
    attrs = {"kernel_shape": kernel, "strides": strides, "group": group,
             "pads": [b.rng.randint(0, k - 1) for k in kernel * 2]}
    if b.rng.random() < 0.3:
        attrs["output_padding"] = [b.rng.randint(0, s - 1) for s in strides]
    ins = [x.name, b.weight((c, m // group, *kernel))]
    if b.rng.random() < 0.5:
        ins.append(b.weight((m,)))
    return ("ConvTranspose", ins, attrs)


def _pool(op: str) -> Recipe:
    def make(b: Builder):
        x = b.pick(rank=b.rng.choice([3, 4, 4, 5]))
        spatial = x.shape[2:]
        kernel = [b.rng.randint(1, min(3, n)) for n in spatial]
        pads = [b.rng.randint(0, k - 1) for k in kernel * 2]
        attrs = {"kernel_shape": kernel, "strides": [b.rng.randint(1, 2) for _ in kernel],
                 "pads": pads}
        if op == "AveragePool":
            attrs["count_include_pad"] = b.rng.randint(0, 1)
        if op == "LpPool":
            attrs["p"] = b.rng.randint(1, 3)
        return (op, [x.name], attrs)
    return make


def _reshape(b: Builder):
    x = b.pick()
    n = int(np.prod(x.shape))
    dims = [d for d in range(1, n + 1) if n % d == 0]
    first = b.rng.choice(dims)
    shape = [first, -1] if b.rng.random() < 0.5 else [first, n // first]
    return ("Reshape", [x.name, b.const(np.array(shape, np.int64), "shape")], {})


def _concat(b: Builder):
    x = b.pick()
    axis = _axis(b, len(x.shape))
    other = list(x.shape)
    other[axis] = b.rng.randint(1, 3)
    return ("Concat", [x.name, b.weight(tuple(other))], {"axis": axis})


def _slice(b: Builder):
    x = b.pick()
    axes = _axes(b, len(x.shape))
    starts, ends, steps = [], [], []
    for a in axes:
        d = x.shape[a]
        s = b.rng.randint(0, d - 1)
        starts.append(s)
        ends.append(b.rng.randint(s + 1, d))
        steps.append(1)
    i64 = lambda v: b.const(np.array(v, np.int64), "s")  # noqa: E731
    return ("Slice", [x.name, i64(starts), i64(ends), i64(axes), i64(steps)], {})


def _unsqueeze(b: Builder):
    x = b.pick()
    if len(x.shape) >= 4:
        return None
    return ("Unsqueeze", [x.name, b.const(np.array([b.rng.randint(0, len(x.shape))], np.int64))],
            {})


def _squeeze(b: Builder):
    x = b.pick()
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if not ones or len(x.shape) == 1:
        return None
    return ("Squeeze", [x.name, b.const(np.array([b.rng.choice(ones)], np.int64))], {})


def _pad(b: Builder):
    x = b.pick()
    mode = b.rng.choice(["constant", "edge", "reflect"])
    hi = 1 if mode == "reflect" else 2
    pads = [b.rng.randint(0, min(hi, d - 1) if mode == "reflect" else hi)
            for d in x.shape + x.shape]
    ins = [x.name, b.const(np.array(pads, np.int64), "pads")]
    if mode == "constant":
        ins.append(b.const(np.array(round(b.rng.uniform(-1, 1), 2), np.float32), "cv"))
    return ("Pad", ins, {"mode": mode})


def _clip(b: Builder):
    x = b.pick()
    lo = round(b.rng.uniform(-1.5, 0), 2)
    return ("Clip", [x.name, b.const(np.array(lo, np.float32)),
                     b.const(np.array(lo + round(b.rng.uniform(0.1, 2), 2), np.float32))], {})


def _expand(b: Builder):
    x = b.pick()
    shape = [d if d != 1 else b.rng.randint(1, 3) for d in x.shape]
    return ("Expand", [x.name, b.const(np.array(shape, np.int64), "shape")], {})


def _tile(b: Builder):
    x = b.pick()
    reps = [b.rng.randint(1, 2) for _ in x.shape]
    return ("Tile", [x.name, b.const(np.array(reps, np.int64), "reps")], {})


def _split(b: Builder):
    x = b.pick()
    axis = _axis(b, len(x.shape))
    d = x.shape[axis]
    if d < 2:
        return None
    cut = b.rng.randint(1, d - 1)
    return ("Split", [x.name, b.const(np.array([cut, d - cut], np.int64), "split")],
            {"axis": axis, "_outputs": 2})


def _batchnorm(b: Builder):
    x = b.pick(min_rank=2)
    c = x.shape[1]
    var = np.abs(b.rng_array((c,))) + 0.1
    return ("BatchNormalization", [x.name, b.weight((c,)), b.weight((c,)), b.weight((c,)),
                                   b.const(var.astype(np.float32), "var")],
            {"epsilon": 1e-3})


def _layernorm(b: Builder):
    x = b.pick()
    axis = _axis(b, len(x.shape))
    norm_shape = x.shape[axis:]
    return ("LayerNormalization", [x.name, b.weight(norm_shape), b.weight(norm_shape)],
            {"axis": axis, "epsilon": 1e-3})


def _instancenorm(b: Builder):
    x = b.pick(min_rank=3)
    c = x.shape[1]
    return ("InstanceNormalization", [x.name, b.weight((c,)), b.weight((c,))], {"epsilon": 1e-3})


def _trilu(b: Builder):
    x = b.pick(min_rank=2)
    ins = [x.name]
    if b.rng.random() < 0.7:
        ins.append(b.const(np.array(b.rng.randint(-3, 3), np.int64), "k"))
    return ("Trilu", ins, {"upper": b.rng.randint(0, 1)})


def _cumsum(b: Builder):
    x = b.pick()
    axis = b.const(np.array(_axis(b, len(x.shape)), np.int64), "axis")
    return ("CumSum", [x.name, axis], {"exclusive": b.rng.randint(0, 1),
                                       "reverse": b.rng.randint(0, 1)})


def _einsum(b: Builder):
    """One operand: its axes kept in a drawn order, or summed; or two
    operands of one shape multiplied and contracted over drawn axes."""
    x = b.pick()
    letters = "abcdefgh"[:len(x.shape)]
    kept = [c for c in letters if b.rng.random() < 0.6]
    b.rng.shuffle(kept)
    if b.rng.random() < 0.5:
        return ("Einsum", [x.name], {"equation": f"{letters}->{''.join(kept)}"})
    return ("Einsum", [x.name, x.name], {"equation": f"{letters},{letters}->{''.join(kept)}"})


def _d2s(op: str) -> Recipe:
    def make(b: Builder):
        x = b.pick(rank=4)
        _, c, h, w = x.shape
        bs = 2
        if op == "DepthToSpace" and c % 4:
            return None
        if op == "SpaceToDepth" and (h % 2 or w % 2):
            return None
        attrs = {"blocksize": bs}
        if op == "DepthToSpace":
            attrs["mode"] = b.rng.choice(["DCR", "CRD"])
        return (op, [x.name], attrs)
    return make


def _lrn(b: Builder):
    x = b.pick(rank=4)
    return ("LRN", [x.name], {"size": b.rng.choice([1, 3, 5]), "alpha": 1e-2, "beta": 0.75,
                              "bias": 1.0})


def _reduce_sum(b: Builder):
    x = b.pick()
    ins = [x.name]
    if b.rng.random() < 0.8:
        ins.append(b.const(np.array(_axes(b, len(x.shape)), np.int64), "axes"))
    return ("ReduceSum", ins, {"keepdims": b.rng.randint(0, 1)})


def _scatter_elements(b: Builder):
    """Indices in range (negative too); unique along the axis for
    reduction none, where ONNX leaves repeats undefined."""
    x = b.pick()
    rank = len(x.shape)
    axis = _axis(b, rank)
    dim = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = b.rng.randint(1, dim)
    red = b.rng.choice(["none", "add", "mul"])
    r = np.random.default_rng(b.rng.getrandbits(32))
    if red == "none":
        idx = np.argsort(r.random(tuple(x.shape)), axis=axis)
        idx = np.take(idx, range(shape[axis]), axis=axis)
    else:
        idx = r.integers(0, dim, size=tuple(shape))
    idx = np.where(r.random(idx.shape) < 0.3, idx - dim, idx).astype(np.int64)
    return ("ScatterElements", [x.name, b.const(idx, "idx"), b.weight(tuple(shape))],
            {"axis": axis, "reduction": red})


def _scatter_nd(b: Builder):
    x = b.pick()
    m = b.rng.randint(1, len(x.shape))
    red = b.rng.choice(["none", "add", "mul"])
    cells = [np.unravel_index(k, x.shape[:m]) for k in range(int(np.prod(x.shape[:m])))]
    n = b.rng.randint(1, min(3, len(cells)))
    picked = b.rng.sample(cells, n) if red == "none" else [b.rng.choice(cells) for _ in range(n)]
    idx = np.array(picked, np.int64).reshape(n, m)
    return ("ScatterND", [x.name, b.const(idx, "idx"), b.weight((n, *x.shape[m:]))],
            {"reduction": red})


SPECIAL: dict[str, Recipe] = {
    "MatMul": _matmul, "Gemm": _gemm, "Conv": _conv, "ConvTranspose": _conv_transpose, "MaxPool": _pool("MaxPool"),
    "AveragePool": _pool("AveragePool"), "LpPool": _pool("LpPool"), "Reshape": _reshape, "Concat": _concat,
    "Slice": _slice, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Pad": _pad,
    "Clip": _clip, "Expand": _expand, "Tile": _tile, "Split": _split,
    "BatchNormalization": _batchnorm, "LayerNormalization": _layernorm,
    "InstanceNormalization": _instancenorm, "Trilu": _trilu,
    "CumSum": _cumsum, "Einsum": _einsum, "DepthToSpace": _d2s("DepthToSpace"), "SpaceToDepth": _d2s("SpaceToDepth"),
    "LRN": _lrn, "ReduceSum": _reduce_sum,
    "ScatterElements": _scatter_elements, "ScatterND": _scatter_nd,
}


def recipes(opset: int = OPSET) -> dict[str, Recipe]:
    """A recipe for every registered converter we can feed (see the
    module docstring); the rest are in :data:`EXCLUDED` or lack a
    recipe (:func:`uncovered` lists them)."""
    from aot.frontend.onnx.registry import CONVERTERS
    out: dict[str, Recipe] = {}
    for domain, op in sorted(CONVERTERS.keys()):
        if domain or op in EXCLUDED:
            continue
        if op in SPECIAL:
            out[op] = SPECIAL[op]
            continue
        try:
            s = onnx.defs.get_schema(op, opset)
        except onnx.defs.SchemaError:
            continue
        tcs = {t.type_param_str: t.allowed_type_strs for t in s.type_constraints}
        float_in = [i for i in s.inputs if "tensor(float)" in tcs.get(i.type_str, ())]
        if len(s.outputs) < 1 or len(float_in) != len(s.inputs):
            continue
        if len(s.inputs) == 1 and s.inputs[0].option != s.inputs[0].option.Variadic:
            out[op] = _unary_like(op, s)
        elif len(s.inputs) == 1:
            out[op] = _variadic(op)
        elif len(s.inputs) == 2 and not s.attributes:
            out[op] = _binary(op)
    return out


def uncovered(opset: int = OPSET) -> list[str]:
    from aot.frontend.onnx.registry import CONVERTERS
    have = recipes(opset)
    return sorted(op for d, op in CONVERTERS.keys()
                  if not d and op not in have and op not in EXCLUDED)


# --------------------------------------------------------------- the graph

def _infer_node(b: Builder, node: onnx.NodeProto) -> list[tuple[int, ...]] | None:
    """Output shapes of ``node`` by ONNX shape inference (strict), or None
    if the node does not type-check or a shape is not static."""
    vis = [helper.make_tensor_value_info(v.name, TensorProto.FLOAT, list(v.shape))
           for v in b.pool if v.name in node.input]
    inits = [t for t in b.inits if t.name in node.input]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    g = helper.make_graph([node], "probe", vis, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    except Exception:  # noqa: BLE001 - the spec refuses this node
        return None
    shapes = []
    for o in inferred.graph.output:
        t = o.type.tensor_type
        if t.elem_type != TensorProto.FLOAT or not t.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        if any(d <= 0 for d in dims) or len(dims) == 0 or len(dims) > 4:
            return None
        shapes.append(tuple(dims))
    return shapes


@dataclass
class Graph:
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]

    @property
    def ops(self) -> list[str]:
        return [n.op_type for n in self.model.graph.node]


def random_graph(seed: int, prefix: str = "g", max_nodes: int = 8,
                 table: dict[str, Recipe] | None = None) -> Graph:
    """A random model (see the module docstring) and its inputs."""
    rng = random.Random(seed)
    table = table if table is not None else recipes()
    names = sorted(table)
    b = Builder(rng, prefix)
    b.add_input(tuple(rng.randint(1, 5) for _ in range(rng.choice([1, 2, 2, 3, 4, 4]))))
    goal = rng.randint(1, max_nodes)
    tries = 0
    while len(b.nodes) < goal and tries < goal * 8:
        tries += 1
        op = rng.choice(names)
        made = table[op](b)
        if made is None:
            continue
        op_type, ins, attrs = made
        n_out = attrs.pop("_outputs", 1)
        outs = [b.fresh("t") for _ in range(n_out)]
        node = helper.make_node(op_type, ins, outs, name=b.fresh(op_type.lower()), **attrs)
        shapes = _infer_node(b, node)
        if shapes is None:
            continue
        b.nodes.append(node)
        b.used.update(ins)
        b.pool.extend(Value(o, s) for o, s in zip(outs, shapes))
    produced = [v for v in b.pool if v.name not in b.used
                and v.name not in {i.name for i in b.inputs}]
    if not produced:
        produced = [b.pool[-1]]
    outs = produced[-3:]
    graph = helper.make_graph(
        b.nodes, f"{prefix}_graph", b.inputs,
        [helper.make_tensor_value_info(v.name, TensorProto.FLOAT, list(v.shape)) for v in outs],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="aot-fuzz")
    model.ir_version = 8
    r = np.random.default_rng(seed)
    inputs = {i.name: r.uniform(-2, 2, size=[d.dim_value for d in i.type.tensor_type.shape.dim])
              .astype(np.float32) for i in b.inputs}
    return Graph(model, inputs)


def run_onnxruntime(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def all_values(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every node output's value under onnxruntime (one session: each
    output made a graph output)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    names = [o for n in m.graph.node for o in n.output if o]
    del m.graph.output[:]
    m.graph.output.extend(helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                          for o in names)
    return dict(zip(names, run_onnxruntime(m, inputs)))
