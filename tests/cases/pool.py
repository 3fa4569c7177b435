"""2-D pooling cases (nn.max_pool2d, nn.avg_pool2d), shared by
tests/ops/test_nn_pool.py, tests/emit/test_lower_pool_image.py and
tests/e2e/test_ops_c_conv.py."""

from __future__ import annotations

#: shape NCHW, pool, strides, padding, dilation, ceil_mode
POOLS = [
    ((1, 2, 6, 6), (2, 2), (2, 2), (0,), (1, 1), False),
    ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 1, 8, 9), (3, 2), (3, 2), (1, 0, 2, 1), (1, 1), True),
    ((1, 2, 9, 9), (3, 3), (1, 2), (2, 2), (2, 2), False),
    ((1, 1, 5, 5), (3, 3), (1, 1), (2, 2), (1, 1), False),
    ((1, 1, 4, 4), (2, 2), (3, 3), (0, 0), (1, 1), True),
    ((1, 1, 3, 3), (2, 2), (1, 1), (2, 2), (1, 1), False),   # windows wholly in padding
]

#: the dtypes every POOLS row runs with: max pooling, and average pooling
#: (each with count_include_pad False and True)
MAX_DTYPES = ["float32", "int8", "float16", "uint8"]
AVG_DTYPES = ["float32", "int32", "int8"]


def pool_attrs(pool, strides, padding, dilation, ceil_mode, **more) -> dict:
    """A POOLS row's attributes (all but its shape) as keyword arguments."""
    return dict(pool_size=list(pool), strides=list(strides), padding=list(padding),
                dilation=list(dilation), ceil_mode=ceil_mode, **more)
