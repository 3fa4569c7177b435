"""ONNX Scan, imported as the same kind of loop as Loop.

Design note
-----------
``Scan`` runs its body once per element of the scan inputs along their
scan axis: the first ``N`` inputs are loop-carried state, the last
``num_scan_inputs`` are scanned, the body's last ``K`` outputs are stacked
into the scan outputs.  It becomes a local recursive function calling
itself in tail position (:func:`~.control.tail_loop`, as Loop)::

    let %loop = fn (%iter, %s1, ..., %acc1, ...) {
      if (%iter < T) {
        <body>(%s..., take(%x1, r1(%iter), axis=a1), ...);
        %loop(%iter + 1, <state out>..., <acc with row r(%iter) set>...)
      } else { (%s..., %acc...) }
    };

``T`` is the length of the scan axis, static (all scan inputs must
agree).  A scan input read in reverse (``scan_input_directions`` 1) takes
element ``T - 1 - i`` at iteration ``i``.  Scan outputs accumulate along
a new first axis in a loop-carried tensor of the final shape, row ``i``
(or ``T - 1 - i`` for ``scan_output_directions`` 1: the output is built
by prepending) set each iteration (:func:`~.control.accumulate`); a scan
output axis other than 0 (``scan_output_axes``) transposes the result
after the loop.  Negative axes count from the end (opset 11).  The loop
state is tensors of fixed shape, so the dataflow backend compiles it over
the static arena (:mod:`aot.emit.lower.static_loop`).

Versions: 11, 16, 19, 21 (opsets 11 to 22) and 23, 24, 25, which only
widen the element types.  Opset 8's batched Scan (a leading batch axis
and a ``sequence_lens`` input) is below the importer's opset 11.
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr, Var
from ....ir.types import TensorType
from ..graph import Node
from ..registry import converter
from .control import accumulate, counter, loop_var, tail_loop


def _ints(node: Node, attr: str, n: int, default: int) -> list[int]:
    values = [int(v) for v in node.attrs.get(attr, [default] * n)]
    if len(values) != n:
        raise node.error(f"{attr} has {len(values)} entries for {n} "
                         f"{'inputs' if 'input' in attr else 'outputs'}")
    return values


def _direction(node: Node, attr: str, d: int) -> bool:
    if d not in (0, 1):
        raise node.error(f"{attr} entries must be 0 (forward) or 1 (reverse), got {d}")
    return d == 1


def _axis(node: Node, attr: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.error(f"{attr} entry {axis} is out of range for rank {rank}")
    return axis % rank


@converter("Scan", (11, 16, 19, 21, 23, 24, 25))
def convert_scan(node: Node) -> list[Expr]:
    import onnx
    ctx = node.ctx
    body = node.attrs.get("body")
    if not isinstance(body, onnx.GraphProto):
        raise node.error("the graph attribute 'body' is required")
    m = int(node.attrs.get("num_scan_inputs", 0))
    if m < 1 or m > len(node.inputs):
        raise node.error(f"num_scan_inputs={m} with {len(node.inputs)} inputs")
    n = len(node.inputs) - m
    k = len(body.output) - n
    if len(body.input) != n + m or k < 0:
        raise node.error(f"the body has {len(body.input)} inputs and {len(body.output)} outputs "
                         f"for {n} state values and {m} scan inputs")
    states = [node.input(i) for i in range(n)]
    xs = [node.input(n + j) for j in range(m)]
    in_dirs = [_direction(node, "scan_input_directions", d)
               for d in _ints(node, "scan_input_directions", m, 0)]
    in_axes = [_axis(node, "scan_input_axes", a, len(node.shape(x)))
               for a, x in zip(_ints(node, "scan_input_axes", m, 0), xs)]
    lengths = {node.shape(x)[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise node.error(f"the scan inputs have different lengths {sorted(lengths)} along "
                         "their scan axes")
    trips = int(lengths.pop())
    out_dirs = [_direction(node, "scan_output_directions", d)
                for d in _ints(node, "scan_output_directions", k, 0)]
    out_axes_raw = _ints(node, "scan_output_axes", k, 0)

    p_iter, zero, next_iter = counter(node)
    last = node.constant(np.asarray(trips - 1, dtype=np.int64))
    backward = node.call("subtract", [last, p_iter])
    p_state: list[Var] = []
    for i, v in enumerate(states):
        t = ctx.type_of(v)
        if not isinstance(t, TensorType):
            raise node.error(f"state value #{i} is {t}; only tensors are supported")
        p_state.append(loop_var(node, f"s{i}", t))
    slices = [node.call("take", [x, backward if rev else p_iter], axis=a)
              for x, rev, a in zip(xs, in_dirs, in_axes)]
    out = node.subgraph("body", list(p_state) + slices)
    state_out, scan_out = out[:n], out[n:]
    for i, (v, p) in enumerate(zip(state_out, p_state)):
        if ctx.type_of(v) != ctx.type_of(p):
            raise node.error(f"state value #{i} enters the body as {ctx.type_of(p)} and "
                             f"leaves it as {ctx.type_of(v)}; its type must not change")
    p_acc: list[Var] = []
    acc_init: list[Expr] = []
    for j, y in enumerate(scan_out):
        yt = ctx.tensor_type(y)
        shape = (trips,) + node.shape(y)
        p_acc.append(loop_var(node, f"acc{j}", TensorType(shape, yt.dtype)))
        acc_init.append(node.constant(np.zeros(shape, dtype=yt.dtype.np)))
    acc_next = [accumulate(node, a, backward if rev else p_iter, y)
                for a, y, rev in zip(p_acc, scan_out, out_dirs)]
    limit = node.constant(np.asarray(trips, dtype=np.int64))
    go = node.call("less", [p_iter, limit])
    final = tail_loop(node, [p_iter] + p_state + p_acc, [zero] + states + acc_init, go,
                      [next_iter] + list(state_out) + acc_next)
    results = final[:n]
    for acc, raw in zip(final[n:], out_axes_raw):
        rank = len(node.shape(acc))
        axis = _axis(node, "scan_output_axes", raw, rank)
        if axis:
            perm = list(range(1, rank))
            perm.insert(axis, 0)
            acc = node.call("transpose", [acc], axes=perm)
        results.append(acc)
    return results

