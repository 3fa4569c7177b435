"""nn.mirror_pad (aot/ir/ops/nn_mirror.py): the borders element by element
and the relation's width limits."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run


def test_reflect_and_symmetric_borders():
    x = np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(run("nn.mirror_pad", x, pad_width=[[2, 2]], mode="REFLECT"),
                                  [3, 2, 1, 2, 3, 2, 1])
    np.testing.assert_array_equal(run("nn.mirror_pad", x, pad_width=[[3, 1]]),
                                  [3, 2, 1, 1, 2, 3, 3])
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run("nn.mirror_pad", m, pad_width=[[1, 0], [0, 2]], mode="REFLECT")
    np.testing.assert_array_equal(got, [[3, 4, 5, 4, 3], [0, 1, 2, 1, 0], [3, 4, 5, 4, 3]])


@pytest.mark.parametrize("attrs,message", [
    ({"pad_width": [[3, 0]], "mode": "REFLECT"}, "at most 2"),
    ({"pad_width": [[0, 4]]}, "at most 3"),
    ({"pad_width": [[-1, 0]]}, "non-negative"),
    ({"pad_width": [[1, 0], [1, 0]]}, "rank 1"),
    ({"pad_width": [[1, 0]], "mode": "EDGE"}, "REFLECT or SYMMETRIC"),
])
def test_relation_rejects(attrs, message):
    with pytest.raises(RelationError, match=message):
        infer("nn.mirror_pad", [T((3,))], **attrs)
    assert infer("nn.mirror_pad", [T((3, 2))], pad_width=[[3, 0], [1, 2]]) == T((6, 5))
