"""FakeQuantizationToInteger: run the float regions of a QDQ graph as
integer qnn operators.

Design note
===========

A QDQ ("fake quantized") graph computes in float between a dequantize and
a quantize::

    q1 -> dequantize -> conv2d -> bias_add -> relu -> quantize -> q2
    w  -> dequantize ----^

The integer inputs and the integer output are all that matter; the pass
rewrites such a region into integer operators of the catalogue::

    q1, w -> qnn.conv2d -> add (int32 bias) -> qnn.requantize -> maximum(., zp) -> q2

so a microcontroller runs 8-bit multiply-accumulates on int8 weights in
flash instead of float ones.  This is Relay's ``FakeQuantizationToInteger``
(``src/relay/transforms/fake_quantization_to_integer.cc``) with one
difference of principle, the rule below: Relay rewrites whenever it has a
rule for every operator, and an intermediate result that is not
quantized in the float program gets the quantization parameters of an
operand (one more rounding, unbounded in output steps); here a region is
rewritten only where the integer program provably stays within the rule,
and is left in float otherwise.

The rule
--------
Let ``Q`` be the region's final quantize (scale ``s``, zero point ``z``)
and ``r`` the *exact real* value of the float operators applied to the
dequantized inputs ``s_i * (q_i - z_i)``.  The float program returns
``Q(r + e_f)``, where ``e_f`` is its own float32 rounding (relative
errors of about 2**-24 per operation); the rewritten program returns
``round(r/s + e_i) + z``, saturated, with ``|e_i| <= 3/8`` of a step (the
pass's error budget :data:`BUDGET`, checked statically for each region;
a maximum/minimum at a quantize takes the max/min of such values, which
moves no value further than its operands).  Two roundings to the nearest
integer of values less than one apart differ by at most one (whatever
their tie rules), and saturation keeps that, so:

* **the rewritten output is within one quantization step (one unit of the
  final quantize) of the float QDQ program's output** whenever the float
  program's own error is below 5/8 of a step (on 8-bit models it is
  about 1e-5 of a step);
* **it is exactly the float program's output** where the region is a
  lookup table (below) or every operator of it is exact on integers: a
  dequantize -> quantize pair with the same parameters disappears;
  the layout operators (reshape, transpose, squeeze, expand_dims,
  batch_flatten, strided_slice, split, reverse, tile, repeat,
  broadcast_to, layout_transform), max/min reductions, max pooling, relu,
  clip, maximum/minimum, pad and concatenate of tensors sharing one set
  of parameters are exact (the dequantize map
  ``q -> s * (q - z)`` is increasing and commutes with them); and relu,
  clip and max pooling directly before a quantize are exact after it
  (``Q`` is non-decreasing, so ``Q(max(v, c)) = max(Q(v), Q(c))``).

What contributes to ``e_i`` (each bounded at compile time, a region whose
sum exceeds the budget stays in float): the fixed-point multipliers
(relative 2**-31) and float32 scale products (relative 2**-24, below 2**-6
of a step inside the 16-bit output range, where saturation does not hide
them); a float bias quantized to the int32 accumulator's scale (its
measured rounding, usually ``<< 1/2 * s_acc / s``); a constant operand of
add/multiply represented in 8 bits (exact for a uniform constant, else
measured); the double rounding of TFLite's ``MultiplyByQuantizedMultiplier``
in ``qnn.mul`` and ``qnn.add`` (at most 1/4 of a step) and the 2**-20
operand rounding of ``qnn.add``.

Representations
---------------
The analysis walks the function once in post-order (iteratively; a
10,000-node graph is fine) and gives each float node it can follow one
of two integer representations:

* :class:`Exact` ``(q, params)``: the float value *is* ``dequantize(q)``
  bit for bit.  Made by ``qnn.dequantize`` with constant parameters and
  kept by the exact operators above;
* :class:`Acc` ``(acc, scale)``: an int32 accumulator with zero point 0
  and positive scales (per tensor or per channel); the float value is
  ``scale * acc`` up to float rounding and a bounded absolute error
  ``err`` (from rounding constants to the scale).  Made by ``nn.conv2d``,
  ``nn.dense`` and ``nn.matmul`` (constant weights) of Exact operands
  (``qnn.conv2d``/``qnn.dense``); by average pooling and ``mean`` (an
  int32 ``sum`` of ``q - z`` with scale ``s / n``; a windowed average as a
  depthwise ``qnn.conv2d`` with unit weights); by ``multiply``/``divide``
  by a constant per tensor or per channel (a batch normalisation after
  SimplifyInference: the scales absorb ``|c|``, the integers its sign) and
  ``add``/``subtract`` of a constant -- an Exact operand of these is first
  *widened*, ``(q - z) * 2**k`` at scale ``s / 2**k`` with ``|acc| <
  2**24``, so that a constant rounds to 2**-k of its step.  Kept by
  ``nn.bias_add``/``add``/``subtract`` of a constant (rounded to the
  accumulator's scale), ``add`` of an accumulator with the same scales,
  relu, max pooling and (per-tensor scale) layout operators.  A static
  bound on ``|acc|`` proves that no int32 arithmetic wraps.

At a quantize (``qnn.quantize``, or the composite the ONNX importer makes
of QuantizeLinear: ``cast(clip(round(x / s) + z))``), the pass looks down
the chain of *tail* operators that commute with ``Q`` (relu, clip, max
pooling; layout operators when ``Q`` is per-tensor) to the deepest *core*
it can finish with ``Q``'s parameters:

* an Exact core: the integer tensor itself when its parameters equal
  ``Q``'s, else ``qnn.requantize``;
* an Acc core: ``qnn.requantize`` (per-channel input scales allowed);
* ``add``/``subtract``/``multiply`` of Exact operands (or of an Exact one
  and a constant): ``qnn.add``/``qnn.subtract``/``qnn.mul`` with ``Q``'s
  parameters;
* at an ONNX QuantizeLinear (which rounds half to even), an average
  (``nn.avg_pool2d``, ``nn.global_avg_pool2d``, ``mean``) of an Exact
  operand with the quantize's own parameters and an even divisor ``n``:
  ``round_half_even(S / n) + z`` in integers (``floor_divide``,
  ``floor_mod``), the exact result; ties are frequent there and both
  ``qnn.requantize`` and TFLite's average round them away from zero
  (``qnn.quantize`` sites keep those);
* ``nn.avg_pool2d`` of a per-tensor Exact operand: ``qnn.avg_pool2d``
  (TFLite's AveragePool: with ``Q``'s parameters equal to the operand's,
  the exact average ``r/s + z`` rounded once; else requantized, when half
  an input step plus the double rounding stays within the budget), before
  the accumulator form below;
* ``concatenate`` of Exact operands: ``qnn.concatenate``;
* ``maximum``/``minimum`` of Exact operands and constants: each operand
  finished as above, a constant quantized by ``Q`` itself;
* failing all of these, a region of elementwise operators and scalar
  constants on one 8-bit per-tensor Exact value (sigmoid, tanh,
  hard-swish, exp, ``1 / x``, ...): a 256-entry lookup table ``take(T, q -
  min)`` whose entries are the region and ``Q`` evaluated by the
  interpreter on the 256 dequantized values -- the float program's own
  arithmetic, so exact (Relay's table lookup for tanh, generalised);

then applies the tails on integers (``Q(0)``, ``Q(lo)``, ``Q(hi)`` are
computed by evaluating ``Q`` itself on constants).  ``qnn.requantize``
rounds to nearest (``TONEAREST``) with one rounding.  Binary operators and
concatenation are finished only at a quantize, never in the middle of a
region, because their integer form needs output parameters that only a
quantize gives (Relay borrows an operand's, which breaks the rule).

The dataflow pattern language (:mod:`aot.ir.pattern`) recognises the
quantize forms and selects the rule of each operator (a table of
``is_op(...)(wildcard(), ...)`` patterns and handlers); the regions are
unbounded in depth, so the analysis itself is one post-order walk rather
than :func:`~aot.ir.pattern.rewrite` callbacks.

Sharing: a float node of a region that is also used outside every
rewritten region would be computed twice (in float for its other user and
in integers for the quantize); such regions are not rewritten (decided to
a fixed point, as dropping one region can expose another node).  An
integer value shared by several rewritten regions is built once.

The pass reads types (the module must be typed or it is typed first), so
it sees dataflow in graph normal form: a let-bound operand is a variable
it does not follow.  Constant parameters are found by evaluating closed
constant sub-expressions with the reference interpreter (``cast(128u8)``
of the importer need not be folded first).  The result is type-checked
again.

Level and place: a quantized model computes in integers by default
(DESIGN.md, key decision 8), so the pass is at level 0 and runs at every
opt level; it rewrites nothing in a program without a quantize, and the
float QDQ program is the user's explicit choice (``aot.compile(...,
quantized="float")``, ``aot compile --quantized float``, which disable
it).  It changes results by up to one step against the float program
(the interpreter of the program as written).  It belongs in the DATAFLOW pipeline right
after SimplifyInference (which turns batch norms into the arithmetic the
rules follow) and before FoldConstant, which folds ``dequantize(int8
weight)`` into float32 constants and so hides the quantized weights (on
the QDQ CNN of the tests, run before FoldConstant it leaves 6 float
operators of 52; run after it, 27 of 43: the convolutions and the dense
layer stay float).

Modules: :mod:`.representation` (parameters, Exact/Acc, shared
builders), :mod:`.rules` (the rule table, exact operators),
:mod:`.accumulators` (accumulator rules), :mod:`.analysis` (the walk,
quantize sites, finishing a region); this module chooses the regions and
rewrites.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Function
from ...ir.module import IRModule
from ...ir.visitor import ExprMutator, Visit
from ..manager import register_pass
from .analysis import Analysis
from .representation import BUDGET, Plan

__all__ = ["fake_quantization_to_integer", "rewrite_plans", "BUDGET", "Plan"]


def _choose(plans: list[Plan], an: Analysis) -> dict[Expr, Plan]:
    """The plans whose replaced float nodes are used only inside rewritten
    regions (else the float node would stay for its other user and be
    computed twice), to a fixed point."""
    chosen = {p.site.node: p for p in plans}
    while chosen:
        covered: set[Expr] = set(chosen)
        for p in chosen.values():
            covered |= p.region
        dropped = [q for q, p in chosen.items()
                   if any(u not in covered for n in p.region for u in an.users.get(n, ()))]
        if not dropped:
            break
        for q in dropped:
            del chosen[q]
    return chosen


class _Rewriter(ExprMutator):
    """Replaces each chosen quantize by its integer expression, whose
    leaves (nodes of the original function) map to their rewritten
    versions through the shared memo, so integer values shared by several
    regions are built once."""

    def __init__(self, plans: dict[Expr, Plan]) -> None:
        super().__init__()
        self.plans = plans

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        plan = self.plans.get(node)
        if plan is None:
            return new
        sub = ExprMutator()
        sub.memo = self.memo
        return sub.visit(plan.expr)


def _rewrite_function(func: Function, mod: IRModule) -> Function:
    an = Analysis(func, mod)
    plans = _choose(an.run(), an)
    if not plans:
        return func
    out = _Rewriter(plans).visit(func)
    assert isinstance(out, Function)
    return out


def rewrite_plans(func: Function, mod: IRModule) -> list[Plan]:
    """The regions the pass would rewrite in ``func`` (for tests and
    diagnostics): each quantize node, its integer expression, the float
    nodes it replaces and its static error bound in steps."""
    an = Analysis(func, mod)
    return list(_choose(an.run(), an).values())


@register_pass("FakeQuantizationToInteger", opt_level=0)
def fake_quantization_to_integer(mod: IRModule) -> IRModule:
    """Rewrite QDQ regions (dequantize -> float operators -> quantize) into
    integer qnn operators (qnn.conv2d, qnn.dense, qnn.requantize, qnn.add,
    qnn.subtract, qnn.mul, qnn.avg_pool2d, qnn.concatenate, integer pooling/clip/layout), within one
    quantization step of the float program, exactly where the integer
    operators are exact.

    Level 0: quantized models compute in integers unless the user asks
    for float (``quantized="float"``, ``--quantized float``)."""
    from ...ir.type_infer import infer_types
    typed = mod if mod.is_typed else infer_types(mod)
    out = typed.copy()
    changed = False
    for gv, func in typed.functions.items():
        new = _rewrite_function(func, typed)
        if new is not func:
            out.add(gv, new)
            changed = True
    return infer_types(out) if changed else typed
