"""einsum (aot/ir/ops/einsum.py): the equation parser, the reference
against NumPy's einsum, relations rejecting bad equations."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.ir.ops.einsum import parse
from aot.ir.registry import RelationError


def test_parse_explicit_implicit_and_ellipsis():
    eq = parse("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)])
    assert (eq.inputs, eq.output, eq.summed) == (("bij", "bjk"), "bik", "j")
    assert parse("ij,jk", [(2, 3), (3, 4)]).output == "ik"         # alphabetical, used once
    assert parse("ii", [(3, 3)]).output == ""                      # the trace
    e = parse("...ij,...jk", [(5, 1, 2, 3), (4, 3, 2)])
    assert len(e.output) == 4 and e.output[2:] == "ik"             # ellipsis first
    assert [e.extents[c] for c in e.output] == [5, 4, 2, 2]        # broadcast 1 -> 4


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "extents 3 and 4"),
    ("ij->ik", [(2, 3)], "is no operand's"),
    ("ij->ii", [(2, 3)], "repeats an axis"),
    ("ijk", [(2, 3)], "names 3 axes"),
    ("ij,jk", [(2, 3)], "names 2 operands"),
    ("i.j", [(2, 3)], "letters"),
    ("...i->i", [(2, 3)], "drops the ellipsis"),
    ("......i", [(2, 3)], "more than one ellipsis"),
])
def test_parse_rejects(equation, shapes, message):
    with pytest.raises(RelationError, match=message):
        parse(equation, shapes)


@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]), ("ij->", [(3, 2)]),
    ("i,j->ij", [(3,), (2,)]), ("...ii->...i", [(2, 3, 3)]), ("ij,jk,kl", [(2, 3), (3, 4), (4, 2)]),
    ("Ab,bC->CA", [(2, 3), (3, 4)]),
])
def test_reference_is_numpy_einsum(equation, shapes):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    params = ", ".join(f"%x{i}: Tensor[({', '.join(map(str, s))}{',' if len(s) == 1 else ''}), "
                       f"float32]" for i, s in enumerate(shapes))
    operands = ", ".join(f"%x{i}" for i in range(len(shapes)))
    mod = aot.parse(f'def @main({params}) {{ einsum(({operands},), equation="{equation}") }}')
    got = aot.interpret(mod, *xs)
    want = np.einsum(equation, *[x.astype(np.float64) for x in xs]).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_integers_accumulate_exactly_then_wrap():
    x = np.full((4,), 100, np.int8)
    mod = aot.parse('def @main(%x: Tensor[(4), int8]) { einsum((%x, %x), equation="i,i") }')
    assert aot.interpret(mod, x) == np.int8(64)    # 40000 = 156 * 256 + 64 wraps to int8


def test_operands_must_share_a_dtype():
    mod = aot.parse('def @main(%a: Tensor[(2), float32], %b: Tensor[(2), int8]) '
                    '{ einsum((%a, %b), equation="i,i") }')
    with pytest.raises(aot.DiagnosticError, match="share a dtype"):
        aot.infer_types(mod)
