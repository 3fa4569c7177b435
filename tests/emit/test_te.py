"""Tensor values and the lowering context (aot/emit/lower/registry.py)."""

import numpy as np

from aot.emit.kernel import ir as K
from aot.emit.lower.registry import LowerContext, broadcast_index, constant_value, from_buffer
from aot.ir.dtype import DType


def test_fresh_names_never_collide_with_kernel_parameter_names():
    ctx = LowerContext()
    names = {ctx.fresh(b) for b in ["p", "c", "out", "p", "acc"]}
    assert len(names) == 5
    reserved = {f"p{i}" for i in range(10)} | {f"c{i}" for i in range(10)} | {"out"}
    assert not names & reserved


def test_buffer_reads_are_row_major():
    buf = K.Buffer("p0", DType.FLOAT32, (2, 3), K.BufferScope.INPUT)
    v = from_buffer(buf)
    e = v[(K.const(1), K.const(2))]
    assert isinstance(e, K.Load) and e.index == K.const(5)


def test_splat_constants_read_as_literals():
    v = constant_value(np.full((2, 2), 1.5, np.float32), DType.FLOAT32)
    assert v[(K.const(0), K.const(1))] == K.Const(1.5, DType.FLOAT32)


def test_broadcast_index_pins_size_one_dimensions():
    i, j = K.index_var("i"), K.index_var("j")
    assert broadcast_index((i, j), (4, 5), (5,)) == (j,)
    assert broadcast_index((i, j), (4, 5), (1, 5)) == (K.const(0), j)


def test_constant_tables_become_kernel_constants():
    ctx = LowerContext()
    t = ctx.constant_table(np.arange(4), DType.INT32)
    assert t.buffer is not None and t.buffer.scope is K.BufferScope.CONST
    assert len(ctx.tables) == 1 and list(ctx.tables[0][1]) == [0, 1, 2, 3]
