"""Lowering of ``einsum`` (``aot/ir/ops/einsum.py``).

One anchor: a loop nest over the result's axes; inside, an accumulator in
float64 (int64 for integers) set to 0, a loop per summed letter (in the
order :func:`~aot.ir.ops.einsum.parse` gives, the last innermost), and the
product of the operands' elements, each read at its letters' loop
variables (a letter an operand has with extent 1 reads element 0: the
broadcast ellipsis), added in; the sink gets the sum converted to the
result's dtype.  A plain loop nest: it serves every equation, fast or not
(a contraction the optimizer can write as ``nn.batch_matmul`` is better
written so by the importer).
"""

from __future__ import annotations

from typing import Sequence

from ....ir.attrs import Attrs
from ....ir.dtype import DType
from ....ir.ops.einsum import EinsumAttrs, parse
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import Index, LowerContext, Sink, anchor_lowering, loop_nest, out_tensor
from .common import tensor
from .index_math import ZERO


@anchor_lowering("einsum")
def _einsum(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
            sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, EinsumAttrs)
    parts = args[0]
    assert isinstance(parts, tuple)
    xs = [tensor(p) for p in parts]
    eq = parse(attrs.equation, [x.shape for x in xs])
    t = out_tensor(out_type)
    wide = DType.FLOAT64 if t.dtype.is_float else DType.INT64

    def body(out_idx: Index) -> list[K.Stmt]:
        var = dict(zip(eq.output, out_idx))
        loops = [(c, ctx.index_var(f"s{c}")) for c in eq.summed]
        var.update(loops)
        acc = ctx.scalar("acc", wide)
        term: K.Expr | None = None
        for x, letters in zip(xs, eq.inputs):
            idx = tuple(ZERO if d == 1 else var[c] for c, d in zip(letters, x.shape))
            v = K.cast(wide, x.read(idx))
            term = v if term is None else K.mul(term, v)
        assert term is not None
        inner: K.Stmt = K.Assign(acc, K.add(acc, term))
        for c, v in reversed(loops):
            inner = K.for_range(v, eq.extents[c], inner)
        return [K.Decl(acc, K.Const(0, wide)), inner, sinks[0](out_idx, K.cast(t.dtype, acc))]
    return loop_nest(ctx, [eq.extents[c] for c in eq.output], body, "e")

