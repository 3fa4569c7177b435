"""A slice of the PartialEvaluate sweep (``scripts/pe_sweep.py``, issue 17)
on every test run: random whole-language programs through the opt-level-3
PROGRAM pipeline with PartialEvaluate, interpreted before and after, with
dynamic arguments and with main's tensors bound to constants.
Interpreter only (no C build), without the per-pass verifier (the
pipeline's own InferType passes type-check the result; the full sweep
verifies PartialEvaluate's output), in four chunks xdist can spread
(67 s of one core in all at a load average of 12 on the 2-core machine).  A
failure names the item's seed; ``python scripts/pe_sweep.py --seed SEED``
reruns the sweep it comes from with the verifier and C."""

from __future__ import annotations

import pytest

from campaign import make_item, prepare
from pe_sweep import FAMILY, MODES, check_item, check_mode, item_seed

SEED = 20261128
CHUNKS, PER_CHUNK = 4, 25


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_mean_the_same_after_partial_evaluation(chunk: int) -> None:
    failures, checked = [], 0
    for i in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
        item = make_item("lang", item_seed(SEED, FAMILY, i))
        if item is None:
            continue
        p = prepare(item)
        assert not isinstance(p, str), p
        assert not hasattr(p, "kind"), p.summary()
        for mode in MODES:
            f = check_mode(p, mode, verify="none")
            checked += 1
            if f is not None:
                failures.append(f"{f.summary()} (item seed {item.seed})\n{f.message}\n{item.text}")
    assert checked >= PER_CHUNK, f"only {checked} checks: the generator overran"
    assert not failures, f"sweep seed {SEED}:\n" + "\n\n".join(failures)


def test_a_failure_is_reported_with_its_program(monkeypatch) -> None:
    """The check can fail: a pipeline that changes the result is caught."""
    import pe_sweep
    from aot.ir.expr import Constant, Function
    import numpy as np

    real = pe_sweep.program_pipeline

    def wrong(mod, **kw):
        out = real(mod, **kw)
        main = out["main"]
        if kw.get("pe"):
            # every int32 scalar constant c becomes c + 1: a miscompilation
            from aot.ir.visitor import ExprMutator

            class Bump(ExprMutator):
                def visit_constant(self, node):
                    if node.data.dtype == np.int32 and node.data.shape == ():
                        return Constant(node.data + np.int32(1))
                    return node
            out = out.copy()
            body = Bump().visit(main.body)
            out.add(out.get_global_var("main"), Function(main.params, body, None,
                                                         main.type_params, main.attrs))
        return out

    monkeypatch.setattr(pe_sweep, "program_pipeline", wrong)
    text = ('#[version = "0.0.5"]\ndef @main(%x1: int32, %x2: Tensor[(3,), float32]) -> int32 '
            '{\n  %x1 + 1\n}\n')
    from campaign import Item
    item = Item("lang", 0, text, (np.array(3, np.int32), np.zeros(3, np.float32)))
    failures = check_item(item)
    assert [f.kind for f in failures] == ["dynamic-mismatch", "static-mismatch"]
    assert "without PartialEvaluate: the same value as before" in failures[0].message
