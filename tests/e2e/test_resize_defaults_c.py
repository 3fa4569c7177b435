"""``image.resize2d`` nearest, built with the builder's defaults (Relay's
Python API: ``rounding_method=""``, TOPI's choice), against a reference
computed as TOPI computes it -- float32 coordinates (``get_inx``),
``round`` for ``align_corners`` and ``floor(v + 1e-5)`` for every other
mode (``get_closest_index``), ``o // s`` for an ``asymmetric`` whole-factor
upscale (TOPI's integer-division path, a floor too) -- in the interpreter
and in C.

On these sizes TOPI's ``+ 1e-5`` never matters: every exact coordinate is
a multiple of 1/30 (``align_corners``: ``7o/15``; the half-pixel modes:
quarters), so a non-integer one is at least 1/30 below the next integer,
and float32 represents the quarters exactly and ``7o/15`` within 1e-6
(``test_the_epsilon_does_not_matter_here`` checks both)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.ops.image import CoordinateMode, RoundingMethod, source_coordinate
from aot.ir.printer import print_module
from c_harness import Case, check_cases

MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn"]
IN, OUT = 8, 16


def topi_coordinate(o: int, size_in: int, size_out: int, mode: str) -> np.float32:
    """``get_inx`` in float32."""
    f = np.float32
    scale = f(size_in) / f(size_out)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        return (f(o) + f(0.5)) * scale - f(0.5)
    if mode == "align_corners":
        return f(size_in - 1) / f(size_out - 1) * f(o)
    if mode == "asymmetric":
        return scale * f(o)
    assert mode == "tf_half_pixel_for_nn"
    return (f(o) + f(0.5)) * scale


def topi_index(o: int, size_in: int, size_out: int, mode: str) -> int:
    """TOPI's nearest index with ``rounding_method=""``, clamped."""
    if mode == "asymmetric" and size_out % size_in == 0:
        i = o // (size_out // size_in)
    else:
        v = topi_coordinate(o, size_in, size_out, mode)
        i = round(float(v)) if mode == "align_corners" else math.floor(v + np.float32(1e-5))
    return min(max(i, 0), size_in - 1)


def reference(x: np.ndarray, mode: str) -> np.ndarray:
    idx = [topi_index(o, IN, OUT, mode) for o in range(OUT)]
    return x[:, :, idx, :][:, :, :, idx]


def program(mode: str) -> aot.IRModule:
    x = B.var("x", B.tensor((1, 2, IN, IN), "float32"))
    call = B.image.resize2d(x, size=(OUT, OUT), method="nearest_neighbor",
                            coordinate_transformation_mode=mode)
    assert call.attrs.rounding_method is RoundingMethod.AUTO
    return B.module(main=B.function([x], call))


def data() -> np.ndarray:
    return np.arange(2 * IN * IN, dtype=np.float32).reshape(1, 2, IN, IN)


@pytest.mark.parametrize("mode", MODES)
def test_interpreter_matches_topi(mode):
    np.testing.assert_array_equal(aot.interpret(program(mode), data()), reference(data(), mode))


def test_c_matches_interpreter_and_topi():
    cases = [Case(f"resize2d-nearest-{mode}", print_module(program(mode)), [data()])
             for mode in MODES]
    check_cases(cases, name="resize_defaults")
    # and the interpreter (which check_cases compared the C with) is TOPI's
    for mode in MODES:
        want = aot.interpret(aot.parse(print_module(program(mode))), data())
        np.testing.assert_array_equal(want, reference(data(), mode))


def test_text_default_is_the_cpp_round():
    """Relay text without ``rounding_method`` is C++'s ``"round"``: half
    up, which differs from the builder's floor for half_pixel."""
    text = (f"def @main(%x: Tensor[(1, 2, {IN}, {IN}), float32]) {{ image.resize2d(%x, "
            f'size=[{OUT}, {OUT}], method="nearest_neighbor") }}')
    got = aot.interpret(aot.parse(text), data())
    idx = [min(math.floor(source_coordinate(o, IN, OUT, CoordinateMode.HALF_PIXEL)
                          + Fraction(1, 2)), IN - 1) for o in range(OUT)]
    np.testing.assert_array_equal(got, data()[:, :, idx, :][:, :, :, idx])
    assert not np.array_equal(got, reference(data(), "half_pixel"))


@pytest.mark.parametrize("mode", MODES)
def test_the_epsilon_does_not_matter_here(mode):
    """floor(exact) == floor(float32 + 1e-5) for every output index: TOPI's
    epsilon changes nothing on 8 -> 16, so the exact reference is TOPI's."""
    m = CoordinateMode(mode)
    for o in range(OUT):
        exact = source_coordinate(o, IN, OUT, m)
        f32 = topi_coordinate(o, IN, OUT, mode)
        assert abs(Fraction(float(f32)) - exact) < Fraction(1, 10**6)
        if exact.denominator > 1:
            assert math.ceil(exact) - exact >= Fraction(1, 30)
        assert math.floor(exact) == math.floor(f32 + np.float32(1e-5))
