"""Lowering of the ``nn`` family (``aot/ir/ops/nn.py``): activations,
bias_add, batch_flatten, pad, batch_norm and dropout as index lowerings;
dense, matmul, batch_matmul, softmax, log_softmax and layer_norm as
anchors.  Each computes exactly the family's NumPy reference.

Design note
-----------
**Products** (dense, matmul, batch_matmul) share one loop skeleton,
:func:`_product_nest`: the output is seen as ``rows x units`` (``rows``
every output axis but the last) and every output element is a sum over
the reduced axis ``k``::

    for row...:                         # constant bounds
      for j < units:
        acc = 0
        for k < reduce: acc = acc + lhs[row, k] * rhs[row, j, k]
        sink(row, j, acc)

``acc`` is one scalar temporary, ``k`` is innermost and unrolled
``UNROLL`` times (the remainder as straight-line statements), which keeps
the summation order and cuts loop control per MAC (Cortex-M4, int8 dense
into int32: 5.1 -> 4.4 instructions per MAC at ``-O2``).  For ``nn.dense``
(weight ``[units, K]``) and ``batch_matmul`` with ``transpose_b`` (the builder's default)
both operands are contiguous in ``k``; with one operand transposed the
other one still is.  When neither is (``transpose_a`` without
``transpose_b``) the row's ``lhs`` column is first copied into a scratch
vector of ``reduce`` elements, reused for every ``j``, so the inner loop
reads it contiguously (and the fused prologue of ``lhs`` runs once per
element instead of once per ``j``).

Float32 ``nn.dense`` has nests of its own: under the ``scalar`` tuning
(:mod:`.tuning`, the default) tiles of 4 units in scalar accumulators
(:func:`_dense_scalar_tiles`: each ``x[k]`` loaded once per 4 MACs; with a
constant float32 weight, 8-unit tiles over a weight packed at compile time,
:mod:`.nn_dense_packed`), under
``simd`` with a constant weight a weight packed at compile time and a
vectorisable accumulator array (:func:`_dense_simd`).  Both keep each
output's summation order.  A product of several rows whose weight is
computed as it is read (an int4 weight-only ``DequantizeLinear``, a cast)
converts each unit tile's weights once into a local array that every row
then reads (:mod:`.nn_product_wstage`).

The accumulator follows the reference (``nn_util.accumulator``): integer
results accumulate in the output dtype with wrapping arithmetic -- the
same value as the reference's exact int64 sum wrapped once, because
wrapping ``+`` and ``*`` are ring operations modulo 2^bits -- and
floating results accumulate in their own precision, float32 for float32
(:func:`_accumulator_dtype` says why: a microcontroller has no
double-precision FPU).  The reference sums in float64, so floats agree
within the accumulated float32 rounding.

**Softmax, log_softmax, layer_norm** are row reductions along one axis:
for every position of the other axes, one pass computes the statistics
(max and sum of exponentials; mean; variance) into scalar temporaries and
a last pass hands each element to the sink -- no scratch needed.  As the
reference, they compute in float64 and round once.

**Pad** maps each output index back to the input: constant padding is a
select between the input element and the pad value; edge padding clamps
the index; reflect padding mirrors it once (the relation guarantees the
widths are smaller than the dimension).  The index of the input read is
always in bounds (clamped even under constant padding), so the read is
safe however the select is evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.nn import (BatchMatmulAttrs, BatchNormAttrs, BiasAddAttrs, DenseAttrs,
                           LayerNormAttrs, LeakyReluAttrs, MatmulAttrs, PadAttrs, PadMode,
                           PReluAttrs, SoftmaxAttrs)
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (INDEX, Index, LowerContext, Sink, TensorValue, anchor_lowering,
                        index_lowering, loop_nest, out_tensor, scalar_value)
from .common import elementwise, mac, tensor
from .tuning import current as current_tuning

F64 = DType.FLOAT64


def _zero(dtype: DType) -> K.Const:
    return K.Const(0, dtype)


def _idx(i: int) -> K.Const:
    return K.Const(i, INDEX)


def _channel(idx: Index, axis: int, ndim: int) -> Index:
    """The index into a per-channel vector along ``axis``."""
    return (idx[axis % ndim],)


# ------------------------------------------------------------ activations

@index_lowering("nn.relu")
def _relu(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type) -> TensorValue:
    x = tensor(args[0])
    t = x.dtype
    if t is DType.BOOL or t.is_unsigned:
        return x                        # max(x, 0) is x
    if t.is_float:                      # NaN and NumPy's signed-zero rule: the max helper
        return elementwise(x, t, lambda v: K.maximum(v, _zero(t)))
    return elementwise(x, t, lambda v: K.select(K.lt(v, _zero(t)), _zero(t), v))


def _leaky_alpha(alpha: float, dtype: DType) -> K.Const:
    """alpha in the data's dtype, converted exactly as the reference does
    (integers: truncated, then NumPy's conversion)."""
    if dtype.is_float:
        return K.Const(alpha, dtype)
    with np.errstate(all="ignore"):
        value = np.asarray(np.trunc(alpha)).astype(dtype.np)
    return K.Const(int(value), dtype)


def _leaky(x: K.Expr, alpha: K.Expr) -> K.Expr:
    """``x > 0 ? x : x * alpha``."""
    return K.select(K.gt(x, _zero(x.dtype)), x, K.mul(x, alpha))


@index_lowering("nn.leaky_relu")
def _leaky_relu(ctx: LowerContext, args: Sequence, attrs: LeakyReluAttrs,
                out_type: Type) -> TensorValue:
    x = tensor(args[0])
    if x.dtype is DType.BOOL:
        return x                        # x, or False * alpha == False == x
    alpha = _leaky_alpha(attrs.alpha, x.dtype)
    return elementwise(x, x.dtype, lambda v: _leaky(v, alpha))


@index_lowering("nn.prelu")
def _prelu(ctx: LowerContext, args: Sequence, attrs: PReluAttrs, out_type: Type) -> TensorValue:
    x, alpha = tensor(args[0]), tensor(args[1])
    if x.dtype is DType.BOOL:
        return x

    def read(idx: Index) -> K.Expr:
        return _leaky(x.read(idx), alpha.read(_channel(idx, attrs.axis, x.ndim)))
    return TensorValue(x.shape, x.dtype, read)


@index_lowering("nn.bias_add")
def _bias_add(ctx: LowerContext, args: Sequence, attrs: BiasAddAttrs,
              out_type: Type) -> TensorValue:
    x, b = tensor(args[0]), tensor(args[1])
    add = K.logical_or if x.dtype is DType.BOOL else K.add

    def read(idx: Index) -> K.Expr:
        return add(x.read(idx), b.read(_channel(idx, attrs.axis, x.ndim)))
    return TensorValue(x.shape, x.dtype, read)


# ------------------------------------------------------------ reshaping

@index_lowering("nn.batch_flatten")
def _batch_flatten(ctx: LowerContext, args: Sequence, attrs: object,
                   out_type: Type) -> TensorValue:
    x = tensor(args[0])
    shape = tuple(int(d) for d in out_tensor(out_type).shape)
    if x.buffer is not None:            # same row-major offsets: read the buffer flat
        buf = x.buffer
        return TensorValue(shape, x.dtype,
                           lambda idx: K.load(buf, K.flat_index(idx, shape)))
    inner = x.shape[1:]
    strides = K.row_major_strides(inner)

    def read(idx: Index) -> K.Expr:
        f = idx[1]
        src = [idx[0]]
        for d, stride in zip(inner, strides):
            i = f if stride == 1 else K.div(f, _idx(stride))
            # the first axis needs no modulo: f < prod(inner)
            src.append(i if len(src) == 1 else K.mod(i, _idx(d)))
        return x.read(tuple(src))
    return TensorValue(shape, x.dtype, read)


# ------------------------------------------------------------------ pad

def _pad_source(i: K.Expr, before: int, after: int, n: int, mode: PadMode) \
        -> tuple[K.Expr, K.Expr | None]:
    """The input index read for output index ``i`` along one axis of
    ``n`` elements padded by ``(before, after)``, and (constant mode) the
    condition under which ``i`` lies inside the input, None when always."""
    j = K.sub(i, _idx(before), no_wrap=True) if before else i
    if not before and not after:
        return j, None
    below, above = K.lt(j, _idx(0)), K.gt(j, _idx(n - 1))
    if mode is PadMode.CONSTANT:
        conds = ([K.ge(j, _idx(0))] if before else []) + ([K.lt(j, _idx(n))] if after else [])
        inside = conds[0] if len(conds) == 1 else K.logical_and(conds[0], conds[1])
        return K.select(inside, j, _idx(0)), inside     # a read in bounds either way
    if mode is PadMode.EDGE:
        low, high = _idx(0), _idx(n - 1)
    else:                               # reflect: mirror once about 0 and n - 1
        low, high = K.sub(_idx(0), j, no_wrap=True), K.sub(_idx(2 * (n - 1)), j, no_wrap=True)
    if not after:
        return K.select(below, low, j), None
    if not before:
        return K.select(above, high, j), None
    return K.select(below, low, K.select(above, high, j)), None


@index_lowering("nn.pad")
def _pad(ctx: LowerContext, args: Sequence, attrs: PadAttrs, out_type: Type) -> TensorValue:
    x, value = tensor(args[0]), tensor(args[1])
    shape = tuple(int(d) for d in out_tensor(out_type).shape)
    # the reference converts the pad value as Cast does (float -> integer
    # truncates and saturates, NaN -> 0; otherwise NumPy's astype)
    fill = K.cast(x.dtype, value.read(()))
    if x.size == 0:                     # only constant padding can grow an empty tensor
        return scalar_value(fill, shape)
    widths = [tuple(p) for p in attrs.pad_width]

    def read(idx: Index) -> K.Expr:
        src: list[K.Expr] = []
        inside: list[K.Expr] = []
        for i, n, (before, after) in zip(idx, x.shape, widths):
            j, cond = _pad_source(i, before, after, n, attrs.pad_mode)
            src.append(j)
            if cond is not None:
                inside.append(cond)
        element = x.read(tuple(src))
        if not inside:
            return element
        cond = inside[0]
        for c in inside[1:]:
            cond = K.logical_and(cond, c)
        return K.select(cond, element, fill)
    return TensorValue(shape, x.dtype, read)


# ------------------------------------------------------ batch_norm, dropout

def _scale_center(y: K.Expr, gamma: TensorValue, beta: TensorValue, channel: Index,
                  attrs: BatchNormAttrs | LayerNormAttrs) -> K.Expr:
    """The float64 ``y * gamma + beta`` (each only when enabled)."""
    if attrs.scale:
        y = K.mul(y, K.cast(F64, gamma.read(channel)))
    if attrs.center:
        y = K.add(y, K.cast(F64, beta.read(channel)))
    return y


@index_lowering("nn.batch_norm")
def _batch_norm(ctx: LowerContext, args: Sequence, attrs: BatchNormAttrs,
                out_type: Type) -> tuple[TensorValue, ...]:
    x, gamma, beta, mean, var = (tensor(a) for a in args)

    def read(idx: Index) -> K.Expr:
        c = _channel(idx, attrs.axis, x.ndim)
        centered = K.sub(K.cast(F64, x.read(idx)), K.cast(F64, mean.read(c)))
        std = K.math_call("sqrt", K.add(K.cast(F64, var.read(c)), K.Const(attrs.epsilon, F64)))
        y = _scale_center(K.div(centered, std), gamma, beta, c, attrs)
        return K.cast(x.dtype, y)
    return (TensorValue(x.shape, x.dtype, read), mean, var)


@index_lowering("nn.dropout")
def _dropout(ctx: LowerContext, args: Sequence, attrs: object,
             out_type: Type) -> tuple[TensorValue, ...]:
    x = tensor(args[0])
    return (x, scalar_value(K.Const(1, x.dtype), x.shape))


# --------------------------------------------------- dense, matmul, batch

def _accumulator_dtype(out: DType) -> DType:
    """The accumulator: the output dtype for integers (wrapping, exactly
    the reference), and for floats the output's own precision (float32
    accumulates in float32; float16 computes in float32).  The reference
    sums in float64 and rounds once; a float32 accumulator differs from it
    by at most about ``K * 2**-24 * sum(|x * w|)``, which the tests allow.
    The choice is deliberate: on a core without a double-precision FPU
    (Cortex-M4F) a float64 sum is software floating point, about 95
    instructions per multiply-accumulate against about 5; the convolution
    lowerings make the same choice."""
    if out.is_int:
        return out
    return F64 if out is F64 else DType.FLOAT32


@dataclass(frozen=True, slots=True)
class _Product:
    """An output ``rows + (units,)`` whose element ``(row, j)`` is
    ``sum_k lhs(row, k) * rhs(row, j, k)``; the strides say how far apart
    consecutive ``k`` lie in each operand's row-major layout (1:
    contiguous)."""
    rows: tuple[int, ...]
    units: int
    reduce: int
    lhs: Callable[[Index, K.Expr], K.Expr]
    rhs: Callable[[Index, K.Expr, K.Expr], K.Expr]
    lhs_stride: int
    rhs_stride: int
    lhs_dtype: DType


#: copies of the multiply-accumulate per iteration of the reduction loop
#: (fewer loop-control instructions per MAC; the summation order, hence
#: the result, is unchanged)
UNROLL = 4


def _mac_statements(ctx: LowerContext, acc: K.Var, reduce: int,
                    term: Callable[[K.Expr], tuple[K.Expr, K.Expr]]) -> list[K.Stmt]:
    """``for k < reduce: acc = acc + a(k) * b(k)`` (``term(k) = (a, b)``),
    unrolled ``UNROLL`` times when the reduction is long enough, the
    remainder as straight-line statements."""
    def step(k: K.Expr) -> K.Stmt:
        return K.Assign(acc, mac(acc, *term(k)))
    if reduce < 2 * UNROLL:
        k = ctx.index_var("k")
        return [K.for_range(k, reduce, step(k))]
    kk = ctx.index_var("k")
    base = K.mul(kk, _idx(UNROLL), no_wrap=True)
    body = [step(K.add(base, _idx(u), no_wrap=True) if u else base) for u in range(UNROLL)]
    main = reduce // UNROLL * UNROLL
    tail = [step(_idx(k)) for k in range(main, reduce)]
    return [K.for_range(kk, reduce // UNROLL, body), *tail]


def _product_nest(ctx: LowerContext, p: _Product, out: DType, sink: Sink) -> K.Stmt:
    acc_t = _accumulator_dtype(out)

    def row_body(row: Index) -> list[K.Stmt]:
        stmts: list[K.Stmt] = []
        lhs = p.lhs
        if p.lhs_stride != 1 and p.rhs_stride != 1 and p.units > 1 and p.reduce > 1:
            col = ctx.scratch(p.lhs_dtype, (p.reduce,), "col")
            kc = ctx.index_var("k")
            stmts.append(K.for_range(kc, p.reduce, K.store(col, kc, p.lhs(row, kc))))
            lhs = lambda r, k: K.load(col, k)  # noqa: E731
        j = ctx.index_var("j")
        acc = ctx.scalar("sum", acc_t)

        def term(k: K.Expr) -> tuple[K.Expr, K.Expr]:
            return K.cast(acc_t, lhs(row, k)), K.cast(acc_t, p.rhs(row, j, k))
        stmts.append(K.for_range(j, p.units, [
            K.Decl(acc, _zero(acc_t)),
            *_mac_statements(ctx, acc, p.reduce, term),
            sink((*row, j), K.cast(out, acc)),
        ]))
        return stmts
    return loop_nest(ctx, p.rows, row_body, "r")


def _stride(shape: Sequence[int], axis: int) -> int:
    return K.row_major_strides(shape)[axis % len(shape)] if shape[axis] > 1 else 1


def _matmul_product(a: TensorValue, b: TensorValue, out_shape: tuple[int, ...],
                    transpose_a: bool, transpose_b: bool) -> _Product:
    """``a`` N-d (its last axis reduced, the second-to-last with
    ``transpose_a``), ``b`` 2-d ``[K, N]`` (``[N, K]`` with
    ``transpose_b``)."""
    reduce = a.shape[-2] if transpose_a else a.shape[-1]

    def lhs(row: Index, k: K.Expr) -> K.Expr:
        if transpose_a:
            return a.read((*row[:-1], k, row[-1]))
        return a.read((*row, k))

    def rhs(row: Index, j: K.Expr, k: K.Expr) -> K.Expr:
        return b.read((j, k) if transpose_b else (k, j))
    return _Product(out_shape[:-1], out_shape[-1], reduce, lhs, rhs,
                    _stride(a.shape, -2 if transpose_a else -1),
                    _stride(b.shape, 0 if not transpose_b else 1), a.dtype)


def _out(out_type: Type) -> tuple[tuple[int, ...], DType]:
    t = out_tensor(out_type)
    return tuple(int(d) for d in t.shape), t.dtype


#: units per tile of the ``simd`` dense nest (8 AVX vectors of float32:
#: independent accumulation chains enough to hide the add latency)
DENSE_SIMD_UNITS = 64
#: fewer units stay scalar (measured: 64 -> 12 units takes twice as long
#: with 16-unit vector tiles as with the scalar nest)
DENSE_SIMD_MIN_UNITS = 32


def _dense_simd(ctx: LowerContext, x: TensorValue, weight: np.ndarray, shape: tuple[int, ...],
                out: DType, sink: Sink) -> K.Stmt:
    """The ``simd`` tuning's dense (:mod:`.tuning`): the constant weight
    ``[units, K]`` packed at compile time as ``[units/BJ][K][BJ]`` (zero
    units pad the last tile), so for each ``k`` the tile's ``BJ`` weights
    are contiguous; ``acc[BJ] += x[row, k] * w[k][0:BJ]`` is a loop gcc
    vectorises, keeping ``acc`` in vector registers.  Each output sums its
    products in ``k`` order in float32, as the scalar nest does."""
    units, reduce = weight.shape
    bj = DENSE_SIMD_UNITS if units >= DENSE_SIMD_UNITS else -(-units // 8) * 8
    tiles = -(-units // bj)
    packed = np.zeros((tiles * bj, reduce), dtype=np.float32)
    packed[:units] = weight
    packed = packed.reshape(tiles, bj, reduce).transpose(0, 2, 1)
    wbuf = ctx.constant_table(np.ascontiguousarray(packed).reshape(-1), DType.FLOAT32).buffer
    assert wbuf is not None
    acc = K.Buffer(ctx.fresh("acc"), DType.FLOAT32, (bj,), K.BufferScope.LOCAL)

    def row_body(row: Index) -> K.Stmt:
        jt, j, k = ctx.index_var("jt"), ctx.index_var("j"), ctx.index_var("k")
        xv = ctx.scalar("xv", DType.FLOAT32)
        mj = ctx.index_var("j")
        wi = K.add(K.mul(K.add(K.mul(jt, _idx(reduce), no_wrap=True), k, no_wrap=True),
                         _idx(bj), no_wrap=True), mj, no_wrap=True)
        step = K.store(acc, mj, mac(K.load(acc, mj), xv, K.load(wbuf, wi)))
        sj = ctx.index_var("j")
        unit = K.add(K.mul(jt, _idx(bj), no_wrap=True), sj, no_wrap=True)

        def tile(valid: int) -> list[K.Stmt]:
            return [K.for_range(j, bj, K.store(acc, j, _zero(DType.FLOAT32))),
                    K.for_range(k, reduce, [K.Decl(xv, K.cast(DType.FLOAT32, x.read((*row, k)))),
                                            K.for_range(mj, bj, step)]),
                    K.for_range(sj, valid, sink((*row, unit), K.cast(out, K.load(acc, sj))))]
        full = units // bj
        stmts: list[K.Stmt] = []
        if full:
            stmts.append(K.for_range(jt, full, tile(bj)))
        if units % bj:
            stmts.append(K.block(K.Decl(jt, _idx(full)), *tile(units % bj)))
        return K.block(*stmts)
    return loop_nest(ctx, shape[:-1], row_body, "r")


@anchor_lowering("nn.dense")
def _dense(ctx: LowerContext, args: Sequence, attrs: DenseAttrs, out_type: Type,
           sinks: Sequence[Sink]) -> K.Stmt:
    shape, dtype = _out(out_type)
    x, w = tensor(args[0]), tensor(args[1])
    if (current_tuning().simd and w.constant is not None and dtype is DType.FLOAT32
            and x.dtype in (DType.FLOAT32, DType.FLOAT16) and w.dtype is DType.FLOAT32
            and w.ndim == 2 and x.shape[-1] > 0 and w.shape[0] >= DENSE_SIMD_MIN_UNITS):
        return _dense_simd(ctx, x, np.asarray(w.constant, dtype=np.float32), shape, dtype,
                           sinks[0])
    if (dtype is DType.FLOAT32 and x.dtype is dtype and w.dtype is dtype and w.ndim == 2
            and w.constant is not None and x.shape[-1] > 0 and w.shape[0] >= DENSE_SCALAR_UNITS
            and not current_tuning().simd):
        from .nn_dense_packed import dense_packed
        return dense_packed(ctx, x, np.asarray(w.constant, dtype=np.float32), shape, dtype,
                            sinks[0])
    p = _matmul_product(x, w, shape, False, True)
    staged = _weight_staged(ctx, p, w, True, dtype, sinks[0])
    if staged is not None:
        return staged
    if (dtype in (DType.FLOAT32, DType.FLOAT16) and x.dtype is dtype and w.dtype is dtype
            and x.shape[-1] > 0 and w.shape[0] >= DENSE_SCALAR_UNITS):
        return _dense_scalar_tiles(ctx, x, w, shape, dtype, sinks[0])
    return _product_nest(ctx, p, dtype, sinks[0])


def _weight_staged(ctx: LowerContext, p: _Product, w: TensorValue, k_contiguous: bool,
                   out: DType, sink: Sink) -> K.Stmt | None:
    """The product with its computed weight (the same for every row)
    staged per unit tile (:mod:`.nn_product_wstage`), None when it is not
    staged."""
    from .nn_product_wstage import staged_product, staged_units
    acc = _accumulator_dtype(out)
    bj = staged_units(w, math.prod(p.rows), p.units, p.reduce, acc)
    if not bj:
        return None
    row0 = tuple(_idx(0) for _ in p.rows)
    return staged_product(ctx, p.rows, p.units, p.reduce, p.lhs,
                          lambda j, k: p.rhs(row0, j, k), k_contiguous, acc, out, sink, bj)


#: units per register tile of the scalar dense nest with a constant weight
DENSE_SCALAR_UNITS = 4


def _dense_scalar_tiles(ctx: LowerContext, x: TensorValue, w: TensorValue,
                        shape: tuple[int, ...], dtype: DType, sink: Sink) -> K.Stmt:
    """The ``scalar`` tuning's float32 and float16 dense: tiles of ``BJ``
    units in scalar accumulators, so each ``x[k]`` is loaded (and a half
    converted) once per tile; ``k`` unrolled twice.  The weight is read in
    place (a packed copy would double the flash the weights take).  Each
    output sums its products in ``k`` order in float32 and is then
    rounded to ``dtype``, as :func:`_product_nest` does."""
    units, reduce = w.shape
    bj = DENSE_SCALAR_UNITS

    def row_body(row: Index) -> K.Stmt:
        def tile(jt: K.Expr, valid: int) -> list[K.Stmt]:
            accs = [ctx.scalar("acc", DType.FLOAT32) for _ in range(valid)]
            stmts: list[K.Stmt] = [K.Decl(a, _zero(DType.FLOAT32)) for a in accs]
            base = K.mul(jt, _idx(bj), no_wrap=True)

            def step(k: K.Expr) -> list[K.Stmt]:
                xv = ctx.scalar("xv", DType.FLOAT32)
                return [K.Decl(xv, K.cast(DType.FLOAT32, x.read((*row, k))))] + [
                    K.Assign(a, mac(a, xv, K.cast(DType.FLOAT32, w.read(
                        (K.add(base, _idx(i), no_wrap=True) if i else base, k)))))
                    for i, a in enumerate(accs)]
            k = ctx.index_var("k")
            pairs, odd = divmod(reduce, 2)
            if pairs:
                k2 = K.mul(k, _idx(2), no_wrap=True)
                stmts.append(K.for_range(k, pairs, K.block(
                    K.block(*step(k2)), K.block(*step(K.add(k2, _idx(1), no_wrap=True))))))
            if odd:
                stmts.append(K.block(*step(_idx(reduce - 1))))
            for i, a in enumerate(accs):
                unit = K.add(K.mul(jt, _idx(bj), no_wrap=True), _idx(i), no_wrap=True)
                stmts.append(sink((*row, unit), K.cast(dtype, a)))
            return stmts
        full = units // bj
        out: list[K.Stmt] = []
        if full:
            jt = ctx.index_var("jt")
            out.append(K.for_range(jt, full, tile(jt, bj)))
        if units % bj:
            out.append(K.block(*tile(_idx(full), units % bj)))
        return K.block(*out)
    return loop_nest(ctx, shape[:-1], row_body, "r")


@anchor_lowering("nn.matmul")
def _matmul(ctx: LowerContext, args: Sequence, attrs: MatmulAttrs, out_type: Type,
            sinks: Sequence[Sink]) -> K.Stmt:
    shape, dtype = _out(out_type)
    w = tensor(args[1])
    p = _matmul_product(tensor(args[0]), w, shape, attrs.transpose_a, attrs.transpose_b)
    staged = _weight_staged(ctx, p, w, attrs.transpose_b, dtype, sinks[0])
    return staged if staged is not None else _product_nest(ctx, p, dtype, sinks[0])


@anchor_lowering("nn.batch_matmul")
def _batch_matmul(ctx: LowerContext, args: Sequence, attrs: BatchMatmulAttrs,
                  out_type: Type, sinks: Sequence[Sink]) -> K.Stmt:
    shape, dtype = _out(out_type)
    x, y = tensor(args[0]), tensor(args[1])
    ta, tb = attrs.transpose_a, attrs.transpose_b
    reduce = x.shape[1] if ta else x.shape[2]

    def batch(v: TensorValue, b: K.Expr) -> K.Expr:
        return _idx(0) if v.shape[0] == 1 else b    # batch 1 broadcasts

    def lhs(row: Index, k: K.Expr) -> K.Expr:
        b, m = row
        return x.read((batch(x, b), k, m) if ta else (batch(x, b), m, k))

    def rhs(row: Index, j: K.Expr, k: K.Expr) -> K.Expr:
        b = batch(y, row[0])
        return y.read((b, j, k) if tb else (b, k, j))
    p = _Product(shape[:-1], shape[-1], reduce, lhs, rhs,
                 _stride(x.shape, 1 if ta else 2), _stride(y.shape, 2 if tb else 1), x.dtype)
    staged = _weight_staged(ctx, p, y, tb, dtype, sinks[0]) if y.shape[0] == 1 else None
    return staged if staged is not None else _product_nest(ctx, p, dtype, sinks[0])


# ------------------------------------------- softmax, log_softmax, layer_norm

def _row_loops(ctx: LowerContext, shape: tuple[int, ...], axis: int,
               body: Callable[[Callable[[K.Expr], Index]], list[K.Stmt]]) -> K.Stmt:
    """Loops over every axis of ``shape`` but ``axis``; ``body`` gets
    ``at(k)``, the full index with ``k`` on ``axis``."""
    axis %= len(shape)
    outer = shape[:axis] + shape[axis + 1:]

    def row(idx: Index) -> list[K.Stmt]:
        return body(lambda k: (*idx[:axis], k, *idx[axis:]))
    return loop_nest(ctx, outer, row, "r")


def _reduce_loop(ctx: LowerContext, acc: K.Var, init: K.Expr, extent: int,
                 step: Callable[[K.Expr], K.Expr]) -> list[K.Stmt]:
    """``acc = init; for k < extent: acc = step(k)``."""
    k = ctx.index_var("k")
    return [K.Decl(acc, init), K.for_range(k, extent, K.Assign(acc, step(k)))]


def _softmax_common(ctx: LowerContext, args: Sequence, attrs: SoftmaxAttrs, out_type: Type,
                    sink: Sink, log: bool) -> K.Stmt:
    x = tensor(args[0])
    shape, dtype = _out(out_type)
    n = shape[attrs.axis % len(shape)]

    def body(at: Callable[[K.Expr], Index]) -> list[K.Stmt]:
        mx = ctx.scalar("max", x.dtype)     # exact in the data's dtype
        total = ctx.scalar("sum", F64)
        stmts = _reduce_loop(ctx, mx, K.Const(x.dtype.lowest, x.dtype), n,
                             lambda k: K.maximum(mx, x.read(at(k))))

        def shifted(k: K.Expr) -> K.Expr:
            return K.sub(K.cast(F64, x.read(at(k))), K.cast(F64, mx))
        stmts += _reduce_loop(ctx, total, _zero(F64), n,
                              lambda k: K.add(total, K.math_call("exp", shifted(k))))
        k = ctx.index_var("k")
        if log:
            lse = ctx.scalar("lse", F64)
            stmts.append(K.Decl(lse, K.math_call("log", total)))
            value = K.sub(shifted(k), lse)
        else:
            value = K.div(K.math_call("exp", shifted(k)), total)
        stmts.append(K.for_range(k, n, sink(at(k), K.cast(dtype, value))))
        return stmts
    return _row_loops(ctx, shape, attrs.axis, body)


@anchor_lowering("nn.softmax")
def _softmax(ctx: LowerContext, args: Sequence, attrs: SoftmaxAttrs, out_type: Type,
             sinks: Sequence[Sink]) -> K.Stmt:
    return _softmax_common(ctx, args, attrs, out_type, sinks[0], log=False)


@anchor_lowering("nn.log_softmax")
def _log_softmax(ctx: LowerContext, args: Sequence, attrs: SoftmaxAttrs, out_type: Type,
                 sinks: Sequence[Sink]) -> K.Stmt:
    return _softmax_common(ctx, args, attrs, out_type, sinks[0], log=True)


@anchor_lowering("nn.layer_norm")
def _layer_norm(ctx: LowerContext, args: Sequence, attrs: LayerNormAttrs, out_type: Type,
                sinks: Sequence[Sink]) -> K.Stmt:
    x, gamma, beta = (tensor(a) for a in args)
    shape, dtype = _out(out_type)
    axis = attrs.axis % len(shape)
    count = K.Const(shape[axis], F64)

    def body(at: Callable[[K.Expr], Index]) -> list[K.Stmt]:
        total, mean = ctx.scalar("sum", F64), ctx.scalar("mean", F64)
        sq, std = ctx.scalar("sq", F64), ctx.scalar("std", F64)

        def centered(k: K.Expr) -> K.Expr:
            return K.sub(K.cast(F64, x.read(at(k))), mean)
        stmts = _reduce_loop(ctx, total, _zero(F64), shape[axis],
                             lambda k: K.add(total, K.cast(F64, x.read(at(k)))))
        stmts.append(K.Decl(mean, K.div(total, count)))
        stmts += _reduce_loop(ctx, sq, _zero(F64), shape[axis],
                              lambda k: K.add(sq, K.mul(centered(k), centered(k))))
        # population variance, then sqrt(var + eps), as the reference
        var = K.div(sq, count)
        stmts.append(K.Decl(std, K.math_call("sqrt", K.add(var, K.Const(attrs.epsilon, F64)))))
        k = ctx.index_var("k")
        y = _scale_center(K.div(centered(k), std), gamma, beta, (k,), attrs)
        stmts.append(K.for_range(k, shape[axis], sinks[0](at(k), K.cast(dtype, y))))
        return stmts
    return _row_loops(ctx, shape, axis, body)
