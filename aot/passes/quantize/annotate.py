"""QuantizeAnnotate: mark where a float program is to be quantized.

Design note
-----------
Relay's ``QuantizeAnnotate`` (``python/tvm/relay/quantize/_annotate.py``)
walks the program in post-order and gives each value one of the
*annotation kinds*: none (float), ``INPUT`` (an integer of ``nbit_input``
bits: what a conv2d/dense/add reads), ``ACTIVATION`` (a result of a
quantized operator, its accumulator) and ``WEIGHT`` (a constant operand);
an operator's rule (``FQAnnotateRewrite``) decides from its operands'
kinds which operands to quantize and the kind of its result.  A
*quantize point* is attached where a rule asks for one: Relay's
``simulated_quantize(x, dom_scale, clip_min, clip_max)``, whose scale and
clip bounds are free variables bound later by calibration.

Here a quantize point is written in the operators the importers produce,
so that nothing downstream needs a new operator::

    qnn.dequantize(qnn.quantize(x, %qscale_input_3, 0), %qscale_input_3, 0)

with ``clip(., -(2**(nbit-1) - 1), 2**(nbit-1) - 1)`` between the two when
the kind's ``nbit`` is narrower than its dtype.  The scale is a new
parameter of ``@main`` named ``qscale_<kind>_<n>`` (``n`` counts the points
in the order they are made), a float32 scalar, or for a weight quantized
per channel (``per_channel``, our addition) a vector along the weight's
output-channel axis (``O`` of ``kernel_layout``; axis 0 of a dense
weight).  :mod:`.calibrate` binds these parameters, :mod:`.realize` turns
the weights' points into int8 tables.  A program annotated this way is a
well-typed program: the interpreter runs it given scales.

The rules (Relay's, with the differences marked *):

* ``nn.conv2d``, ``nn.dense`` with a constant weight: the data becomes
  ``INPUT`` (quantized unless it is already), the weight ``WEIGHT``; the
  result is ``ACTIVATION``.  ``skip_conv_layers`` lists conv2d indices (in
  the order the program computes them, from 0) left float;
  ``skip_dense_layer`` leaves every dense float.
* ``add``, ``nn.bias_add``, ``multiply`` with a constant operand and an
  annotated one: the result is ``ACTIVATION`` and *the constant stays float*
  (Relay quantizes it as a ``WEIGHT`` of 8 bits and shifts it into the
  accumulator; FakeQuantizationToInteger rounds it to the int32
  accumulator's own scale, which is finer).
* ``add``, ``multiply`` of two non-constant operands, one annotated: *both*
  become ``INPUT`` (Relay keeps an ``ACTIVATION`` lhs in int32; the integer
  operators ``qnn.add``/``qnn.mul`` read two quantized operands).
* ``nn.relu``, ``clip``, the layout operators (``reshape``,
  ``nn.batch_flatten``, ``transpose``, ``squeeze``, ``expand_dims``,
  ``strided_slice``): the operand's kind.
* ``nn.max_pool2d``: the operand becomes ``INPUT``, so is the result.
* ``nn.avg_pool2d``, ``nn.global_avg_pool2d``: the operand becomes
  ``INPUT``, the result ``ACTIVATION`` (* Relay forwards avg_pool2d in the
  accumulator and stops quantizing at global_avg_pool2d; the integer
  average pool ``qnn.avg_pool2d`` reads a quantized operand).
* ``concatenate``: every field becomes ``INPUT`` (* Relay quantizes only
  the float ones, as ``ACTIVATION``), the result is ``ACTIVATION``.
* Any other operator (softmax, sigmoid, ...) computes in float: an
  ``ACTIVATION`` operand gets an ``ACTIVATION`` quantize point (Relay
  dequantizes its int32 accumulator there), an ``INPUT`` one is already a
  dequantized value.  So does the function's result.

Points are memoised by (value, kind), as Relay's ``qnode_map``: a value
read by three convolutions is quantized once.  Each rule is an entry of a
table keyed by operator name holding a dataflow pattern
(:mod:`aot.ir.pattern`: ``is_op("nn.conv2d")(wildcard(), is_constant())``
and the like) and a handler; the walk is the traversal framework's
:class:`~aot.ir.visitor.ExprMutator`.  The pass expects graph normal form
(``aot.quantize`` runs ToGraphNormalForm first).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...diagnostics import DiagnosticError
from ...ir.dtype import DType
from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, Var, op
from ...ir.module import IRModule
from ...ir.ops.qnn import DequantizeAttrs, QuantizeAttrs
from ...ir.ops.transform_init import ClipAttrs
from ...ir.pattern import DFPattern, DFPatternMatcher, is_constant, is_op, wildcard
from ...ir.type_infer import infer_types
from ...ir.types import TensorType
from ...ir.visitor import ExprMutator, Visit
from ..manager import register_pass
from .config import QConfig

__all__ = ["quantize_annotate", "SCALE_PREFIX", "point_kind"]

INPUT, WEIGHT, ACTIVATION = "input", "weight", "activation"
#: the name of a quantize point's scale parameter: ``qscale_<kind>_<n>``
SCALE_PREFIX = "qscale_"

Handler = Callable[["_Annotator", Call, Call], Expr | None]
RULES: dict[str, list[tuple[DFPattern, Handler]]] = {}


def point_kind(param: Var) -> str | None:
    """The kind of the quantize point whose scale is ``param`` (None: not a
    scale parameter)."""
    name = param.name_hint
    if not name.startswith(SCALE_PREFIX):
        return None
    kind = name[len(SCALE_PREFIX):].rsplit("_", 1)[0]
    return kind if kind in (INPUT, WEIGHT, ACTIVATION) else None


def rule(*names: str, pattern: Callable[[str], DFPattern]) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        for name in names:
            RULES.setdefault(name, []).append((pattern(name), fn))
        return fn
    return wrap


def _call(name: str, *args: Expr, attrs: Any = None, like: Expr | None = None) -> Call:
    span = like.span if like is not None else None
    if attrs is None:
        return Call(op(name), tuple(args), span=span)
    return Call(op(name), tuple(args), attrs, span=span)


class _Annotator(ExprMutator):
    def __init__(self, cfg: QConfig, root: Expr) -> None:
        super().__init__()
        self.cfg = cfg
        self.matcher = DFPatternMatcher(root)
        self.kinds: dict[Expr, str] = {}           # rewritten node -> INPUT | ACTIVATION
        self.points: dict[tuple[Expr, str], Expr] = {}
        self.scales: list[Var] = []
        self.conv_index = 0

    # ------------------------------------------------------------ points
    def point(self, x: Expr, kind: str, shape: tuple[int, ...] = (), axis: int = -1) -> Expr:
        """``x`` through a quantize point of ``kind`` (memoised)."""
        key = (x, kind)
        if key in self.points:
            return self.points[key]
        cfg = self.cfg
        scale = Var(f"{SCALE_PREFIX}{kind}_{len(self.scales)}", TensorType(shape, DType.FLOAT32))
        self.scales.append(scale)
        zero = Constant(np.array(0, np.int32))
        q: Expr = _call("qnn.quantize", x, scale, zero, like=x,
                        attrs=QuantizeAttrs(axis=axis, out_dtype=DType(cfg.dtype(kind))))
        if cfg.narrower_than_dtype(kind):
            bound = float(cfg.clip_bound(kind))
            q = _call("clip", q, attrs=ClipAttrs(a_min=-bound, a_max=bound), like=x)
        out = _call("qnn.dequantize", q, scale, zero, attrs=DequantizeAttrs(axis=axis), like=x)
        self.points[key] = out
        return out

    def as_input(self, x: Expr) -> Expr:
        if self.kinds.get(x) == INPUT:
            return x
        out = self.point(x, INPUT)
        self.kinds[out] = INPUT
        return out

    def as_weight(self, w: Expr, axis: int) -> Expr:
        assert isinstance(w, Constant)
        if not self.cfg.per_channel:
            return self.point(w, WEIGHT)
        axis %= w.data.ndim
        return self.point(w, WEIGHT, (int(w.data.shape[axis]),), axis)

    def realized(self, x: Expr) -> Expr:
        """``x`` as a float consumer reads it."""
        if isinstance(x, Tuple):
            fields = tuple(self.realized(f) for f in x.fields)
            return x if fields == x.fields else Tuple(fields, span=x.span)
        if self.kinds.get(x) == ACTIVATION:
            return self.point(x, ACTIVATION)
        return x

    def annotated(self, e: Expr, kind: str) -> Expr:
        self.kinds[e] = kind
        return e

    # ------------------------------------------------------------ walk
    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if isinstance(node.op, Op) and isinstance(new, Call):
            if node.op.name == "nn.conv2d":
                self.conv_index += 1
            for pattern, handler in RULES.get(node.op.name, ()):
                if self.matcher.match(pattern, node):
                    out = handler(self, node, new)
                    if out is not None:
                        return out
        args = tuple(self.realized(a) for a in new.args)
        return new if args == new.args else Call(new.op, args, new.attrs, new.type_args,
                                                 span=new.span)


def _rebuild(call: Call, *args: Expr) -> Call:
    return Call(call.op, tuple(args), call.attrs, call.type_args, span=call.span)


# ================================================================ rules

def _weighted(name: str) -> DFPattern:
    return is_op(name)(wildcard(), is_constant())


@rule("nn.conv2d", "nn.dense", pattern=_weighted)
def _conv_dense(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    if pre.op.name == "nn.conv2d":            # type: ignore[attr-defined]
        if a.conv_index - 1 in a.cfg.skip_conv_layers:
            return None
        axis = str(pre.attrs.kernel_layout).index("O")  # type: ignore[attr-defined]
    else:
        if a.cfg.skip_dense_layer:
            return None
        axis = 0
    data, weight = new.args
    return a.annotated(_rebuild(new, a.as_input(data), a.as_weight(weight, axis)), ACTIVATION)


def _with_constant(name: str) -> DFPattern:
    return is_op(name)(wildcard(), is_constant()) | is_op(name)(is_constant(), wildcard())


@rule("add", "nn.bias_add", "multiply", pattern=_with_constant)
def _affine(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    if not any(a.kinds.get(x) for x in new.args):
        return None
    return a.annotated(new, ACTIVATION)


def _binary(name: str) -> DFPattern:
    return is_op(name)(wildcard(), wildcard())


@rule("add", "multiply", pattern=_binary)
def _add_mul(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    if not any(a.kinds.get(x) for x in new.args):
        return None
    return a.annotated(_rebuild(new, *(a.as_input(x) for x in new.args)), ACTIVATION)


def _unary(name: str) -> DFPattern:
    return is_op(name)(wildcard())


@rule("nn.relu", "clip", "reshape", "nn.batch_flatten", "transpose", "squeeze",
      "expand_dims", "strided_slice", pattern=_unary)
def _identity(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    kind = a.kinds.get(new.args[0])
    return None if kind is None else a.annotated(new, kind)


@rule("nn.max_pool2d", pattern=_unary)
def _max_pool(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    if a.kinds.get(new.args[0]) is None:
        return None
    return a.annotated(_rebuild(new, a.as_input(new.args[0])), INPUT)


@rule("nn.avg_pool2d", "nn.global_avg_pool2d", pattern=_unary)
def _avg_pool(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    if a.kinds.get(new.args[0]) is None:
        return None
    return a.annotated(_rebuild(new, a.as_input(new.args[0])), ACTIVATION)


@rule("concatenate", pattern=_unary)
def _concatenate(a: _Annotator, pre: Call, new: Call) -> Expr | None:
    fields = new.args[0]
    if not isinstance(fields, Tuple) or not any(a.kinds.get(f) for f in fields.fields):
        return None
    quantized = Tuple(tuple(a.as_input(f) for f in fields.fields), span=fields.span)
    return a.annotated(_rebuild(new, quantized), ACTIVATION)


# ================================================================ the pass

def quantize_annotate(mod: IRModule, cfg: QConfig) -> IRModule:
    """``@main`` with Relay's quantize points (``qnn.quantize`` ->
    ``qnn.dequantize`` whose scale is a new parameter ``qscale_<kind>_<n>``)
    at the operands and results of the operators to quantize."""
    if "main" not in mod:
        raise DiagnosticError("quantize: the module has no @main")
    fn = mod["main"]
    annotator = _Annotator(cfg, fn)
    body = annotator.realized(annotator.visit(fn.body))
    out = mod.copy()
    out.add(mod.global_var("main"),
            Function(fn.params + tuple(annotator.scales), body, None, fn.type_params, fn.attrs,
                     span=fn.span))
    return infer_types(out)


register_pass("QuantizeAnnotate", opt_level=0, options=QConfig)(quantize_annotate)
