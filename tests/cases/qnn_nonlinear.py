"""Shared rows of qnn.sigmoid, qnn.tanh, qnn.hardswish and qnn.mean
(tests/ops' reference checks, tests/e2e's C builds): quantization
parameters chosen to cover TFLite's fixed output ranges, general ones, the
three signs of hard swish's reluish exponent, and mean's multiplier
clamping (``k = 31 + s``) and empty reductions."""

from __future__ import annotations

#: (op, dtype, input_scale, input_zero_point, output_scale, output_zero_point)
ACTIVATIONS = [
    ("qnn.sigmoid", "int8", 0.05, 3, 1 / 256, -128),
    ("qnn.sigmoid", "int8", 0.2, -20, 1 / 256, -128),
    ("qnn.sigmoid", "uint8", 0.03, 128, 1 / 256, 0),
    ("qnn.sigmoid", "int8", 0.01, 0, 0.003, 5),
    ("qnn.tanh", "int8", 0.05, 3, 1 / 128, 0),
    ("qnn.tanh", "uint8", 0.02, 120, 1 / 128, 128),
    ("qnn.tanh", "int8", 0.3, -100, 0.009, -3),
    ("qnn.hardswish", "int8", 0.05, 3, 0.025, -100),       # reluish exponent > 0
    ("qnn.hardswish", "int8", 0.01, -20, 0.006, -10),      # = 0
    ("qnn.hardswish", "uint8", 0.003, 128, 0.002, 100),    # < 0
    ("qnn.hardswish", "int8", 0.5, 0, 0.9, 0),
    ("qnn.hardswish", "uint8", 0.08, 0, 0.05, 10),
]

#: (dtype, shape, axis, keepdims, exclude, input_scale, input_zero_point,
#: output_scale, output_zero_point)
MEANS = [
    ("int8", (1, 4, 5, 3), (1, 2), True, False, 0.05, 3, 0.01, -2),
    ("int8", (1, 9, 9, 8), (1, 2), True, False, 0.05, 3, 0.05, 3),
    ("int8", (2, 4, 3), (-1,), False, False, 0.05, -7, 0.04, 9),
    ("uint8", (2, 3, 4, 5), (1, 3), False, False, 0.02, 128, 0.03, 120),
    ("int16", (3, 7), (0,), True, False, 0.001, 0, 0.0005, 0),
    ("int8", (2, 5), None, False, False, 0.1, -1, 0.07, 0),
    ("int8", (3, 4, 5), (1,), False, True, 0.02, 5, 0.02, -5),
    ("int8", (4096,), None, False, False, 3e-8, 0, 1.0, 0),    # k clamped to 31 + s
    ("int8", (300,), (0,), True, False, 0.02, -128, 1e-4, 0),  # saturates
]
