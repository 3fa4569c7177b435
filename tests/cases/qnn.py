"""The qnn family's shared rows: quantized convolutions (tests/ops'
reference against a float64 oracle, tests/emit's lowering against the
interpreter) and the requantize rounding modes (tests/emit, tests/e2e)."""

from __future__ import annotations

#: (data_layout, kernel_layout, N, C, H, W, O, KH, KW, attrs)
CONV_CASES = [
    ("NCHW", "OIHW", 1, 3, 6, 5, 4, 3, 3, {}),
    ("NCHW", "OIHW", 2, 2, 7, 7, 3, 3, 2, {"padding": (1, 2), "strides": (2, 1)}),
    ("NHWC", "HWIO", 1, 4, 6, 6, 2, 3, 3, {"padding": (1, 0, 2, 1), "dilation": (2, 1)}),
    ("NHWC", "HWOI", 1, 4, 5, 5, 4, 3, 3, {"padding": (1,), "groups": 4}),        # depthwise
    ("NHWC", "HWOI", 1, 2, 5, 4, 6, 2, 2, {"groups": 2, "strides": (1, 2)}),       # multiplier 3
    ("NCHW", "OHWI", 1, 6, 5, 5, 4, 1, 1, {"groups": 2, "out_layout": "NHWC"}),
    ("NHWC", "OIHW", 2, 3, 4, 6, 2, 2, 3, {"out_layout": "NCHW", "padding": (0, 1)}),
]

#: qnn.requantize's rounding attribute, every value
ROUNDINGS = ["TFLITE", "UPWARD", "TONEAREST", "None"]
