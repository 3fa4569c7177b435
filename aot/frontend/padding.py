"""``SAME`` padding of convolutions and pools, shared by the importers."""

from __future__ import annotations


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(small, big) padding of one spatial axis such that the output has
    ``ceil(size / stride)`` positions: the total
    ``max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)``
    split with the odd unit in ``big``.  TensorFlow/TFLite and ONNX's
    ``SAME_UPPER`` pad (small, big) as (begin, end); ``SAME_LOWER`` the
    other way round."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2
