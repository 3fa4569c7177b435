"""Recurrent layers: RNN, GRU and LSTM, as a loop over time.

Design note
-----------
Each direction is one loop built like ONNX's Loop (:func:`.control.tail_loop`:
a let-bound function calling itself in tail position, which the
whole-language backend compiles to a C loop), not an unrolled graph: the
code size does not grow with the sequence length, and the same converter
serves any length.  The loop state is the step ``t``, the hidden state
``h`` (and the LSTM cell ``c``) and the output accumulator ``Y`` of the
final shape ``[seq, batch, hidden]``, whose row ``t`` is set each step
(:func:`.control.accumulate`).

Each step projects its input row (``x[t] @ W^T + Wb``, ``[batch, input]``)
and adds ``h @ R^T + Rb``.  The projection does not depend on the state
and could be computed for the whole sequence before the loop in one
``nn.dense``, for the same number of multiply-adds, but that needs a
``[seq, batch, gates * hidden]`` buffer: 19 KB of RAM for a 49-step GRU of
32 units, against the loop's ~1 KB otherwise.  Gate order is ONNX's: GRU ``z, r,
h``; LSTM ``i, o, f, c`` (peepholes ``i, o, f``).  GRU's
``linear_before_reset=0`` applies ``R_h`` to ``r * h`` (a second product),
``1`` multiplies ``r`` into ``h @ R_h^T + Rb_h``.

The reverse direction runs ``t = seq - 1 - step``.  ``sequence_lens``:
at ``t >= len[b]`` batch row ``b`` keeps its state and outputs zeros, so
``Y_h`` (and ``Y_c``) is the state after the row's last valid step in
either direction.  ``bidirectional`` runs both loops and stacks their
outputs.  ``layout=1`` (batch first) transposes on the way in and out.

Activations: Sigmoid, Tanh and Relu (the defaults and the common
choices); ``clip`` bounds the gate pre-activations (as onnxruntime does, not
the cell state LSTM passes to its third activation).  Other activation
functions and LSTM's ``input_forget`` are refused with a diagnostic.

Versions: 7, 14 (``layout``), 22 (wider types) for each operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ....ir.expr import Expr
from ....ir.types import TensorType
from ..graph import Node
from ..registry import converter
from .control import accumulate, counter, loop_var, tail_loop
from .util import require_float

_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "nn.relu"}


@dataclass(frozen=True)
class _Kind:
    name: str
    gates: int
    defaults: tuple[str, ...]
    states: int  # 1 (h) or 2 (h, c)


RNN = _Kind("RNN", 1, ("Tanh",), 1)
GRU = _Kind("GRU", 3, ("Sigmoid", "Tanh"), 1)
LSTM = _Kind("LSTM", 4, ("Sigmoid", "Tanh", "Tanh"), 2)

Act = Callable[[Expr], Expr]


class _Layer:
    """What every step of one node needs: sizes, activations, inputs."""

    def __init__(self, node: Node, kind: _Kind) -> None:
        self.node, self.kind = node, kind
        x = node.input(0)
        require_float(node, x)
        if node.rank(x) != 3:
            raise node.error(f"X must be 3-d, got shape {list(node.shape(x))}")
        self.layout = int(node.attr("layout", 0))
        if self.layout not in (0, 1):
            raise node.unsupported("layout")
        if self.layout == 1:
            x = node.call("transpose", [x], axes=(1, 0, 2))
        self.x = x
        self.seq, self.batch, self.inputs = node.shape(x)
        direction = node.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise node.unsupported("direction")
        self.directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        self.hidden = int(node.attr("hidden_size", 0)) or \
            node.shape(node.input(2))[-1]
        w = node.input(1)
        g, h, d = kind.gates, self.hidden, len(self.directions)
        if node.shape(w) != (d, g * h, self.inputs):
            raise node.error(f"W has shape {list(node.shape(w))}, expected "
                             f"{[d, g * h, self.inputs]}")
        if node.shape(node.input(2)) != (d, g * h, h):
            raise node.error(f"R has shape {list(node.shape(node.input(2)))}, expected "
                             f"{[d, g * h, h]}")
        self.clip = node.attr("clip")
        names = node.attr("activations") or list(kind.defaults) * d
        if len(names) != len(kind.defaults) * d:
            raise node.unsupported("activations", names,
                                   f"needs {len(kind.defaults) * d} functions")
        for a in names:
            if a not in _ACTIVATIONS:
                raise node.unsupported("activations", names,
                                       f"is not supported ({a}; supported: "
                                       f"{', '.join(_ACTIVATIONS)})")
        self.acts = names
        self.dt = node.dtype(x)

    def per_dir(self, i: int, d: int, shape: tuple[int, ...], what: str) -> Expr | None:
        """Optional input ``i`` (``[directions, ...]``) for direction ``d``."""
        node = self.node
        e = node.optional(i)
        if e is None:
            return None
        want = (len(self.directions),) + shape
        if node.shape(e) != want:
            raise node.error(f"{what} has shape {list(node.shape(e))}, expected {list(want)}")
        return take(node, e, d, 0)

    def state0(self, i: int, d: int, what: str) -> Expr:
        node = self.node
        e = node.optional(i)
        if e is None:
            return node.call("zeros", [], shape=(self.batch, self.hidden), dtype=self.dt)
        if self.layout == 1:
            e = node.call("transpose", [e], axes=(1, 0, 2))
        want = (len(self.directions), self.batch, self.hidden)
        if node.shape(e) != want:
            raise node.error(f"{what} has shape {list(node.shape(e))}, expected {list(want)}")
        return take(node, e, d, 0)

    def act(self, d: int, k: int, clipped: bool = True) -> Act:
        name = _ACTIVATIONS[self.acts[d * len(self.kind.defaults) + k]]
        clip = self.clip if clipped else None

        def apply(e: Expr) -> Expr:
            if clip is not None:
                e = self.node.call("clip", [e], a_min=-float(clip), a_max=float(clip))
            return self.node.call(name, [e])
        return apply


def take(node: Node, e: Expr, index: int | Expr, axis: int) -> Expr:
    if isinstance(index, int):
        index = node.constant(np.asarray(index, dtype=np.int64))
    return node.call("take", [e, index], axis=axis)


def gates(node: Node, e: Expr, n: int) -> list[Expr]:
    if n == 1:
        return [e]
    parts = node.call("split", [e], indices_or_sections=n, axis=1)
    return [node.ctx.get_item(parts, i) for i in range(n)]


def dense(node: Node, a: Expr, w: Expr, b: Expr | None) -> Expr:
    y = node.call("nn.dense", [a, w])
    return y if b is None else node.call("add", [y, b])


def _direction(layer: _Layer, d: int) -> tuple[Expr, list[Expr]]:
    """Y ``[seq, batch, hidden]`` and the final states of direction ``d``."""
    node, kind = layer.node, layer.kind
    g, h, seq, batch = kind.gates, layer.hidden, layer.seq, layer.batch
    w = take(node, node.input(1), d, 0)
    r = take(node, node.input(2), d, 0)
    bias = layer.per_dir(3, d, (2 * g * h,), "B")
    wb = rb = None
    if bias is not None:
        halves = node.call("split", [bias], indices_or_sections=2, axis=0)
        wb, rb = node.ctx.get_item(halves, 0), node.ctx.get_item(halves, 1)
    step, zero, next_step = counter(node)
    st = TensorType((batch, h), layer.dt)
    states = [loop_var(node, n, st) for n in ("h", "c")[:kind.states]]
    y_acc = loop_var(node, "y", TensorType((seq, batch, h), layer.dt))
    if layer.directions[d] == "reverse":
        last = node.constant(np.asarray(seq - 1, dtype=np.int64))
        t = node.call("subtract", [last, step])
    else:
        t = step
    # the input projection of step t: as many MACs as projecting the whole
    # sequence before the loop, without a [seq, batch, gates * hidden] buffer
    x_t = dense(node, take(node, layer.x, t, 0), w, wb)
    if kind is LSTM:
        peep = layer.per_dir(7, d, (3 * h,), "P")
        new = _lstm(layer, d, x_t, states[0], states[1], r, rb, peep)
    elif kind is GRU:
        new = [_gru(layer, d, x_t, states[0], r, rb)]
    else:
        new = [layer.act(d, 0)(node.call("add", [x_t, dense(node, states[0], r, rb)]))]
    out = new[0]
    lens = node.optional(4)
    if lens is not None:
        if node.shape(lens) != (batch,):
            raise node.error(f"sequence_lens has shape {list(node.shape(lens))}, expected "
                             f"[{batch}]")
        t_cast = node.call("cast", [t], dtype=node.dtype(lens))
        valid = node.call("reshape", [node.call("less", [t_cast, lens])], newshape=(batch, 1))
        new = [node.call("where", [valid, n, s]) for n, s in zip(new, states)]
        zeros = node.constant(np.zeros((), layer.dt.np))
        out = node.call("where", [valid, out, zeros])
    go = node.call("less", [step, node.constant(np.asarray(seq, dtype=np.int64))])
    init = [layer.state0(5, d, "initial_h")]
    if kind is LSTM:
        init.append(layer.state0(6, d, "initial_c"))
    y0 = node.call("zeros", [], shape=(seq, batch, h), dtype=layer.dt)   # memset, not a table
    final = tail_loop(node, [step] + states + [y_acc], [zero] + init + [y0], go,
                      [next_step] + new + [accumulate(node, y_acc, t, out)])
    return final[-1], final[:-1]


def _gru(layer: _Layer, d: int, x_t: Expr, h: Expr, r: Expr, rb: Expr | None) -> Expr:
    node, hidden = layer.node, layer.hidden
    f, g = layer.act(d, 0), layer.act(d, 1)
    xz, xr, xh = gates(node, x_t, 3)
    r_parts = node.call("split", [r], indices_or_sections=(2 * hidden,), axis=0)
    r_zr, r_h = node.ctx.get_item(r_parts, 0), node.ctx.get_item(r_parts, 1)
    rb_zr = rb_h = None
    if rb is not None:
        rb_parts = node.call("split", [rb], indices_or_sections=(2 * hidden,), axis=0)
        rb_zr, rb_h = node.ctx.get_item(rb_parts, 0), node.ctx.get_item(rb_parts, 1)
    hz, hr = gates(node, dense(node, h, r_zr, rb_zr), 2)
    z = f(node.call("add", [xz, hz]))
    reset = f(node.call("add", [xr, hr]))
    if int(node.attr("linear_before_reset", 0)):
        hh = node.call("multiply", [reset, dense(node, h, r_h, rb_h)])
    else:
        hh = dense(node, node.call("multiply", [reset, h]), r_h, rb_h)
    cand = g(node.call("add", [xh, hh]))
    one = node.constant(np.ones((), layer.dt.np))
    keep = node.call("multiply", [z, h])
    return node.call("add", [node.call("multiply", [node.call("subtract", [one, z]), cand]),
                             keep])


def _lstm(layer: _Layer, d: int, x_t: Expr, h: Expr, c: Expr, r: Expr, rb: Expr | None,
          peep: Expr | None) -> list[Expr]:
    node = layer.node
    f, g, hact = layer.act(d, 0), layer.act(d, 1), layer.act(d, 2, clipped=False)
    pre = node.call("add", [x_t, dense(node, h, r, rb)])
    i, o, fg, cg = gates(node, pre, 4)
    p_i = p_o = p_f = None
    if peep is not None:
        parts = node.call("split", [peep], indices_or_sections=3, axis=0)
        p_i, p_o, p_f = (node.ctx.get_item(parts, k) for k in range(3))

    def peeped(e: Expr, p: Expr | None, cell: Expr) -> Expr:
        return e if p is None else node.call("add", [e, node.call("multiply", [p, cell])])
    i = f(peeped(i, p_i, c))
    fg = f(peeped(fg, p_f, c))
    c_new = node.call("add", [node.call("multiply", [fg, c]), node.call("multiply", [i, g(cg)])])
    o = f(peeped(o, p_o, c_new))
    return [node.call("multiply", [o, hact(c_new)]), c_new]


def _convert(node: Node, kind: _Kind) -> list[Expr]:
    if kind is LSTM and int(node.attr("input_forget", 0)):
        raise node.unsupported("input_forget")
    layer = _Layer(node, kind)
    ys: list[Expr] = []
    finals: list[list[Expr]] = []
    for d in range(len(layer.directions)):
        y, states = _direction(layer, d)
        ys.append(y)
        finals.append(states)
    y = node.call("stack", [node.ctx.make_tuple(ys)], axis=1)  # [seq, dirs, batch, hidden]
    outs = [node.call("stack", [node.ctx.make_tuple([s[k] for s in finals])], axis=0)
            for k in range(kind.states)]  # [dirs, batch, hidden]
    if layer.layout == 1:
        y = node.call("transpose", [y], axes=(2, 0, 1, 3))
        outs = [node.call("transpose", [s], axes=(1, 0, 2)) for s in outs]
    return [y] + outs


@converter("RNN", (7, 14, 22))
def convert_rnn(node: Node) -> list[Expr]:
    return _convert(node, RNN)


@converter("GRU", (7, 14, 22))
def convert_gru(node: Node) -> list[Expr]:
    return _convert(node, GRU)


@converter("LSTM", (7, 14, 22))
def convert_lstm(node: Node) -> list[Expr]:
    return _convert(node, LSTM)

