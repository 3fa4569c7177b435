"""Outputs written over their inputs in the arena, compiled to C and run.

Small programs whose plans overlap kernel outputs with dying inputs (a
depthwise convolution streaming over its input, a staged pointwise
convolution and a softmax over theirs, a convolution whose epilogue adds a
residual over that residual): each plan must use overlaps and beat the
whole-tensor bound, and the C, built once for all of them, must equal the
interpreter.  The MLPerf Tiny models (test_mlperf_tiny.py) and the random
chains (test_random_chains_c.py) run the same machinery at scale.
"""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.compiler import plan
from c_harness import Case, check_cases

SEPARABLE = """def @main(%x: Tensor[(1, 8, 12, 10), float32], %w1: Tensor[(8, 1, 3, 3), float32],
          %w2: Tensor[(16, 8, 1, 1), float32], %w3: Tensor[(16, 1, 3, 3), float32],
          %w4: Tensor[(8, 16, 1, 1), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(nn.conv2d(%0, %w1, padding=[1, 1, 1, 1], groups=8, channels=8, kernel_size=[3, 3]));
  %2 = nn.relu(nn.conv2d(%1, %w2, channels=16, kernel_size=[1, 1]));
  %3 = nn.relu(nn.conv2d(%2, %w3, strides=[2, 2], padding=[1, 1, 1, 1], groups=16, channels=16,
                         kernel_size=[3, 3]));
  nn.conv2d(%3, %w4, channels=8, kernel_size=[1, 1])
}"""

RESIDUAL = """def @main(%x: Tensor[(1, 4, 9, 7), float32], %w1: Tensor[(4, 4, 3, 3), float32],
          %w2: Tensor[(4, 4, 3, 3), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(nn.conv2d(%0, %w1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]));
  %2 = add(nn.conv2d(%1, %w2, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]), %0);
  nn.max_pool2d(nn.relu(%2), pool_size=[2, 2])
}"""

SOFTMAX = """def @main(%x: Tensor[(4, 64), float32]) {
  %0 = nn.softmax(%x);
  %1 = nn.softmax(%0);
  %2 = nn.softmax(%1);
  nn.softmax(%2)
}"""

PROGRAMS = {"separable": SEPARABLE, "residual": RESIDUAL, "softmax": SOFTMAX}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_plans_overlap(name):
    p = plan(aot.parse(PROGRAMS[name]), name)
    assert p.arena_overlaps, "no output was placed over an input"
    assert p.arena_bytes < p.arena_whole_tensor_bound_bytes
    assert p.arena_lower_bound_bytes <= p.arena_bytes


def test_overlapped_c_matches_the_interpreter():
    rng = np.random.default_rng(7)
    cases = []
    for name, text in sorted(PROGRAMS.items()):
        main = aot.infer_types(aot.parse(text))["main"]
        args = [rng.standard_normal([int(d) for d in p.checked_type.shape]).astype(np.float32)
                for p in main.params]
        cases.append(Case(name, text, args, rtol=1e-5, atol=1e-5))
    check_cases(cases, name="overlap")
