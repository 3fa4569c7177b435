"""QuantizeRealize: the calibrated program in the importers' QDQ form.

Design note
-----------
Relay's ``QuantizeRealize`` (``src/relay/quantize/realize.cc``) rewrites
each ``simulated_quantize`` into integer arithmetic of its own (shifts,
casts, ``round_for_shift``), so its result is a second, hand-made integer
form.  Here the calibrated quantize points already *are* the operators an
ONNX QDQ graph or a TFLite model imports to (``qnn.quantize`` ->
``qnn.dequantize`` around float operators), so realizing is small and the
integer program comes from the one path every quantized model takes:
FakeQuantizationToInteger (level 0 of DATAFLOW) turns ``dequantize ->
conv2d -> bias_add -> relu -> quantize`` into ``qnn.conv2d`` with the
int32 bias and ``qnn.requantize`` fused, int8 in and out.

What is left to do is the weights: each weight point
``dequantize(clip(quantize(W, s)), s)`` becomes ``dequantize(Wq, s)`` with
``Wq`` the integer constant (``int8`` table; values within
``+-(2**(nbit_weight-1) - 1)``), computed by the reference interpreter from
the very operators it replaces, so the program's value does not change.
FoldConstant is not used for this: it would fold the dequantize too and
give back float weights.
"""

from __future__ import annotations

from ...interpreter import Interpreter
from ...ir.expr import Call, Constant, Function, Op
from ...ir.module import IRModule
from ...ir.type_infer import infer_types
from ...ir.visitor import ExprMutator, Visit
from ..manager import register_pass

__all__ = ["quantize_realize"]


def _is(e: object, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _constant_chain(e: object) -> bool:
    """``quantize(C, C, C)`` or ``clip`` of one."""
    if _is(e, "clip"):
        e = e.args[0]                                              # type: ignore[attr-defined]
    return _is(e, "qnn.quantize") and all(isinstance(a, Constant)
                                          for a in e.args)          # type: ignore[attr-defined]


class _Realizer(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.evaluator = Interpreter(IRModule())

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if _is(new, "qnn.dequantize") and _constant_chain(new.args[0]):
            table = Constant(self.evaluator.evaluate(new.args[0]))
            return Call(new.op, (table,) + new.args[1:], new.attrs, span=new.span)
        return new


def quantize_realize(mod: IRModule) -> IRModule:
    """A calibrated module whose weights are integer tables under a
    ``qnn.dequantize`` (the QDQ form the importers produce)."""
    fn = mod["main"]
    body = _Realizer().visit(fn.body)
    out = mod.copy()
    out.add(mod.global_var("main"), Function(fn.params, body, None, fn.type_params, fn.attrs,
                                             span=fn.span))
    return infer_types(out)


register_pass("QuantizeRealize", opt_level=0)(quantize_realize)
