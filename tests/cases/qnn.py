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

#: qnn.softmax: (dtype, shape, axis, input_scale, input_zp, output_scale, output_zp,
#: beta).  TFLite's parameters (output 2**-8 with the dtype's minimum as zero
#: point, 2**-15 and 0 for int16), other powers of two, scales that are not
#: powers of two, beta != 1, inner and outer axes, one-element rows.
SOFTMAX_CASES = [
    ("int8", (4, 10), -1, 0.1, 3, 1 / 256, -128, 1.0),
    ("int8", (3, 5, 7), 1, 0.02, -5, 1 / 256, -128, 1.0),
    ("int8", (2, 9), 0, 0.5, 0, 1 / 256, -128, 0.7),
    ("int8", (6, 12), -1, 0.003, 0, 1 / 128, -100, 1.0),
    ("int8", (5, 8), -1, 0.07, 1, 0.0041, -120, 1.0),
    ("int8", (3, 1), -1, 0.1, 0, 1 / 256, -128, 1.0),
    ("uint8", (4, 11), -1, 0.05, 128, 1 / 256, 0, 1.0),
    ("uint8", (2, 3, 6), 0, 0.2, 120, 0.005, 3, 2.0),
    ("int16", (4, 10), -1, 0.001, 0, 1 / 32768, 0, 1.0),
    ("int16", (3, 6, 5), 1, 1e-4, 0, 1 / 32768, 0, 1.0),
    ("int16", (5, 7), -1, 3e-4, 0, 1 / 32768, 0, 2.5),
    ("int16", (4, 9), 0, 0.002, 0, 1 / 16384, -100, 1.0),
    ("int16", (3, 8), -1, 5e-4, 0, 4e-5, 7, 1.0),
]
