"""Attention (23, 24): scaled dot-product attention composed of catalogue
operators, as ONNX's reference computes it.

3-d ``Q``/``K``/``V`` ``(B, S, heads * D)`` are split into heads
(``q_num_heads``, ``kv_num_heads``) and moved to ``(B, heads, S, D)``; the
result moves back.  ``past_key``/``past_value`` are concatenated before
``K``/``V`` on the sequence axis (the ``present_*`` outputs).  The scores
``(Q * sqrt(scale)) (K * sqrt(scale))^T`` (``scale`` 1/sqrt(D) by default;
the reference scales both operands) are two ``nn.batch_matmul`` over
``B * heads`` (K and V repeated across query heads for grouped-query
attention), soft-capped (``softcap * tanh(s / softcap)``) when
``softcap`` > 0, biased, soft-maxed (in ``softmax_precision`` when given)
and multiplied by ``V``.

The bias is the sum of: the mask (a float mask is added; a boolean one
gives 0 where true and -inf where false; padded with -inf / false to the
total sequence length when shorter), the causal mask of ``is_causal``
(-inf where the key position ``j`` exceeds ``past + i``, a constant), and
version 24's ``nonpad_kv_seqlen`` (-inf at key positions ``>=`` the
batch's length).  ``qk_matmul_output`` is, as in the reference, the
scores after the soft cap (modes 0 and 1), with the bias (2) or after the
softmax (3).
"""

from __future__ import annotations

import math

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..dtypes import ONNX_TO_DTYPE
from ..graph import Node
from ..registry import converter
from .util import require_float, reshape_to


def _heads(node: Node, x: Expr, heads: int, what: str) -> Expr:
    """``(B, S, heads * D)`` as ``(B, heads, S, D)``."""
    b, s, hidden = node.shape(x)
    if heads < 1 or hidden % heads:
        raise node.error(f"{what} hidden size {hidden} is not divisible by {heads} heads")
    y = reshape_to(node, x, (b, s, heads, hidden // heads))
    return node.call("transpose", [y], axes=(0, 2, 1, 3))


def _bmm(node: Node, a: Expr, b: Expr, transpose_b: bool) -> Expr:
    """``a @ b`` (``b^T`` when ``transpose_b``) over the two leading axes."""
    (n, h, m, _), (_, _, r, c) = node.shape(a), node.shape(b)
    a3 = reshape_to(node, a, (n * h, m, node.shape(a)[3]))
    b3 = reshape_to(node, b, (n * h, r, c))
    y = node.call("nn.batch_matmul", [a3, b3], transpose_b=transpose_b)
    return reshape_to(node, y, (n, h, m, r if transpose_b else c))


def _scalar(node: Node, value: float, dt: DType) -> Expr:
    return node.constant(np.asarray(value, dt.np))


def _mask_bias(node: Node, mask: Expr, total: int, dt: DType) -> Expr:
    shape = node.shape(mask)
    if node.dtype(mask).is_bool:
        mask = node.call("where", [mask, _scalar(node, 0.0, dt), _scalar(node, -np.inf, dt)])
    elif node.dtype(mask) is not dt:
        raise node.error(f"attn_mask of dtype {node.dtype(mask)} for {dt} inputs")
    if shape[-1] > total:
        raise node.error(f"attn_mask covers {shape[-1]} key positions, more than the {total} "
                         "there are")
    if shape[-1] < total:
        widths = tuple((0, 0) for _ in shape[:-1]) + ((0, total - shape[-1]),)
        mask = node.call("nn.pad", [mask, _scalar(node, -np.inf, dt)], pad_width=widths)
    return mask


@converter("Attention", (23, 24))
def convert_attention(node: Node) -> list[Expr]:
    q, k, v = node.input(0), node.input(1), node.input(2)
    dt = require_float(node, q)
    rank = node.rank(q)
    if rank not in (3, 4) or node.rank(k) != rank or node.rank(v) != rank:
        raise node.error("Q, K and V must all be 3-d or all 4-d")
    if rank == 3:
        hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if hq is None or hkv is None:
            raise node.error("3-d inputs need q_num_heads and kv_num_heads")
        q, k, v = (_heads(node, q, int(hq), "Q"), _heads(node, k, int(hkv), "K"),
                   _heads(node, v, int(hkv), "V"))
    past_k, past_v = node.optional(4), node.optional(5)
    if (past_k is None) != (past_v is None):
        raise node.error("past_key and past_value must be given together")
    past = 0
    if past_k is not None and past_v is not None:
        past = node.shape(past_k)[2]
        k, v = _concat(node, past_k, k), _concat(node, past_v, v)
    present_k, present_v = k, v
    b, hq_, sq, d = node.shape(q)
    hk, total = node.shape(k)[1], node.shape(k)[2]
    if hq_ != hk:
        if hq_ % hk:
            raise node.error(f"{hq_} query heads are not a multiple of {hk} key/value heads")
        k = node.call("repeat", [k], repeats=hq_ // hk, axis=1)
        v = node.call("repeat", [v], repeats=hq_ // hk, axis=1)

    scale = node.attr("scale")
    root = math.sqrt(float(scale) if scale is not None else 1.0 / math.sqrt(d))
    r = _scalar(node, root, dt)
    qk = _bmm(node, node.call("multiply", [q, r]), node.call("multiply", [k, r]), True)
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:
        cap = _scalar(node, softcap, dt)
        qk = node.call("multiply", [node.call("tanh", [node.call("divide", [qk, cap])]), cap])

    bias = _bias(node, b, sq, total, past, dt)
    biased = qk if bias is None else node.call("add", [qk, bias])

    probs = _softmax(node, biased, dt)
    y = _bmm(node, probs, v, False)
    if rank == 3:
        y = node.call("transpose", [y], axes=(0, 2, 1, 3))
        yb, ys, yh, yd = node.shape(y)
        y = reshape_to(node, y, (yb, ys, yh * yd))

    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise node.unsupported("qk_matmul_output_mode", mode, "must be 0, 1, 2 or 3")
    qk_out = {0: qk, 1: qk, 2: biased, 3: probs}[mode]
    outs = [y, present_k, present_v, qk_out]
    return outs[:len(node.proto.output)]


def _bias(node: Node, b: int, sq: int, total: int, past: int, dt: DType) -> Expr | None:
    """The sum of the mask, the causal mask and the padding mask (see the
    module docstring), or None without any."""
    bias = None
    mask = node.optional(3)
    if mask is not None:
        bias = _mask_bias(node, mask, total, dt)
    if node.attr("is_causal", 0):
        causal = np.where(np.arange(total)[None, :] > np.arange(sq)[:, None] + past,
                          -np.inf, 0.0).astype(dt.np)
        c = node.constant(causal)
        bias = c if bias is None else node.call("add", [bias, c])
    seqlen = node.optional(6)
    if seqlen is not None:
        lens = reshape_to(node, seqlen, (b, 1))
        pos = node.constant(np.arange(total, dtype=node.dtype(seqlen).np)[None, :])
        pad = node.call("where", [node.call("less", [pos, lens]), _scalar(node, 0.0, dt),
                                  _scalar(node, -np.inf, dt)])
        pad = reshape_to(node, pad, (b, 1, 1, total))
        bias = pad if bias is None else node.call("add", [bias, pad])
    return bias


def _softmax(node: Node, biased: Expr, dt: DType) -> Expr:
    precision = node.attr("softmax_precision")
    work = biased
    if precision is not None:
        pdt = ONNX_TO_DTYPE.get(int(precision))
        if pdt is None or not pdt.is_float:
            raise node.unsupported("softmax_precision")
        if pdt is not dt:
            work = node.call("cast", [biased], dtype=pdt)
    probs = node.call("nn.softmax", [work], axis=-1)
    if work is not biased:
        probs = node.call("cast", [probs], dtype=dt)
    return probs


def _concat(node: Node, a: Expr, b: Expr) -> Expr:
    return node.call("concatenate", [node.ctx.make_tuple([a, b])], axis=2)
