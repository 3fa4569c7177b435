"""Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd,
ReduceL1, ReduceL2, ReduceLogSumExp, ReduceSumSquare, ReduceLogSum; and
the running sum CumSum.

Axes come from the ``axes`` attribute before version 18 (13 for
ReduceSum) and from an optional constant input from then on.  Absent or
empty axes reduce everything, unless ``noop_with_empty_axes`` is set (then
the input passes through).  ``keepdims`` defaults to 1.  The composite
reductions follow the specification's definitions: L1 ``sum(|x|)``, L2
``sqrt(sum(x*x))``, SumSquare ``sum(x*x)``, LogSum ``log(sum(x))``;
LogSumExp is the IR's ``logsumexp`` (computed stably).

CumSum is ``cumsum`` along its (constant) axis; ``reverse`` reverses the
axis before and after, ``exclusive`` is the IR's.

Versions: 11, 13, 18 (ReduceSum 11, 13; ReduceMax/ReduceMin also 12 for
int8/uint8 and 20 for bool); CumSum 11, 14.
"""

from __future__ import annotations

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis


def _axes(node: Node, rank: int, input_version: int) -> list[int] | None:
    """The reduced axes, normalised; [] for "all"; None for "none"
    (``noop_with_empty_axes``)."""
    if node.version >= input_version:
        raw = node.const_ints(1, "axes") if node.has(1) else []
        noop = bool(node.attr("noop_with_empty_axes", 0))
    else:
        raw = [int(a) for a in node.attr("axes", [])]
        noop = False
    if not raw:
        return None if noop else []
    axes = sorted(normalize_axis(node, a, rank, "axes") for a in raw)
    if len(set(axes)) != len(axes):
        raise node.error(f"axes={raw} lists an axis twice")
    return axes


def _reduction(op_name: str, pre: str | None = None, post: str | None = None,
               input_version: int = 18, numeric: bool = True):
    """A converter computing ``post(op(pre(x)))``; ``pre`` is "abs" or
    "square", ``post`` a unary operator (``sqrt``, ``log``)."""
    def convert(node: Node) -> list[Expr]:
        x = node.input(0)
        if numeric and node.dtype(x).is_bool:
            raise node.error("bool tensors are not supported")
        axes = _axes(node, node.rank(x), input_version)
        if axes is None:
            return [x]
        y = x
        if pre == "abs":
            y = node.call("abs", [y])
        elif pre == "square":
            y = node.call("multiply", [y, y])
        y = node.call(op_name, [y], axis=tuple(axes), keepdims=bool(node.attr("keepdims", 1)))
        if post is not None:
            y = node.call(post, [y])
        return [y]
    return convert


_V18 = (11, 13, 18)
converter("ReduceMean", _V18)(_reduction("mean"))
converter("ReduceSum", (11, 13))(_reduction("sum", input_version=13))
converter("ReduceMax", (11, 12, 13, 18, 20))(_reduction("max", numeric=False))
converter("ReduceMin", (11, 12, 13, 18, 20))(_reduction("min", numeric=False))
converter("ReduceProd", _V18)(_reduction("prod"))
converter("ReduceL1", _V18)(_reduction("sum", pre="abs"))
converter("ReduceL2", _V18)(_reduction("sum", pre="square", post="sqrt"))
converter("ReduceSumSquare", _V18)(_reduction("sum", pre="square"))
converter("ReduceLogSum", _V18)(_reduction("sum", post="log"))
converter("ReduceLogSumExp", _V18)(_reduction("logsumexp"))


@converter("CumSum", (11, 14))
def convert_cumsum(node: Node) -> list[Expr]:
    x = node.input(0)
    axes = node.const_ints(1, "axis")
    if len(axes) != 1:
        raise node.error(f"axis must be one integer, got {axes}")
    axis = normalize_axis(node, axes[0], node.rank(x))
    reverse = bool(node.attr("reverse", 0))
    if reverse:
        x = node.call("reverse", [x], axis=axis)
    y = node.call("cumsum", [x], axis=axis, exclusive=bool(node.attr("exclusive", 0)))
    return [node.call("reverse", [y], axis=axis) if reverse else y]
