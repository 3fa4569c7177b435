"""The fuzzer in the test suite: a bounded slice of the campaign on every
run, the replay of every saved reproducer, and checks of the machinery
(reproducible draws, shrinking, saving).

The slice runs twice: with a fixed seed (the same programs every run) and
with a seed derived from the commit (``git rev-parse HEAD``, so each
commit explores new programs; without git, a second fixed seed).  Each is
bounded by :data:`SLICE_SECONDS` (checked between C builds), so the two
take about a minute on two cores.  A failure names the item; rerun it with
``python scripts/fuzz.py --seed SEED -n N`` to shrink and save it.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import campaign
import regressions
import shrink
from campaign import Failure, Item, make_item, run_campaign

ROOT = Path(__file__).resolve().parents[2]
FIXED_SEED = 20261127
SLICE_SECONDS = 20
SLICE_ITEMS = 300


def commit_seed() -> int:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = "no-git"
    return int.from_bytes(hashlib.sha256(head.encode()).digest()[:4], "little")


@pytest.mark.parametrize("which", ["fixed", "commit"])
def test_fuzz_slice(which):
    seed = FIXED_SEED if which == "fixed" else commit_seed()
    stats = run_campaign(SLICE_ITEMS, seed, batch=12, deadline=time.monotonic() + SLICE_SECONDS,
                         shrink=False)
    assert stats.programs > 0 and stats.builds > 0
    details = "\n\n".join(f"{f.summary()}\n{f.message}\n{f.item.text}" for f in stats.failures)
    assert not stats.failures, (f"seed {seed}: {len(stats.failures)} of {stats.programs} "
                                f"programs failed (rerun: python scripts/fuzz.py --seed {seed} "
                                f"-n {SLICE_ITEMS}):\n{details}")


def test_saved_reproducers_pass():
    """Every reproducer in tests/fuzz_regressions checks clean (each was a
    failure when saved; it passes once its bug is fixed)."""
    failures = []
    for path in regressions.saved():
        failure = campaign.check_item(regressions.load(path))
        if failure is not None:
            failures.append(f"{path.name}: {failure.summary()}\n{failure.message}")
    assert not failures, "\n\n".join(failures)


# ------------------------------------------------------------- machinery

@pytest.mark.parametrize("family", campaign.FAMILIES)
def test_items_are_reproducible_from_their_seed(family):
    a, b = make_item(family, 1234, slot=2), make_item(family, 1234, slot=2)
    assert a is not None and b is not None
    if family == "onnx":
        assert a.graph.model.SerializeToString() == b.graph.model.SerializeToString()
        assert all(np.array_equal(a.graph.inputs[k], b.graph.inputs[k]) for k in a.graph.inputs)
    else:
        assert a.text == b.text and len(a.specs) == len(b.specs)
    c = make_item(family, 1235, slot=2)
    assert (c.text, c.graph and c.graph.model.SerializeToString()) != \
        (a.text, a.graph and a.graph.model.SerializeToString())


def test_onnx_generator_covers_the_registry():
    """Every converter in the registry is either drawn or excluded with a
    reason (a new converter joins the fuzzer or says why not)."""
    import onnx_graphs
    missing = set(onnx_graphs.uncovered())
    # Gelu exists from opset 20 and GroupNormalization's current version from
    # 21; the graphs are opset 17
    assert missing <= {"Gelu", "GroupNormalization"}, missing
    seen = set()
    for seed in range(150):
        seen.update(onnx_graphs.random_graph(seed).ops)
    assert len(seen) >= 50, sorted(seen)


CHAIN = """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3,), float32]) {
  %0 = add(%x, %y);
  %1 = multiply(%0, 2f);
  let %a = negative(%1);
  %2 = tanh(%a);
  %3 = abs(%2);
  %4 = subtract(%3, %y);
  nn.relu(%4)
}
"""


def test_relay_shrinking_keeps_the_failure_and_drops_the_rest(monkeypatch):
    """A planted failure (any program applying tanh 'mismatches'): the
    reproducer keeps the tanh call and loses everything else it can."""
    def fake_check(item: Item) -> Failure | None:
        import aot
        try:
            aot.infer_types(aot.parse(item.text))
        except aot.DiagnosticError as e:
            return Failure(item, "frontend", str(e))
        return Failure(item, "mismatch", "planted") if "tanh(" in item.text else None

    monkeypatch.setattr(shrink, "check_item", fake_check)
    args = (np.ones((2, 3), np.float32), np.ones(3, np.float32))
    item = Item("chain", 1, CHAIN, args)
    small = shrink.shrink_relay(Failure(item, "mismatch", "planted"))
    body = small.item.text.split("def @main", 1)[1]
    assert "tanh(" in body
    for gone in ("relu", "subtract", "abs"):
        assert gone not in body, small.item.text
    assert len(small.item.text) < len(CHAIN)


def test_onnx_shrinking_cuts_to_the_failing_node(monkeypatch):
    """A planted failure (any graph with an Exp node): the reproducer is
    the Exp node alone, fed with the value onnxruntime computed for its
    input."""
    import onnx_graphs
    seed = next(s for s in range(500)
                if "Exp" in (g := onnx_graphs.random_graph(s)).ops and len(g.ops) >= 4
                and g.ops.index("Exp") > 0)
    graph = onnx_graphs.random_graph(seed)

    def fake_check(item: Item) -> Failure | None:
        return Failure(item, "mismatch", "planted") if "Exp" in item.graph.ops else None

    monkeypatch.setattr(shrink, "check_item", fake_check)
    small = shrink.shrink_onnx(Failure(Item("onnx", seed, graph=graph), "mismatch", "planted"))
    assert small.item.graph.ops == ["Exp"], small.item.graph.ops


def test_reproducers_save_and_load_exactly(tmp_path):
    from random_programs import CtorSpec
    specs = (np.array([0.25, -1.5, 3.0], np.float32), np.array(3, np.int32),
             (np.array(1, np.int32), CtorSpec("Cons", (np.array(2, np.int32), CtorSpec("Nil")))))
    item = Item("lang", 42, '#[version = "0.0.5"]\ndef @main() { 1 }\n', specs)
    path = regressions.save(Failure(item, "mismatch", "x"), tmp_path)
    back = regressions.load(path)
    assert (back.family, back.seed, back.text) == ("lang", 42, item.text)
    assert repr(back.specs) == repr(specs)
    assert regressions.save(Failure(item, "mismatch", "x"), tmp_path) == path  # content hash

    g = make_item("onnx", 7)
    path = regressions.save(Failure(g, "mismatch", "x"), tmp_path)
    back = regressions.load(path)
    assert (back.family, back.seed) == ("onnx", 7)
    assert back.graph.ops == g.graph.ops
    for k, v in g.graph.inputs.items():
        assert np.array_equal(back.graph.inputs[k], v) and back.graph.inputs[k].dtype == v.dtype
