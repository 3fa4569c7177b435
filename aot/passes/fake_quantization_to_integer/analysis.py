"""The analysis of one function: the integer representation of each float
node it can follow (one post-order walk applying the rule table), the
quantizes, and the plan finishing each quantize's region (tails, core,
error bound)."""

from __future__ import annotations

import math

import numpy as np

from ...diagnostics import DiagnosticError
from ...interpreter import Interpreter
from ...ir import quant
from ...ir.dtype import DType
from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem
from ...ir.module import IRModule
from ...ir.ops.qnn import BroadcastAttrs, QnnConcatenateAttrs
from ...ir.ops.transform_index import TakeAttrs
from ...ir.ops.transform_init import CastAttrs, ClipAttrs
from ...ir.registry import PatternKind, lookup
from ...ir.pattern import DFPatternMatcher, is_op
from ...ir.types import TensorType
from ...ir.visitor import ExprMutator, children, post_order
from . import accumulators  # noqa: F401  (registers the accumulator rules)
from . import products  # noqa: F401  (batch_matmul and conv2d_transpose rules)
from .representation import (BINARY, BUDGET, CONCAT, I8, I32, LAYOUT_OPS, POOL, QUANT_DTYPES,
                             REL_SLACK, REQUANT_IN, REQUANT_OUT, SAFE, Acc, Cell, Core, Exact, Plan,
                             QParams, QSite, Rep, flatten_cells, make_call, make_cell,
                             make_requantize, multiplier_ok, param_axis, pool_channel_axis,
                             rescale_ok, tensor_type)
from .rules import QD, QS, QUANTIZE, QZ, RULES
from .softmax import softmax_core

#: the ONNX importer's QuantizeLinear: ``cast(clip(round(x / s) [+ z]))``
_ONNX_DIV = is_op("divide")(QD, QS)
_ONNX_ROUND = is_op("round")(_ONNX_DIV)
_ONNX_ADD = is_op("add")(_ONNX_ROUND, QZ)
_ONNX_CLIP = is_op("clip")(_ONNX_ROUND | _ONNX_ADD)
ONNX_QUANTIZE = is_op("cast")(_ONNX_CLIP)


class Analysis:
    """Representations of the float nodes of one function, the quantize
    sites, and the plans that finish them."""

    def __init__(self, func: Function, mod: IRModule | None) -> None:
        self.matcher = DFPatternMatcher(func, mod)
        self.order = post_order(func)
        self.reps: dict[Expr, Rep] = {}
        self.closed: dict[Expr, bool] = {}
        self.users: dict[Expr, list[Expr]] = {}
        self.values: dict[Expr, np.ndarray | None] = {}
        self.evaluator = Interpreter(IRModule())
        self.splits: dict[Expr, Expr] = {}
        self.indices: dict[Expr, Expr] = {}

    # ------------------------------------------------------------ walk
    def run(self) -> list[Plan]:
        plans = []
        for node in self.order:
            for c in children(node):
                self.users.setdefault(c, []).append(node)
            self.closed[node] = self._is_closed(node)
            if isinstance(node, TupleGetItem):
                projected = self._split_item(node)
                if projected is not None:
                    self.reps[node] = projected
                continue
            if not (isinstance(node, Call) and isinstance(node.op, Op)):
                continue
            if tensor_type(node) is None:
                continue
            rep = self._apply_rules(node)
            # a closed constant is better used as its value; only an Exact
            # form (a quantized weight) is worth keeping for it
            if rep is not None and not (isinstance(rep, Acc) and self.closed[node]):
                self.reps[node] = rep
            site = self._quantize_site(node)
            if site is not None:
                plan = self._finish(site)
                if plan is not None:
                    plans.append(plan)
        return plans

    def _is_closed(self, node: Expr) -> bool:
        if isinstance(node, (Constant, Op)):
            return True
        if isinstance(node, Call):
            return isinstance(node.op, Op) and all(self.closed.get(a, False) for a in node.args)
        if isinstance(node, Tuple):
            return all(self.closed.get(f, False) for f in node.fields)
        if isinstance(node, TupleGetItem):
            return self.closed.get(node.tuple_value, False)
        return False

    def _apply_rules(self, node: Call) -> Rep | None:
        for pattern, handler in RULES.get(node.op.name, ()):  # type: ignore[union-attr]
            if self.matcher.match(pattern, node):
                rep = handler(self, node, self.matcher.node_map())
                if rep is not None:
                    return rep
        return None

    def _split_item(self, node: TupleGetItem) -> Exact | None:
        """``split(x).i`` of an Exact ``x`` (per tensor, or per channel of
        another axis): the same item of the integers' split."""
        tup = node.tuple_value
        t = tensor_type(node)
        if not (isinstance(tup, Call) and isinstance(tup.op, Op) and tup.op.name == "split") \
                or t is None:
            return None
        x = self.exact(tup.args[0])
        xt = tensor_type(tup.args[0])
        if x is None or xt is None:
            return None
        if x.params.axis is not None \
                and x.params.axis == tup.attrs.axis % len(xt.shape):  # type: ignore[attr-defined]
            return None
        if tup not in self.splits:
            self.splits[tup] = Call(tup.op, (x.expr,), tup.attrs, span=tup.span)
        item = TupleGetItem(self.splits[tup], node.index, span=node.span)
        return Exact(item, x.params, t, make_cell(node, make_cell(tup, x.cell)))

    # ------------------------------------------------------------ services
    def value(self, e: Expr) -> np.ndarray | None:
        """The value of a closed constant sub-expression, or None."""
        if isinstance(e, Constant):
            return np.asarray(e.data)
        if not self.closed.get(e, False):
            return None
        if e not in self.values:
            try:
                v = self.evaluator.evaluate(e)
            except DiagnosticError:
                v = None
            self.values[e] = np.asarray(v) if isinstance(v, np.ndarray) else None
        return self.values[e]

    def float_value(self, e: Expr) -> np.ndarray | None:
        t = tensor_type(e)
        v = self.value(e)
        if t is None or v is None or t.dtype is not DType.FLOAT32:
            return None
        return v

    def exact(self, e: Expr) -> Exact | None:
        r = self.reps.get(e)
        return r if isinstance(r, Exact) else None

    def acc(self, e: Expr) -> Acc | None:
        r = self.reps.get(e)
        return r if isinstance(r, Acc) else None

    # ------------------------------------------------------------ quantize sites
    def _quantize_site(self, node: Call) -> QSite | None:
        name = node.op.name  # type: ignore[union-attr]
        if name == "qnn.quantize" and self.matcher.match(QUANTIZE, node):
            return self._qnn_site(node, self.matcher.node_map())
        if name == "cast" and self.matcher.match(ONNX_QUANTIZE, node):
            return self._onnx_site(node, self.matcher.node_map())
        return None

    def _qnn_site(self, node: Call, nm: dict) -> QSite | None:
        data = nm[QD][0]
        dt, t = tensor_type(data), tensor_type(node)
        s, z = self.value(nm[QS][0]), self.value(nm[QZ][0])
        if dt is None or t is None or s is None or z is None or dt.dtype is not DType.FLOAT32:
            return None
        ndim = len(dt.shape)
        axis = node.attrs.axis  # type: ignore[attr-defined]
        axis = (axis + ndim if axis < 0 else axis) if ndim else 0
        params = QParams.make(s, z, axis if ndim else None, t.dtype)
        if params is None:
            return None
        return QSite(node, data, params, (), None, t)

    def _onnx_site(self, node: Call, nm: dict) -> QSite | None:
        data = nm[QD][0]
        dt, t = tensor_type(data), tensor_type(node)
        if dt is None or t is None or dt.dtype is not DType.FLOAT32 \
                or t.dtype not in QUANT_DTYPES:
            return None
        s = self.float_value(nm[QS][0])
        z_node = nm[QZ][0] if _ONNX_ADD in nm else None
        z = np.zeros((), np.float32) if z_node is None else self.float_value(z_node)
        if s is None or z is None:
            return None
        ndim = len(dt.shape)
        s_axis, z_axis = param_axis(s.shape, ndim), param_axis(z.shape, ndim)
        if s_axis is False or z_axis is False or (None not in (s_axis, z_axis)
                                                  and s_axis != z_axis):
            return None
        axis = s_axis if s_axis is not None else z_axis
        params = QParams.make(s, z, axis, t.dtype)  # type: ignore[arg-type]
        if params is None:
            return None
        clip = nm[_ONNX_CLIP][0]
        lo, hi = clip.attrs.a_min, clip.attrs.a_max  # type: ignore[attr-defined]
        dlo, dhi = quant.dtype_range(t.dtype.np)
        if not (lo == math.floor(lo) and hi == math.floor(hi) and dlo <= lo <= hi <= dhi):
            return None
        narrow = None if (lo, hi) == (dlo, dhi) else (int(lo), int(hi))
        interior = [nm[_ONNX_DIV][0], nm[_ONNX_ROUND][0], clip]
        if z_node is not None:
            interior.append(nm[_ONNX_ADD][0])
        return QSite(node, data, params, tuple(interior), narrow, t, ties_even=True)

    def quantized(self, site: QSite, value: float | np.ndarray) -> np.ndarray:
        """``Q(value)``: the site's own quantize evaluated on a constant.  A
        scalar ``value`` is given the parameters' shape (so a per-channel
        quantize gives one value per channel, shaped to broadcast)."""
        if isinstance(value, np.ndarray):
            data = value.astype(np.float32)
        else:
            shape: tuple[int, ...] = ()
            if not site.params.per_tensor:
                dims = [1] * len(site.ttype.shape)
                dims[site.params.axis] = site.params.scale.size  # type: ignore[index]
                shape = tuple(dims)
            data = np.full(shape, value, np.float32)
        sub = ExprMutator()
        sub.memo[site.data] = Constant(data)
        result = self.evaluator.evaluate(sub.visit(site.node))
        assert isinstance(result, np.ndarray)
        return np.asarray(result)

    # ------------------------------------------------------------ finishing
    def _finish(self, site: QSite) -> Plan | None:
        chain: list[Call] = []
        node = site.data
        while isinstance(node, Call) and isinstance(node.op, Op) and _is_tail(node.op.name) \
                and node.args and tensor_type(node.args[0]) is not None:
            chain.append(node)
            node = node.args[0]
        valid = 0
        while valid < len(chain) and _tail_ok(chain[valid], site):
            valid += 1
        for k in range(len(chain), -1, -1):   # the deepest core first
            if k > valid:
                continue
            core_node = node if k == len(chain) else chain[k]
            core = self._core(core_node, site)
            if core is None:
                continue
            expr = core.expr
            for t in reversed(chain[:k]):
                expr = self._tail(t, expr, site)
            if site.narrow is not None:
                lo, hi = site.narrow
                expr = make_call("clip", expr, attrs=ClipAttrs(float(lo), float(hi)),
                                 like=site.node)
            region = flatten_cells([core.cell]) | set(chain[:k]) | set(site.interior)
            return Plan(site, expr, frozenset(region), core.err)
        return self._lookup_table(site)

    # --- elementwise regions of one 8-bit input
    def _lookup_table(self, site: QSite) -> Plan | None:
        """A region of elementwise operators (and scalar constants) on one
        8-bit per-tensor Exact value ``x`` (sigmoid, tanh, hard-swish, ...):
        ``take(T, x - min)`` with ``T[k] = Q(f(dequantize(k)))`` for every
        integer ``k`` of the dtype, computed by evaluating the region itself
        on the 256 dequantized values -- the float program's own
        arithmetic, so the result is exact.  Tried last: a table costs 256
        entries of flash."""
        leaf: Expr | None = None
        interior: set[Expr] = set()
        stack = [site.data]
        while stack:
            e = stack.pop()
            if e in interior or e is leaf:
                continue
            rep = self.exact(e)
            if rep is not None and not self.closed.get(e, False):
                if leaf is not None:
                    return None                      # a second input
                leaf = e
                continue
            if self.closed.get(e, False):
                v = self.value(e)
                if v is None or v.size != 1:
                    return None
                continue
            if not (isinstance(e, Call) and isinstance(e.op, Op) and _is_elementwise(e.op.name)):
                return None
            interior.add(e)
            stack.extend(e.args)
        x = self.exact(leaf) if leaf is not None else None
        if x is None or not x.params.per_tensor or x.params.dtype not in BINARY \
                or x.ttype.shape != tensor_type(site.data).shape:  # type: ignore[union-attr]
            return None
        lo, hi = quant.dtype_range(x.params.dtype.np)
        codes = np.arange(lo, hi + 1, dtype=np.int64)
        sub = ExprMutator()
        sub.memo[leaf] = Constant(x.params.dequantized(codes))
        try:
            table = self.evaluator.evaluate(sub.visit(site.node))
        except DiagnosticError:
            return None
        if not isinstance(table, np.ndarray) or table.size != codes.size:
            return None
        if leaf not in self.indices:
            index: Expr = make_call("cast", x.expr, attrs=CastAttrs(dtype=I32), like=leaf)
            if lo != 0:
                index = make_call("subtract", index, Constant(np.array(lo, np.int32)), like=leaf)
            self.indices[leaf] = index
        expr = make_call("take", Constant(table.reshape(-1).astype(site.params.dtype.np)),
                         self.indices[leaf], attrs=TakeAttrs(axis=0), like=site.node)
        region = interior | set(site.interior) | flatten_cells([x.cell])
        return Plan(site, expr, frozenset(region), 0.0)

    def _tail(self, t: Call, x: Expr, site: QSite) -> Expr:
        """``t`` applied after the quantize: relu is ``max(., Q(0))``, clip
        is ``clip(., Q(lo), Q(hi))``; a bound at the dtype's limit is
        dropped (the quantize already saturates there)."""
        name = t.op.name  # type: ignore[union-attr]
        dt = site.params.dtype
        dlo, dhi = quant.dtype_range(dt.np)
        if name in ("nn.relu", "clip"):
            lo_real = 0.0 if name == "nn.relu" else t.attrs.a_min  # type: ignore[attr-defined]
            hi_real = math.inf if name == "nn.relu" else t.attrs.a_max  # type: ignore
            lo, hi = self.quantized(site, lo_real), self.quantized(site, hi_real)
            need_lo, need_hi = bool(np.any(lo > dlo)), bool(np.any(hi < dhi))
            if site.params.per_tensor and need_lo and need_hi:
                return make_call("clip", x, attrs=ClipAttrs(float(lo), float(hi)), like=t)
            if need_lo:
                x = make_call("maximum", x, Constant(lo.astype(dt.np)), like=t)
            if need_hi:
                x = make_call("minimum", x, Constant(hi.astype(dt.np)), like=t)
            return x
        return Call(t.op, (x,), t.attrs, span=t.span)

    def _core(self, node: Expr, site: QSite) -> Core | None:
        rep = self.reps.get(node)
        if site.ties_even and isinstance(rep, Acc):
            core = _even_average(self, node, rep, site)
            if core is not None:
                return core
        if isinstance(node, Call) and isinstance(node.op, Op) \
                and node.op.name == "nn.avg_pool2d":
            core = self._avg_pool(node, site)
            if core is not None:
                return core
        if isinstance(rep, Exact):
            return _finish_exact(rep, site)
        if isinstance(rep, Acc):
            return _finish_acc(rep, site)
        if isinstance(node, Call) and isinstance(node.op, Op):
            if node.op.name in ("add", "subtract", "multiply"):
                return self._binary(node, site)
            if node.op.name == "concatenate":
                return self._concatenate(node, site)
            if node.op.name in ("maximum", "minimum"):
                return self._extremum(node, site)
            if node.op.name == "nn.softmax":
                return softmax_core(self, node, site)
        return None

    # --- maximum, minimum
    def _extremum(self, node: Call, site: QSite) -> Core | None:
        """``Q(max(a, b)) = max(Q(a), Q(b))`` (``Q`` is non-decreasing):
        each Exact operand finished with ``Q``'s parameters, a constant
        quantized by ``Q`` itself."""
        parts: list[Expr] = []
        cells: list[Cell | None] = []
        err = 0.0
        for arg in node.args:
            rep = self.exact(arg)
            if rep is not None:
                core = _finish_exact(rep, site)
                if core is None:
                    return None
                parts.append(core.expr)
                cells.append(core.cell)
                err = max(err, core.err)
                continue
            value = self.float_value(arg)
            if value is None or (value.size != 1 and not site.params.per_tensor):
                return None
            scalar = float(value.reshape(-1)[0]) if value.size == 1 else None
            q = self.quantized(site, scalar if scalar is not None else value)
            parts.append(Constant(q.astype(site.params.dtype.np), span=arg.span))
        if not cells:                 # only constants: nothing to finish
            return None
        name = node.op.name  # type: ignore[union-attr]
        return Core(make_call(name, *parts, like=node), err, make_cell(node, *cells))

    # --- binary operators
    def _operand(self, e: Expr) -> Exact | np.ndarray | None:
        """An operand of a binary operator: its Exact representation, else
        its constant float value, else None."""
        rep = self.exact(e)
        if rep is not None:
            return rep
        return self.float_value(e)

    def _binary(self, node: Call, site: QSite) -> Core | None:
        """``add``/``subtract``/``multiply`` finished with the quantize's
        parameters: ``qnn.add``/``qnn.mul`` of Exact operands; a constant
        operand is represented in 8 bits (``x - c`` is ``x + (-c)``; ``x +
        0`` is ``x``); ``qnn.subtract`` of two Exact operands."""
        out = site.params
        if not out.per_tensor or out.dtype not in BINARY:
            return None
        name = node.op.name  # type: ignore[union-attr]
        lhs, rhs = (self._operand(a) for a in node.args)
        if name == "subtract":
            if isinstance(lhs, Exact) and isinstance(rhs, Exact):
                return _qnn_add(node, lhs, 0.0, rhs, 0.0, site, "qnn.subtract")
            if not isinstance(lhs, Exact) or not isinstance(rhs, np.ndarray):
                return None
            name, rhs = "add", -rhs
        if isinstance(rhs, Exact) and isinstance(lhs, np.ndarray):
            lhs, rhs = rhs, lhs                       # both operators commute
        if not isinstance(lhs, Exact) or rhs is None or lhs.params.dtype != out.dtype:
            return None
        if isinstance(rhs, Exact):
            if name == "add":
                return _qnn_add(node, lhs, 0.0, rhs, 0.0, site)
            return _qnn_mul(node, lhs, 0.0, rhs, 0.0, site)
        if name == "add" and not np.any(rhs):
            core = _finish_exact(lhs, site)
            return None if core is None else Core(core.expr, core.err, make_cell(node, lhs.cell))
        made = _constant_operand(rhs, out.dtype, node)
        if made is None:
            return None
        const, err = made
        if name == "add":
            return _qnn_add(node, lhs, 0.0, const, err, site)
        return _qnn_mul(node, lhs, 0.0, const, err, site)

    # --- average pooling
    def _avg_pool(self, node: Call, site: QSite) -> Core | None:
        """``nn.avg_pool2d`` of an Exact operand finished as
        ``qnn.avg_pool2d`` (TFLite's AveragePool): with the quantize's
        parameters equal to the operand's, the integer window average
        rounded once -- the exact value ``r / s + z`` rounded, no error
        but the tie rule; otherwise that average rounded (half an input
        step) and requantized (a quarter of a step of double rounding)."""
        x = self.exact(node.args[0])
        out = site.params
        if x is None or not x.params.per_tensor or not out.per_tensor \
                or x.params.dtype != out.dtype or out.dtype not in POOL:
            return None
        err = 0.0
        if not x.params.same(out):
            ratio = np.asarray(x.params.scale, np.float64) / float(out.scale)
            err = 0.5 * float(np.max(ratio)) + 0.25 + REL_SLACK
            if err > BUDGET or not rescale_ok(x.params.deviation, ratio):
                return None
        expr = make_call("qnn.avg_pool2d", x.expr, x.params.scale_arg(),
                         x.params.zero_point_arg(), out.scale_arg(), out.zero_point_arg(),
                         attrs=node.attrs, like=node)
        return Core(expr, err, make_cell(node, x.cell))

    # --- concatenate
    def _concatenate(self, node: Call, site: QSite) -> Core | None:
        out = site.params
        tup = node.args[0]
        if not isinstance(tup, Tuple) or not out.per_tensor or out.dtype not in CONCAT:
            return None
        reps = [self.exact(f) for f in tup.fields]
        if any(r is None or not r.params.per_tensor or r.params.dtype != out.dtype
               for r in reps):
            return None
        for r in reps:
            assert r is not None
            if not rescale_ok(r.params.deviation, r.params.scale / out.scale):
                return None
        exprs = Tuple(tuple(r.expr for r in reps))  # type: ignore[union-attr]
        scales = Tuple(tuple(r.params.scale_arg() for r in reps))  # type: ignore[union-attr]
        zps = Tuple(tuple(r.params.zero_point_arg() for r in reps))  # type: ignore[union-attr]
        axis = node.attrs.axis  # type: ignore[attr-defined]
        expr = make_call("qnn.concatenate", exprs, scales, zps, out.scale_arg(),
                         out.zero_point_arg(), attrs=QnnConcatenateAttrs(axis=axis), like=node)
        cell = make_cell(node, make_cell(tup, *(r.cell for r in reps)))  # type: ignore[union-attr]
        return Core(expr, REL_SLACK, cell)


def _is_tail(name: str) -> bool:
    return name in ("nn.relu", "clip", "nn.max_pool2d", "nn.global_max_pool2d") \
        or name in LAYOUT_OPS


#: elementwise and broadcast operators that change the number or order
#: of elements
_NOT_ELEMENTWISE = frozenset({"broadcast_to", "broadcast_to_like", "expand_dims", "repeat",
                              "tile", "full"})


def _is_elementwise(name: str) -> bool:
    """An operator computing each element from the same element of its
    operands (broadcasting scalars): a table of its values is exact."""
    op_def = lookup(name)
    return op_def is not None and op_def.pattern in (PatternKind.ELEMWISE,
                                                     PatternKind.BROADCAST) \
        and not name.startswith("qnn.") and name not in _NOT_ELEMENTWISE


def _tail_ok(t: Call, site: QSite) -> bool:
    """Does ``Q(t(v)) == t'(Q(v))`` hold for this quantize?"""
    name = t.op.name  # type: ignore[union-attr]
    if name in ("nn.relu", "clip"):
        return True
    if name in ("nn.max_pool2d", "nn.global_max_pool2d"):
        c = pool_channel_axis(t.attrs)
        return c is not None and (site.params.per_tensor or site.params.axis == c)
    return site.params.per_tensor


# ====================================================================== finishing a core

#: the averages whose accumulator is the integer sum ``S`` of ``q - z``
_AVERAGES = ("nn.avg_pool2d", "nn.global_avg_pool2d", "mean")


def _even_average(an: Analysis, node: Expr, rep: Acc, site: QSite) -> Core | None:
    """An average quantized by ONNX's QuantizeLinear with its operand's own
    parameters (onnxruntime's quantizer gives AveragePool and
    GlobalAveragePool those): the float program computes ``s * S / n``,
    divides by ``s`` and rounds half to even, so its exact result is
    ``round_half_even(S / n) + z`` -- in integers ``d = floor(S / n)``
    plus one when ``2 * (S mod n) + (d mod 2) > n`` (above the half, or
    on it with ``d`` odd).  Ties are frequent (``n = 64`` for an 8x8
    pool); ``qnn.requantize`` and TFLite's average round them away from
    zero.  Only an even ``n`` has ties (``S / n = m + 1/2`` needs ``2S =
    n (2m + 1)``); an odd one keeps ``qnn.avg_pool2d`` or the
    requantize, which then give the same integers."""
    if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in _AVERAGES):
        return None
    x = an.exact(node.args[0])
    out = site.params
    if x is None or not x.params.per_tensor or not x.params.same(out) \
            or rep.axis is not None or rep.scale.size != 1:
        return None
    n = round(float(x.params.scale) / float(rep.scale))
    if n < 2 or n % 2 or 2 * (rep.bound + n) >= SAFE \
            or (np.float64(x.params.scale) / n).astype(np.float32) != rep.scale.reshape(()):
        return None
    n_c = Constant(np.array(n, np.int32))
    two = Constant(np.array(2, np.int32))
    d = make_call("floor_divide", rep.expr, n_c, like=node)
    twice_r = make_call("multiply", make_call("floor_mod", rep.expr, n_c, like=node), two,
                        like=node)
    key = make_call("add", twice_r, make_call("floor_mod", d, two, like=node), like=node)
    up = make_call("cast", make_call("greater", key, n_c, like=node), attrs=CastAttrs(dtype=I32),
                   like=node)
    q = make_call("add", d, up, like=node)
    if np.any(out.zero_point):
        q = make_call("add", q, Constant(np.array(out.zero_point, np.int32).reshape(())),
                      like=node)
    lo, hi = quant.dtype_range(out.dtype.np)
    q = make_call("clip", q, attrs=ClipAttrs(float(lo), float(hi)), like=node)
    expr = make_call("cast", q, attrs=CastAttrs(dtype=out.dtype), like=node)
    return Core(expr, 0.0, rep.cell)


def _finish_exact(rep: Exact, site: QSite) -> Core | None:
    out = site.params
    if rep.params.same(out):
        return Core(rep.expr, 0.0, rep.cell)
    if not out.per_tensor or rep.params.dtype not in REQUANT_IN or out.dtype not in REQUANT_OUT:
        return None
    if not rescale_ok(rep.params.deviation, rep.params.scale / out.scale):
        return None
    expr = make_requantize(rep.expr, rep.params.scale, rep.params.zero_point, rep.params.axis, out,
                           site.node)
    return Core(expr, REL_SLACK, rep.cell)


def _finish_acc(rep: Acc, site: QSite) -> Core | None:
    out = site.params
    if not out.per_tensor or out.dtype not in REQUANT_OUT:
        return None
    err = rep.err / float(out.scale) + REL_SLACK
    if err > BUDGET or not rescale_ok(rep.bound, rep.scale.astype(np.float64) / float(out.scale)):
        return None
    expr = make_requantize(rep.expr, rep.scale, np.zeros((), np.int32), rep.axis, out, site.node)
    return Core(expr, err, rep.cell)


def _constant_operand(value: np.ndarray, dtype: DType, like: Expr) -> tuple[Exact, float] | None:
    """A float constant as an Exact 8-bit operand: a uniform constant
    ``v`` exactly (scale ``|v|``, integer +-1), any other with the
    symmetric scale ``max|c| / 127``; returns it and its largest
    representation error."""
    c = np.asarray(value, np.float32)
    if dtype not in BINARY or c.size == 0 or not np.all(np.isfinite(c)):
        return None
    top = float(np.max(np.abs(c)))
    if top == 0.0:
        return None
    zp = 0 if dtype is I8 else 128
    if np.all(c == c.reshape(-1)[0]):
        scale = np.float32(top)
        zp = 0 if dtype is I8 else 1
        q = np.where(c > 0, 1, -1) + zp
    else:
        scale = np.float32(top / 127.0)
        if not (np.isfinite(scale) and scale > 0):
            return None
        q = np.clip(np.round(c.astype(np.float64) / float(scale)), -127, 127) + zp
    params = QParams.make(np.asarray(scale), np.asarray(zp), None, dtype)
    if params is None:
        return None
    data = q.astype(dtype.np)
    err = float(np.max(np.abs(params.dequantized(data).astype(np.float64)
                              - c.astype(np.float64))))
    t = TensorType(c.shape, dtype)
    return Exact(Constant(data, span=like.span), params, t, None), err


def _binary_args(a: Exact, b: Exact, out: QParams) -> tuple[Expr, ...]:
    return (a.expr, b.expr, a.params.scale_arg(), a.params.zero_point_arg(),
            b.params.scale_arg(), b.params.zero_point_arg(), out.scale_arg(),
            out.zero_point_arg())


def _binary_attrs(a: Exact, b: Exact) -> BroadcastAttrs:
    return BroadcastAttrs(lhs_axis=-1 if a.params.axis is None else a.params.axis,
                          rhs_axis=-1 if b.params.axis is None else b.params.axis)


def _qnn_add(node: Call, a: Exact, ea: float, b: Exact, eb: float, site: QSite,
             op: str = "qnn.add") -> Core | None:
    """``qnn.add`` (TFLite's ADD): operands shifted left by 20 bits and
    rescaled (at most 1.125 units of 2**-20 * twice the larger scale each),
    the sum rescaled with double rounding (at most 1/4 of a step);
    ``qnn.subtract`` (TFLite's SUB) the same with the difference."""
    out = site.params
    if a.params.dtype != out.dtype or b.params.dtype != out.dtype:
        return None
    big = max(float(np.max(a.params.scale)), float(np.max(b.params.scale)))
    real_out = 2.0 * big / (float(1 << 20) * float(out.scale))
    if not real_out < 0.5:
        return None
    err = 2.5 * real_out + 0.25 + (ea + eb) / float(out.scale) + REL_SLACK
    if err > BUDGET:
        return None
    expr = make_call(op, *_binary_args(a, b, out), attrs=_binary_attrs(a, b), like=node)
    return Core(expr, err, make_cell(node, a.cell, b.cell))


def _qnn_mul(node: Call, a: Exact, ea: float, b: Exact, eb: float, site: QSite) -> Core | None:
    """``qnn.mul`` (TFLite's MUL): the exact product of the shifted
    operands rescaled with double rounding (at most 1/4 of a step)."""
    out = site.params
    if a.params.dtype != out.dtype or b.params.dtype != out.dtype:
        return None
    reals = np.multiply.outer(a.params.scale.astype(np.float64).reshape(-1),
                              b.params.scale.astype(np.float64).reshape(-1)) / float(out.scale)
    product = a.params.deviation * b.params.deviation
    top = float(np.max(reals))
    if not multiplier_ok(reals) or product * top >= SAFE:
        return None
    shift = quant.quantize_multiplier(top).shift
    if product * (1 << max(shift, 0)) >= SAFE:
        return None
    # a constant's error e scales with the other operand's largest value
    err = 0.25 + (ea * b.params.max_real + eb * a.params.max_real + ea * eb) \
        / float(out.scale) + REL_SLACK
    if err > BUDGET:
        return None
    expr = make_call("qnn.mul", *_binary_args(a, b, out), attrs=_binary_attrs(a, b), like=node)
    return Core(expr, err, make_cell(node, a.cell, b.cell))
