"""The dataflow pattern language (Relay's ``tvm.relay.dataflow_pattern``).

::

    from aot.ir import const
    from aot.ir.pattern import (DFPatternCallback, is_constant, is_expr, is_op, rewrite,
                                rewrite_bottom_up, wildcard)

    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    pat = is_op("nn.relu")(is_op("nn.bias_add")(conv, wildcard()))
    pat.match(expr)                                  # -> bool
    pat.partition(expr, {"Composite": "conv_bias_relu"})

    class DropZeroAdd(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.x = wildcard()
            self.pattern = self.x + is_expr(const(0.0))
        def callback(self, pre, post, node_map):
            return node_map[self.x][0]

    mod = rewrite(DropZeroAdd(), mod)                # to a fixed point; re-typed
    mod = rewrite_bottom_up(DropZeroAdd(), mod)      # one walk, no grouping (local rules)

Patterns match dataflow (graph normal form): in A-normal form an operand
is a ``let``-bound variable, not the call that computes it.

Modules: :mod:`.patterns` (records and builders), :mod:`.matcher`,
:mod:`.compiled` (tree patterns as closures: the matcher's fast path),
:mod:`.dispatch` (which nodes a pattern can match at its root),
:mod:`.graph` (dataflow graph + post-dominators), :mod:`.grouper`
(matches as groups), :mod:`.rewrite` (``rewrite`` and
``rewrite_bottom_up``), :mod:`.partition`, :mod:`.infer` (types for
untyped nodes), :mod:`.printer`.
"""

from .grouper import PARTITIONED_FROM_PATTERN, Group, PatternGrouper, group_matches
from .matcher import DFPatternMatcher, match
from .partition import partition
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                       DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                       LetPattern, PatternError, ShapePattern, TupleGetItemPattern, TuplePattern,
                       TypePattern, VarPattern, WildcardPattern, dominates, has_attr, has_dtype,
                       has_shape, has_type, is_constant, is_expr, is_if, is_let, is_op,
                       is_tuple, is_tuple_get_item, is_var, wildcard)
from .rewrite import DFPatternCallback, RewriteError, rewrite, rewrite_bottom_up

__all__ = [
    "AltPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DataTypePattern",
    "DFPattern", "DominatorPattern", "ExprPattern", "FunctionPattern", "IfPattern",
    "LetPattern", "ShapePattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "VarPattern", "WildcardPattern", "PatternError",
    "wildcard", "is_op", "is_expr", "is_var", "is_constant", "is_tuple", "is_tuple_get_item",
    "is_if", "is_let", "has_type", "has_dtype", "has_shape", "has_attr", "dominates",
    "match", "partition", "rewrite", "rewrite_bottom_up", "DFPatternCallback", "RewriteError",
    "DFPatternMatcher", "PatternGrouper", "Group", "group_matches", "PARTITIONED_FROM_PATTERN",
]
