"""Dense and matrix-product cases (nn.dense, nn.matmul, nn.batch_matmul),
shared by tests/ops/test_nn.py, tests/emit/test_lower_nn.py and
tests/e2e/test_ops_c_nn.py."""

from __future__ import annotations

#: data shape, units, data dtype, weight dtype, out_dtype (None: the data's)
DENSE = [
    ((3, 5), 4, "float32", "float32", None),
    ((2, 3, 5), 2, "float64", "float64", None),
    ((4,), 3, "float16", "float16", None),
    ((2, 6), 3, "float16", "float16", "float32"),
    ((3, 8), 5, "int8", "int8", "int32"),
    ((3, 8), 5, "uint8", "int8", "int32"),
    ((2, 4), 3, "int16", "int16", "int16"),     # wraps in int16
    ((2, 16), 3, "int8", "int8", None),         # accumulates (wrapping) in int8
    ((2, 5), 3, "int32", "int32", "float32"),   # integers summed in float64
    ((2, 5), 3, "int8", "uint8", "uint8"),
    ((2, 11), 3, "float32", "float32", None),   # unrolled by 4, three left over
    ((2, 7), 6, "float16", "float16", None),    # register tiles of 4 units and 2; odd k
    ((3, 9), 4, "float32", "float32", None),    # one register tile; odd k
    ((1, 10), 2, "int8", "int8", "int32"),
    ((2, 64), 7, "float32", "float32", None),
]

#: nn.matmul: a shape, b shape, transpose_a, transpose_b; on MATMUL_DTYPES
MATMUL = [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 4, 3), (4, 5), True, False),           # N-d data
    ((2, 3, 4), (5, 4), False, True),
    ((4,), (4, 5), False, False),               # 1-d data
    ((4, 1), (4, 5), True, False),              # one row: no column copy needed
]
MATMUL_DTYPES = ["float32", "int32"]

#: nn.batch_matmul: x shape, y shape, transpose_a, transpose_b; on
#: BATCH_MATMUL_DTYPES (int8 with out_dtype int32)
BATCH_MATMUL = [
    ((2, 3, 4), (2, 5, 4), False, True),
    ((2, 4, 3), (2, 4, 5), True, False),
    ((1, 3, 4), (3, 4, 5), False, False),   # batch 1 broadcasts
    ((3, 4, 3), (1, 5, 4), True, True),
    ((2, 3, 4), (1, 5, 4), False, True),
    ((2, 9, 3), (2, 9, 4), True, False),    # column copy, unrolled reduction
]
BATCH_MATMUL_DTYPES = ["float32", "int8", "float16"]
