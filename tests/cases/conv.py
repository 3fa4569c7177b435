"""Convolution cases (nn.conv1d, nn.conv2d, nn.conv2d_transpose), shared by
tests/ops/test_nn_conv.py, tests/emit/test_lower_conv.py and
tests/e2e/test_ops_c_conv.py."""

from __future__ import annotations

#: data NCHW, weight (O, I/groups, kh, kw), strides, padding, dilation, groups
CONV2D = [
    ((1, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 8, 6), (5, 3, 3, 2), (2, 1), (1, 1), (1, 1), 1),
    ((1, 2, 9, 9), (3, 2, 3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 1),
    ((1, 4, 9, 8), (6, 2, 3, 3), (1, 2), (1,), (2, 1), 2),
    ((1, 4, 6, 6), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),          # depthwise
    ((1, 3, 5, 5), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3),    # depthwise x2
    ((1, 2, 5, 5), (3, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1),          # pointwise
    ((1, 2, 4, 4), (2, 2, 5, 5), (1, 1), (2, 2), (1, 1), 1),          # kernel > input
]

#: (data dtype, weight dtype, out_dtype or None) every CONV2D row runs with
DTYPES = [("float32", "float32", None), ("float16", "float16", None),
          ("int8", "int8", "int32"), ("uint8", "int8", "int32")]

#: (data layout, kernel layout); each with out_layout "", NCHW and NHWC on
#: data (2, 4, 6, 5) NCHW, weight (6, 2, 3, 2) OIHW, strides [2, 1],
#: padding [1, 0, 0, 1], groups 2
LAYOUTS = [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "OHWI"), ("NCHW", "HWIO"),
           ("NHWC", "OIHW"), ("HWNC", "IHWO")]
OUT_LAYOUTS = ["", "NCHW", "NHWC"]

#: data NCW, weight (O, I/groups, k), stride, padding, dilation, groups
CONV1D = [
    ((2, 3, 10), (4, 3, 3), 1, (0, 0), 1, 1),
    ((1, 4, 11), (6, 2, 3), 2, (1, 2), 2, 2),
    ((1, 2, 5), (2, 1, 5), 1, (2,), 1, 2),
]

#: data NCHW, weight IOHW, strides, padding, output_padding, dilation, groups
TRANSPOSE = [
    ((1, 3, 4, 4), (3, 2, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 2, 3, 4), (2, 3, 3, 3), (2, 2), (1, 1), (1, 0), (1, 1), 1),
    ((1, 4, 3, 3), (4, 1, 2, 3), (2, 3), (0, 1, 1, 0), (0, 2), (1, 1), 2),
    ((1, 2, 3, 3), (2, 2, 3, 3), (1, 2), (1,), (0, 1), (2, 1), 1),
]

#: conv2d_transpose beyond TRANSPOSE: data, weight, attributes
TRANSPOSE_MORE = [
    ((1, 2, 3, 3), (2, 3, 3, 3), dict(strides=[3, 2], dilation=[2, 3], padding=[2, 1, 0, 3])),
    ((1, 4, 2, 3), (4, 2, 4, 4), dict(strides=[2, 2], padding=[1, 1], groups=2,
                                      output_padding=[1, 1])),
    ((1, 3, 4, 2), (3, 3, 2, 2), dict(data_layout="NHWC", kernel_layout="HWIO", strides=[2, 2])),
    ((1, 6, 3, 3), (6, 1, 3, 3), dict(groups=6, strides=[2, 2], padding=[1, 1])),
    ((1, 1, 2, 2), (1, 1, 1, 1), dict(strides=[3, 3], output_padding=[2, 1])),     # gaps
]
