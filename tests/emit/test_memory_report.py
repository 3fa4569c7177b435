"""The memory report (issue 17.6): the arena's tensors as SVG boxes
(offset against kernel call) and a text table, read from the plan."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET

import aot
from aot.compiler import plan
from aot.emit.build.memory_report import (arena_tensors, live_bytes, memory_svg, memory_table,
                                          peak_step)
from aot.emit.plan.model import ArgKind
from cases.small_cnn import CNN

SVG = "{http://www.w3.org/2000/svg}"
#: at opt level 0 every operator is a kernel: relu and multiply write over their input
CHAIN = """
def @main(%x: Tensor[(64,), float32], %y: Tensor[(64,), float32]) {
  %0 = add(%x, 1f);
  %1 = nn.relu(%0);
  %2 = multiply(%1, %y);
  %3 = tanh(%2);
  %4 = concatenate((%3, %0));
  sigmoid(%4)
}
"""



@functools.cache
def _plans():
    return {"cnn": plan(aot.parse(CNN), "cnn"),
            "chain": plan(aot.parse(CHAIN), "chain", opt_level=0)}


def _arena_writes(p):
    """(call, offset, bytes) of every arena buffer a call writes."""
    kernels = {k.name: k for k in p.kernels}
    return {(i, a.offset, a.size * a.dtype.itemsize)
            for i, call in enumerate(p.calls)
            for prm, a in zip(kernels[call.kernel].params, call.args)
            if a.kind is ArgKind.ARENA and prm.scope.value not in ("input", "const")}


def test_one_box_per_planned_tensor_at_its_offset_and_steps():
    for name, p in _plans().items():
        tensors = arena_tensors(p)
        assert {(t.start, t.offset, t.nbytes) for t in tensors} == _arena_writes(p), name
        root = ET.fromstring(memory_svg(p))             # well-formed XML
        assert root.tag == SVG + "svg"
        boxes = [r for r in root.iter(SVG + "rect") if r.get("class") == "tensor"]
        assert len(boxes) == len(tensors) > 0, name
        assert [r.find(SVG + "title").text.split(":")[0] for r in boxes] == \
            [f"t{t.index}" for t in tensors]
        # a box's x is its first step, its width its lifetime, in columns
        col = (float(boxes[0].get("width")) + 2) / (tensors[0].end - tensors[0].start + 1)
        for r, t in zip(boxes, tensors):
            assert float(r.get("width")) == (t.end - t.start + 1) * col - 2
            assert float(r.get("x")) - float(boxes[0].get("x")) == t.start * col
        assert len([x for x in root.iter(SVG + "line") if x.get("class") == "lower-bound"]) == 1
        peaks = [r for r in root.iter(SVG + "rect") if r.get("class") == "peak"]
        assert len(peaks) == 1
        # tensors live at once never share bytes, but for an output written over its
        # input at the input's last step
        for a in tensors:
            for b in tensors:
                if a.index < b.index and a.start <= b.end and b.start <= a.end:
                    overlap = (a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes)
                    assert not overlap or a.end == b.start, (name, a, b)


def test_in_place_outputs_follow_their_inputs_and_the_peak_is_the_lower_bound():
    p = _plans()["chain"]
    assert dict(p.extra)["inplace"] >= 1
    tensors = arena_tensors(p)
    inplace = [(a, b) for a in tensors for b in tensors
               if a.end == b.start and a.offset == b.offset and a is not b]
    assert inplace                              # drawn as touching boxes at one offset
    live = live_bytes(p, tensors)
    assert max(live) == p.arena_lower_bound_bytes
    assert peak_step(p, tensors) == live.index(max(live))


def test_the_report_is_deterministic_and_the_table_lists_every_tensor():
    p = _plans()["cnn"]
    assert memory_svg(p) == memory_svg(plan(aot.parse(CNN), "cnn"))
    table = memory_table(p)
    assert table.startswith(f"arena of `cnn`: {p.arena_bytes:,} bytes (lower bound ")
    rows = [line for line in table.splitlines()[3:]]
    assert len(rows) == len(arena_tensors(p))
    assert f"peak at call {peak_step(p, arena_tensors(p))} " in table


def test_a_program_has_no_arena_and_still_a_valid_picture():
    p = plan(aot.parse("def @f(%n: int32) -> int32 { if (%n <= 0) { 0 } else { @f(%n - 1) } }\n"
                       "def @main(%x: int32) -> int32 { @f(%x) }"), "prog")
    root = ET.fromstring(memory_svg(p))
    assert not [r for r in root.iter(SVG + "rect") if r.get("class") == "tensor"]
    assert "object pool" in memory_table(p)
