"""The registry mechanism of aot/registry.py, behind the operator records,
lowerings, ONNX converters and passes (tests/ops/test_registry.py checks
the operator records themselves)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aot.registry import NotRegistered, Registry


class Entry:
    def __init__(self, name: str) -> None:
        self.name = name


def filled(*names: str) -> Registry[str, Entry]:
    reg: Registry[str, Entry] = Registry("widget")
    for n in names:
        reg.register(n, Entry(n))
    return reg


def test_register_returns_the_entry_and_lookup_finds_it():
    reg: Registry[str, Entry] = Registry("widget")
    e = Entry("a")
    assert reg.register("a", e) is e
    assert reg.lookup("a") is e and reg.get("a") is e and "a" in reg


def test_a_name_is_registered_once():
    reg = filled("a")
    with pytest.raises(AssertionError, match="widget 'a' registered twice"):
        reg.register("a", Entry("a"))
    same = reg.get("a")
    assert reg.register("a", same) is same          # the same object again is fine


def test_lookup_miss_names_the_kind_the_closest_and_the_known():
    reg = filled("conv2d", "dense", "relu")
    assert reg.get("conv3d") is None and "conv3d" not in reg
    with pytest.raises(NotRegistered) as info:
        reg.lookup("conv3d")
    assert str(info.value) == ("unknown widget 'conv3d'; did you mean conv2d? "
                               "(known: conv2d, dense, relu)")
    with pytest.raises(NotRegistered, match=r"^unknown widget 'zzz' \(known: conv2d, dense"):
        reg.lookup("zzz")
    assert "known: none" in str(pytest.raises(NotRegistered, Registry("x").lookup, "a").value)


def test_iteration_is_sorted_whatever_the_registration_order():
    reg = filled("b", "c", "a")
    assert reg.keys() == ["a", "b", "c"]
    assert [e.name for e in reg] == ["a", "b", "c"] == [e.name for e in reg.values()]
    assert [k for k, _ in reg.items()] == ["a", "b", "c"] and len(reg) == 3
    pairs = Registry[tuple[str, str], int]("converter")
    pairs.register(("com.x", "A"), 1)
    pairs.register(("", "B"), 2)
    assert pairs.values() == [2, 1]


def test_the_family_loads_once_on_first_need():
    loads = []

    def load() -> None:
        loads.append(reg.register("x", Entry("x")))
    reg: Registry[str, Entry] = Registry("widget", load)
    reg.register("early", Entry("early"))
    assert reg.get("early") is not None and loads == []     # a hit loads nothing
    assert reg.get("x") is not None and len(loads) == 1      # a miss loads the family
    assert reg.get("nope") is None and reg.keys() == ["early", "x"] and len(loads) == 1


def test_iteration_loads_the_family():
    reg: Registry[str, Entry] = Registry("widget", lambda: reg.register("x", Entry("x")))
    assert [e.name for e in reg] == ["x"]


def test_a_family_module_reading_the_table_while_loading_sees_it_so_far():
    seen = []

    def load() -> None:
        reg.register("a", Entry("a"))
        seen.append((reg.get("b"), reg.keys()))             # no re-entry
        reg.register("b", Entry("b"))
    reg: Registry[str, Entry] = Registry("widget", load)
    assert reg.keys() == ["a", "b"] and seen == [(None, ["a"])]


def test_a_failed_load_is_retried():
    attempts = []

    def load() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("broken family")
        reg.register("x", Entry("x"))
    reg: Registry[str, Entry] = Registry("widget", load)
    with pytest.raises(ImportError):
        reg.get("x")
    assert reg.get("x") is not None and len(attempts) == 2


def test_scratch_restores_the_loaded_table():
    reg: Registry[str, Entry] = Registry("widget", lambda: reg.register("x", Entry("x")))
    with reg.scratch():
        reg.register("tmp", Entry("tmp"))
        reg.unregister("x")
        assert reg.keys() == ["tmp"]
    assert reg.keys() == ["x"]


def test_every_table_is_a_registry():
    from aot.emit.lower.registry import LOWERINGS
    from aot.frontend.onnx.registry import CONVERTERS
    from aot.frontend.tflite.registry import CONVERTERS as TFLITE_CONVERTERS
    from aot.ir.registry import OPS
    from aot.passes.manager import PASSES
    for reg in (OPS, LOWERINGS, CONVERTERS, TFLITE_CONVERTERS, PASSES):
        assert isinstance(reg, Registry) and len(reg) > 0


def test_a_miss_tries_the_guessed_module_before_the_family():
    loads, guesses = [], []
    x, y = Entry("x"), Entry("y")

    def load() -> None:
        loads.append(1)
        reg.register("x", x)
        reg.register("y", y)

    def load_one(key: str) -> None:
        guesses.append(key)
        if key == "x":
            reg.register("x", x)
    reg: Registry[str, Entry] = Registry("widget", load, load_one)
    assert reg.get("x") is x and guesses == ["x"] and loads == []        # the guess hit
    assert reg.get("y") is y and guesses == ["x", "y"] and loads == [1]  # it missed
    assert reg.get("z") is None and guesses == ["x", "y"] and loads == [1]  # loaded: no guess


def test_every_pipeline_pass_is_found_by_its_module_name():
    """A dataflow compile imports only the passes it runs: each pass of the
    graph-form and dataflow pipelines is found in the module its name gives
    (a fresh interpreter: this one may have loaded every pass already)."""
    code = ("from aot.passes.manager import PASSES, get_pass\n"
            "from aot.passes.pipelines import DATAFLOW, GRAPH_FORM\n"
            "for name in GRAPH_FORM.names + DATAFLOW.names + ('Specialize',):\n"
            "    get_pass(name)\n"
            "    assert PASSES._state == 'idle', name\n")
    subprocess.run([sys.executable, "-c", code], check=True)
