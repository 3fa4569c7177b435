"""A program with ``if`` for first-order gradients (tests/passes/test_gradient.py
against central differences, tests/e2e/test_static_ifs.py in C)."""

from __future__ import annotations

import numpy as np

#: ``if`` in first-order mode: a tuple-valued if, a nested one, a value
#: both branches read, a branch giving a parameter as it is
IF_PROGRAM = """
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64], %k: int32) {
  let %e = exp(%x);
  let %p = if (sum(%x) > 0f64) {
    (%e * %y, sin(%y))
  } else {
    if (%k > 1) { (%e + %y, %y) } else { (%e, %x * %x) }
  };
  sum(%p.0 * %p.1) + sum(%e)
}
"""


def if_args(case: int) -> list[np.ndarray]:
    x = np.array([0.3, -0.2, 0.4]) * (1 if case == 0 else -1)
    return [x, np.array([0.7, -1.1, 0.5]), np.array(case, np.int32)]
