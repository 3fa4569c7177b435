"""Depthwise 3x3 int8 convolutions (qnn.conv2d, channels-first, constant
symmetric weight) for the DSP depthwise kernel's tests
(tests/e2e/test_qnn_depthwise.py): its strides, paddings and borders,
odd widths, rows of exactly 4 bytes and of fewer, maps of one row, and
shapes it leaves to the general lowering."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DwCase:
    name: str
    shape: tuple[int, int, int, int]
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]
    zx: int
    #: requantize the accumulators to int8 (the fused epilogue)
    requant: bool = False
    #: add a per-channel int32 bias first (folded into the start values)
    bias: bool = False


CASES = [
    DwCase("s1p1-odd", (2, 3, 7, 9), (1, 1), (1, 1, 1, 1), -128, True, True),
    DwCase("s1p1-dscnn", (1, 4, 25, 5), (1, 1), (1, 1, 1, 1), 5),
    DwCase("s1p1-w4", (1, 2, 3, 4), (1, 1), (1, 1, 1, 1), 127),
    DwCase("s1p1-h1", (1, 2, 1, 6), (1, 1), (1, 1, 1, 1), -3),
    DwCase("s1p1-w13", (1, 2, 4, 13), (1, 1), (1, 1, 1, 1), 0, False, True),
    DwCase("s2-same", (1, 3, 8, 8), (2, 2), (0, 0, 1, 1), -7, True),
    DwCase("s2p1-odd", (1, 3, 9, 11), (2, 2), (1, 1, 1, 1), 0),
    DwCase("s2-small", (1, 2, 6, 6), (2, 2), (0, 0, 1, 1), 3),
    DwCase("s2-w17", (1, 2, 5, 17), (2, 2), (1, 1, 1, 1), -100),
    DwCase("s1p0-w4", (1, 2, 5, 4), (1, 1), (0, 0, 0, 0), -1),
    DwCase("s1p0-w10", (2, 2, 4, 10), (1, 1), (0, 0, 0, 0), 60),
    DwCase("s12-mixed", (1, 2, 6, 9), (1, 2), (1, 0, 0, 1), 9),
    DwCase("s21-mixed", (1, 2, 7, 6), (2, 1), (0, 1, 1, 0), -50),
    # rows narrower than a word (MobileNet's last 3x3 maps: words from bytes)
    DwCase("s1p1-w3", (1, 3, 3, 3), (1, 1), (1, 1, 1, 1), -128, True, True),
    DwCase("s1p1-w2", (1, 2, 4, 2), (1, 1), (1, 1, 1, 1), 4),
    DwCase("s2p1-w3", (1, 2, 5, 3), (2, 2), (1, 1, 1, 1), -9),
    DwCase("s1p0-w3", (2, 2, 4, 3), (1, 1), (0, 0, 0, 0), 77),
    # left to the general lowering: padding 2
    DwCase("p2-general", (1, 2, 5, 6), (1, 1), (2, 2, 2, 2), 4),
]

#: the cases the DSP kernel takes
SELECTED = frozenset(c.name for c in CASES if not c.name.endswith("-general"))


def _weights(c: int) -> str:
    """A constant int8 weight (C, 1, 3, 3) covering -128..127 (folded at
    compile time into a table)."""
    n = 9 * c
    return (f'reshape(cast(subtract(mod(multiply(arange(0f, {n}f, 1f, start=0f, stop={n}f, '
            f'step=1f, dtype="float32"), 37f), 256f), 128f), dtype="int8"), '
            f'newshape=[{c}, 1, 3, 3])')


def _vec(n: int, first: float, step: float) -> str:
    return (f'add(multiply(arange(0f, {n}f, 1f, start=0f, stop={n}f, step=1f, '
            f'dtype="float32"), {step!r}f), {first!r}f)')


def layer(c: DwCase, x: str) -> str:
    """The case's layer applied to ``x`` (Relay text)."""
    chans = c.shape[1]
    conv = (f'qnn.conv2d({x}, {_weights(chans)}, {c.zx}, 0, 0.5f, 0.25f, '
            f'strides={list(c.strides)}, padding={list(c.padding)}, groups={chans}, '
            f'channels={chans}, kernel_size=[3, 3])')
    if c.bias:
        bias = (f'reshape(cast(subtract(multiply(arange(0f, {chans}f, 1f, start=0f, '
                f'stop={chans}f, step=1f, dtype="float32"), 917f), 1500f), dtype="int32"), '
                f'newshape=[1, {chans}, 1, 1])')
        conv = f'add({conv}, {bias})'
    if not c.requant:
        return conv
    return (f'qnn.requantize({conv}, {_vec(chans, 0.004, 0.003)}, 0, 0.5f, -3, axis=1, '
            f'out_dtype="int8")')


def network() -> str:
    """One program of every requantized case on inputs of their shapes:
    the firmware test's model (examples/embedded compares each output)."""
    picked = [c for c in CASES if c.requant] + [
        c for c in CASES if not c.requant and c.name in SELECTED]
    params = ", ".join(f"%x{i}: Tensor[{c.shape}, int8]" for i, c in enumerate(picked))
    outs = []
    for i, c in enumerate(picked):
        body = layer(c, f"%x{i}")
        if not c.requant:   # int8 outputs for the firmware's check
            body = f'clip({body}, a_min=-128f, a_max=127f)'
            body = f'cast({body}, dtype="int8")'
        outs.append(body)
    return f"def @main({params}) {{\n  ({', '.join(outs)})\n}}\n"
