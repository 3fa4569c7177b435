"""The lowering column of the operator records: every operator of the
catalogue has one, and its kind agrees with the operator's fusion pattern
(FuseOps puts at most one anchor in a group, so an elementwise, broadcast
or injective operator must lower to index expressions)."""

import pytest

from aot.emit.lower.registry import all_lowerings, lookup_lowering
from aot.ir.registry import PatternKind, all_ops

OPS = all_ops()


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_every_operator_has_a_lowering(op):
    assert lookup_lowering(op.name) is not None, f"{op.name} has no C lowering"


@pytest.mark.parametrize("op", [o for o in OPS if o.pattern <= PatternKind.INJECTIVE],
                         ids=lambda o: o.name)
def test_fusable_operators_lower_to_index_expressions(op):
    lowering = lookup_lowering(op.name)
    assert lowering is not None and not lowering.anchor, \
        f"{op.name} is {op.pattern.name} but has an anchor lowering"


def test_no_lowering_for_unknown_operators():
    names = {o.name for o in OPS}
    extra = sorted(set(all_lowerings()) - names)
    assert not extra, f"lowerings of operators not in the catalogue: {extra}"
