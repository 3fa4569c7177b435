"""1-d, 3-d and adaptive pooling cases (nn.max_pool1d, nn.avg_pool1d,
nn.max_pool3d, nn.avg_pool3d, nn.adaptive_{avg,max}_pool{1,2,3}d), shared by
tests/ops/test_nn_pool_nd.py and tests/e2e/test_ops_c_pool_nd.py."""

from __future__ import annotations

#: operator suffix ("1d"/"3d"), data shape, attributes (the max pool
#: ignores count_include_pad)
WINDOWS = [
    ("1d", (1, 3, 9), dict(pool_size=[3], strides=[2], padding=[1])),
    ("1d", (2, 2, 9), dict(pool_size=[3], strides=[2], padding=[1, 2], count_include_pad=True)),
    ("1d", (1, 9, 4), dict(pool_size=[2], strides=[2], layout="NWC", ceil_mode=True)),
    ("1d", (1, 1, 4), dict(pool_size=[2], dilation=[2], padding=[3], ceil_mode=True,
                           strides=[3])),                        # windows wholly in padding
    ("3d", (1, 2, 4, 5, 6), dict(pool_size=[2, 3, 2], strides=[2, 1, 2], padding=[1])),
    ("3d", (1, 2, 4, 5, 6), dict(pool_size=[2, 2, 2], padding=[1, 0, 1, 0, 1, 1],
                                 count_include_pad=True)),
    ("3d", (1, 4, 5, 6, 3), dict(pool_size=[3, 2, 2], dilation=[1, 2, 1], layout="NDHWC",
                                 ceil_mode=True, strides=[2, 2, 2])),
]

#: operator suffix, data shape, attributes
ADAPTIVE = [
    ("1d", (1, 3, 9), dict(output_size=[4])),
    ("1d", (2, 3, 8), dict(output_size=[4])),
    ("1d", (1, 5, 3), dict(output_size=[5], layout="NWC")),      # windows overlap
    ("2d", (1, 3, 7, 5), dict(output_size=[3, 2])),
    ("2d", (2, 5, 6, 3), dict(output_size=[4], layout="NHWC")),
    ("2d", (1, 3, 8, 8), dict(output_size=[1])),
    ("2d", (1, 2, 4, 4), dict()),                                 # output = input size
    ("3d", (1, 2, 5, 4, 6), dict(output_size=[2, 3, 4])),        # windows overlap
    ("3d", (1, 4, 4, 3, 2), dict(output_size=[2, 1, 2], layout="NDHWC")),
]

#: the pooled axes and default layout of each ADAPTIVE suffix
ADAPTIVE_AXES = {"1d": ("W", "NCW"), "2d": ("HW", "NCHW"), "3d": ("DHW", "NCDHW")}

#: the dtypes every row runs with
DTYPES = ["float32", "int8"]


def window_op(kind: str, suffix: str, attrs: dict) -> tuple[str, dict]:
    """``(operator, attributes)`` of a WINDOWS row for ``kind`` max/avg."""
    if kind == "max":
        attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    return f"nn.{kind}_pool{suffix}", attrs
