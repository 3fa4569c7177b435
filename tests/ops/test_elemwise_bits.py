"""The bitwise operators and shifts (aot/ir/ops/elemwise_bits.py): NumPy's
results for in-range amounts, the defined answers out of range, relations
refusing floats and bools."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "uint64"])
def test_bitwise_is_numpy(dt):
    info = np.iinfo(dt)
    a = RNG.integers(info.min, info.max, (3, 4), dtype=dt, endpoint=True)
    b = RNG.integers(info.min, info.max, (4,), dtype=dt, endpoint=True)
    np.testing.assert_array_equal(run("bitwise_and", a, b), a & b)
    np.testing.assert_array_equal(run("bitwise_or", a, b), a | b)
    np.testing.assert_array_equal(run("bitwise_xor", a, b), a ^ b)
    np.testing.assert_array_equal(run("bitwise_not", a), ~a)
    s = RNG.integers(0, info.bits, (3, 4)).astype(dt)
    np.testing.assert_array_equal(run("left_shift", a, s), a << s)
    np.testing.assert_array_equal(run("right_shift", a, s), a >> s)


def test_shift_amounts_out_of_range():
    a = np.array([-100, 100, -1, 5], np.int8)
    s = np.array([8, 9, -1, 100], np.int8)
    np.testing.assert_array_equal(run("left_shift", a, s), [0, 0, 0, 0])
    np.testing.assert_array_equal(run("right_shift", a, s), [-1, 0, -1, 0])
    u = np.array([200, 7], np.uint8)
    np.testing.assert_array_equal(run("right_shift", u, np.array([8, 255], np.uint8)), [0, 0])
    np.testing.assert_array_equal(run("left_shift", u, np.array([1, 5], np.uint8)),
                                  [144, 224])     # wraps


@pytest.mark.parametrize("op", ["bitwise_and", "left_shift"])
def test_relation_refuses_floats_and_bools(op):
    assert infer(op, [T((2, 3), "int16"), T((3,), "int16")]) == T((2, 3), "int16")
    with pytest.raises(RelationError, match="integer"):
        infer(op, [T((2, 3)), T((2, 3))])
    with pytest.raises(RelationError, match="logical_"):
        infer(op, [T((2,), "bool"), T((2,), "bool")])
