"""FastMath: replace ``exp``, ``tanh``, ``erf`` and ``nn.softmax`` by their
fast approximations ``fast_exp``, ``fast_tanh``, ``fast_erf`` and
``nn.fast_softmax``.

Design note
-----------
Relay's ``FastMath`` (``src/relay/transforms/fast_math.cc``): one
post-order rewrite of every call of the four operators into its fast
counterpart, with the same argument and attributes (``nn.softmax``'s
axis).  The approximations and their error bounds are documented in
:mod:`aot.ir.ops.fast_math` (float32: a few 1e-7 relative, ``fast_exp``
up to 4.1e-6 near the ends of its range; other float types compute the
exact functions).  As in Relay the pass is at opt level 4, so no default
pipeline runs it: it is opt-in, ``aot compile --enable-pass FastMath`` or
``aot.PassContext(required=["FastMath"])``.  It runs in the dataflow
pipeline just before FuseOps, after FoldConstant, so a constant ``exp``
is still folded exactly.
"""

from __future__ import annotations

from ..ir.expr import Call, Expr, op
from ..ir.module import IRModule
from ..ir.pattern import DFPattern, DFPatternCallback, is_op, rewrite_bottom_up, wildcard
from .manager import register_pass

__all__ = ["fast_math", "FAST"]

#: the operator each rewrite replaces -> its fast counterpart
FAST = {"exp": "fast_exp", "tanh": "fast_tanh", "erf": "fast_erf",
        "nn.softmax": "nn.fast_softmax"}


class _Replace(DFPatternCallback):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.fast = FAST[name]
        self.pattern: DFPattern = is_op(name)(wildcard())

    def callback(self, pre: Expr, post: Expr, node_map: dict) -> Expr:
        assert isinstance(post, Call)
        return Call(op(self.fast), post.args, post.attrs, span=post.span)


def fast_math(mod: IRModule) -> IRModule:
    """A new, typed module in which every ``exp``, ``tanh``, ``erf`` and
    ``nn.softmax`` call is its fast approximation (the module itself when
    there is none)."""
    out = rewrite_bottom_up([_Replace(name) for name in FAST], mod)
    assert isinstance(out, IRModule)
    return out


register_pass("FastMath", opt_level=4,
              doc="FastMath: exp, tanh, erf and nn.softmax -> fast_exp, fast_tanh, fast_erf, "
                  "nn.fast_softmax (TOPI's float32 approximations, relative error <= 4.1e-6; "
                  "opt-in)")(fast_math)
