"""Small float programs for the quantization flow's tests (aot.quantize):
every operator its annotation rules cover, seeded weights bound as
constants, seeded calibration and evaluation inputs."""

from __future__ import annotations

import numpy as np

import aot
from aot.passes.bind_params import bind_params

#: conv -> bias -> relu -> conv (1x1) -> residual add -> relu -> max pool ->
#: concatenate -> avg pool -> conv 3x3 (second input channel block) ->
#: global average pool -> flatten -> dense -> bias -> softmax
SMALL_CNN = """
def @main(%x: Tensor[(1, 3, 12, 12), float32], %w1: Tensor[(8, 3, 3, 3), float32],
          %b1: Tensor[(8), float32], %w2: Tensor[(8, 8, 1, 1), float32],
          %w3: Tensor[(16, 16, 3, 3), float32], %wd: Tensor[(10, 16), float32],
          %bd: Tensor[(10), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, padding=[0, 0, 0, 0], channels=8, kernel_size=[1, 1]);
  %4 = add(%3, %2);
  %5 = nn.relu(%4);
  %6 = nn.max_pool2d(%5, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0]);
  %7 = concatenate((%6, %6), axis=1);
  %8 = nn.avg_pool2d(%7, pool_size=[2, 2], strides=[1, 1], padding=[0, 0, 0, 0]);
  %9 = nn.conv2d(%8, %w3, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %10 = clip(%9, a_min=0f, a_max=6f);
  %11 = nn.global_avg_pool2d(%10);
  %12 = nn.batch_flatten(%11);
  %13 = nn.dense(%12, %wd, units=10);
  %14 = nn.bias_add(%13, %bd);
  nn.softmax(%14)
}
"""

SHAPE = (1, 3, 12, 12)


def small_cnn() -> aot.IRModule:
    rng = np.random.default_rng(7)

    def he(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    params = {"w1": he(8, 3, 3, 3), "b1": (0.1 * rng.standard_normal(8)).astype(np.float32),
              "w2": he(8, 8, 1, 1), "w3": he(16, 16, 3, 3), "wd": he(10, 16),
              "bd": (0.1 * rng.standard_normal(10)).astype(np.float32)}
    return aot.infer_types(bind_params(aot.infer_types(aot.parse(SMALL_CNN)), params))


def inputs(count: int, seed: int, shape: tuple[int, ...] = SHAPE) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def calibration(count: int = 8, shape: tuple[int, ...] = SHAPE) -> list[list[np.ndarray]]:
    """Argument lists for aot.quantize (seed 1000 on: distinct from evaluation)."""
    return [[x] for x in inputs(count, 1000, shape)]
