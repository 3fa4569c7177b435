"""The worst-case stack (issue 17.4): the call graph aot writes into
metadata.json (aot.emit.c.stack_graph), the combination with -fstack-usage
frames (aot.emit.build.stack_usage, also the artifact's tools/aot_stack.py),
the figure of the library `aot compile` builds and the make fragment's
`<name>-stack` target with the Arm cross compiler."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aot
from aot.compiler import plan
from aot.emit.build import stack_usage as S
from aot.emit.c.stack_graph import stack_graph
from cases.small_cnn import CNN

ROOT = Path(__file__).resolve().parents[2]
RECURSIVE = """
def @sum(%n: int32) -> int32 {
  if (%n <= 0) { 0 } else { %n + @sum(%n - 1) }
}
def @main(%x: int32) -> int32 { @sum(%x) }
"""
CLOSURES = """
def @twice(%f: fn(int32) -> int32, %x: int32) -> int32 { %f(%f(%x)) }
def @main(%x: int32, %k: int32) -> int32 {
  let %g = fn (%y: int32) -> int32 { %y + %k };
  @twice(%g, %x)
}
"""
ARM_FLAGS = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"


def su(lines: dict[str, int]) -> S.SuFrames:
    return S.parse_su([("t.su", "".join(f"t.c:1:1:{f}\t{n}\tstatic\n"
                                         for f, n in lines.items()))])


# ---------------------------------------------------------------- .su files

def test_parse_su_sums_variants_and_reads_both_compilers_formats():
    got = S.parse_su([("a.su", "src/m.c:10:5:m_f\t32\tstatic\n"
                               "src/m.c:10:5:m_f.part.0\t16\tstatic\n"
                               "runtime_c/aot_runtime.h:138:24:aot_alloc.constprop.0\t12\tstatic\n"
                               "src/m.c:40:m_g\t24\tdynamic,bounded\n"),   # clang: no column
                      ("b.su", "src/n.c:3:1:m_h\t8\tdynamic\n\n")])
    assert got.frames == {"m_f": 48, "aot_alloc": 12, "m_g": 24, "m_h": 8}
    assert got.unbounded == {"m_h"}
    with pytest.raises(S.StackUsageError, match="c.su:1: not a -fstack-usage line"):
        S.parse_su([("c.su", "garbage\n")])


# ------------------------------------------------------- the combination

DATAFLOW = {"entry": "m_run", "calls": {"m_run": ["m_k0", "m_k1"], "m_k0": [], "m_k1": []},
            "counted": [], "marked": None, "helper_prefix": "aot_"}


def test_dataflow_figure_is_the_heaviest_chain_with_helpers_and_inlining():
    fig = S.worst_case(DATAFLOW, su({"m_run": 100, "m_k0": 50, "m_k1": 80}))
    assert (fig.bytes, fig.bound, fig.path) == (180, "call graph", ["m_run", "m_k1"])
    # out-of-line runtime helpers are counted below every function
    fig = S.worst_case(DATAFLOW, su({"m_run": 100, "m_k0": 50, "m_k1": 80, "aot_x": 8,
                                     "aot_y": 4, "m_value_kind": 999}))
    assert fig.bytes == 192 and fig.helpers == {"aot_x": 8, "aot_y": 4}
    # m_k1 inlined into m_run: its frame is part of m_run's
    fig = S.worst_case(DATAFLOW, su({"m_run": 100, "m_k0": 50}))
    assert fig.bytes == 150 and fig.inlined == ["m_k1"]


RECURSIVE_SPEC = {"entry": "r_run", "marked": "r_run_ctx", "helper_prefix": "aot_",
                  "calls": {"r_run": ["r_run_ctx"], "r_run_ctx": ["r_f"],
                            "r_f": ["r_f", "r_k"], "r_k": []},
                  "counted": ["r_f"], "max_depth": 4, "stack_bytes": 1024}
RECURSIVE_FRAMES = {"r_run": 10, "r_run_ctx": 20, "r_f": 30, "r_k": 5}


def test_recursion_is_bounded_by_max_depth_or_the_stack_budget_whichever_is_smaller():
    frames = su(RECURSIVE_FRAMES)
    # max_depth 4: four calls in progress and a fifth that fails in aot_enter
    fig = S.worst_case(RECURSIVE_SPEC, frames)
    assert (fig.bytes, fig.bound, fig.recursive) == (10 + 20 + 5 * 30, "max_depth", ["r_f"])
    # the budget: the entry's frame, 1024 bytes to the deepest check, that frame,
    # and the heaviest of its callees (a failing r_f, 30, against r_k, 5)
    budget = 10 + 20 + 1024 + 30 + 30
    assert fig.budget_bound == budget
    fig = S.worst_case(RECURSIVE_SPEC, frames, max_depth=1000)
    assert (fig.bytes, fig.bound, fig.depth_bound) == (budget, "stack budget", None)
    fig = S.worst_case(RECURSIVE_SPEC, frames, max_depth=1000, stack_bytes=100_000)
    assert (fig.bytes, fig.bound) == (10 + 20 + 1001 * 30, "max_depth")


def test_a_recursive_function_folded_into_its_twin_keeps_a_frame():
    # after PartialEvaluate @main is a copy of @sum: gcc's -fipa-icf folds r_f
    # into r_main (no .su line for r_f), and the recursion runs in r_main's frame
    spec = {**RECURSIVE_SPEC, "calls": {"r_run": ["r_run_ctx"], "r_run_ctx": ["r_main"],
                                        "r_main": ["r_f", "r_k"], "r_f": ["r_f", "r_k"],
                                        "r_k": []},
            "counted": ["r_main", "r_f"]}
    fig = S.worst_case(spec, su({"r_run": 10, "r_run_ctx": 20, "r_main": 30, "r_k": 5}))
    assert (fig.folded, fig.frames["r_f"], fig.inlined) == (["r_f"], 30, [])
    assert (fig.bytes, fig.bound) == (10 + 20 + 5 * 30, "max_depth")
    # a function off every cycle without a line is inlined: frame 0
    fig = S.worst_case(spec, su({"r_run": 10, "r_main": 30, "r_f": 30, "r_k": 5}))
    assert (fig.folded, fig.inlined) == ([], ["r_run_ctx"])


def test_a_deep_max_depth_is_bounded_linearly_past_the_work_limit(monkeypatch):
    monkeypatch.setattr(S, "LEVEL_WORK", 50)
    spec = {**RECURSIVE_SPEC, "marked": None}
    fig = S.worst_case(spec, su(RECURSIVE_FRAMES), max_depth=100)
    exact = 10 + 20 + 101 * 30
    assert exact <= fig.bytes <= 10 + 20 + 101 * 35     # a segment is r_f and r_k at most


# ---------------------------------------------------------- the call graph

def test_the_graph_follows_closure_calls_and_counts_program_functions():
    g = stack_graph(plan(aot.parse(CLOSURES), "clo", opt_level=0))
    assert g["entry"] == "clo_run" and g["marked"] == "clo_run_ctx"
    assert g["calls"]["clo_run"] == ["clo_run_ctx", "clo_static_context"]
    closure_code = [f for f in g["calls"] if f.startswith("clo_fn_")]
    assert closure_code and closure_code[0] in g["calls"]["clo_f_twice_3"]
    assert set(g["counted"]) >= {"clo_f_main_1", "clo_f_twice_3", closure_code[0]}
    assert (g["max_depth"], g["stack_bytes"]) == (10000, 65536)
    dataflow = stack_graph(plan(aot.parse(CNN), "cnn"))
    assert dataflow["counted"] == [] and dataflow["marked"] is None
    assert dataflow["calls"]["cnn_run"] == [f"cnn_k{i}" for i in range(5)]


# ---------------------------------------------- the library aot compile builds

def test_compile_records_the_built_librarys_figure(tmp_path):
    cnn = aot.compile(aot.parse(CNN), tmp_path / "cnn", name="cnn").metadata["stack"]["library"]
    frames = cnn["frames"]
    kernels = [n for f, n in frames.items() if f.startswith("cnn_k")]
    assert cnn["bound"] == "call graph" and cnn["compiler"].startswith(("gcc", "clang"))
    assert cnn["bytes"] == frames["cnn_run"] + max(kernels, default=0) + cnn["helper_bytes"]
    rec = aot.compile(aot.parse(RECURSIVE), tmp_path / "rec", name="rec")
    on_disk = json.loads((tmp_path / "rec" / "metadata.json").read_text())
    fig = on_disk["stack"]["library"]
    assert fig == rec.metadata["stack"]["library"]
    # a 64-byte frame 10,000 deep is more than 64 KiB: the budget bounds it,
    # and the figure holds the entry's frames, the budget and one more frame
    assert fig["bound"] == "stack budget"
    assert fig["bytes"] >= (fig["frames"]["rec_run"] + fig["frames"]["rec_run_ctx"] + 65536
                            + fig["frames"]["rec_f_sum_2"])
    assert fig["bytes"] < 65536 + 4096
    assert (tmp_path / "rec" / "tools" / "aot_stack.py").read_bytes() == \
        Path(S.__file__).read_bytes()


# ------------------------------------------- make <name>-stack, cross compiler

@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                    reason="needs arm-none-eabi-gcc (make deps)")
def test_make_stack_target_with_the_firmware_compiler(tmp_path):
    aot.compile(aot.parse(CNN), tmp_path / "cnn", name="cnn", build=False)
    # built by aot for the core: the figure with the library's flags
    built = aot.compile(aot.parse(RECURSIVE), tmp_path / "rec", name="rec",
                        target="cortex-m4").metadata["stack"]["library"]
    assert built["compiler"].startswith("arm-none-eabi-gcc-")
    (tmp_path / "Makefile").write_text(
        "include cnn/cnn.mk\ninclude rec/rec.mk\nall:\n\t@echo the includer goal\n")
    first = subprocess.run(["make", "-s"], cwd=tmp_path, capture_output=True, text=True)
    assert first.stdout == "the includer goal\n", first.stderr    # not cnn-stack
    figures = {}
    for name, flags in (("cnn", f"{ARM_FLAGS} -Os"), ("rec", " ".join(built["flags"]))):
        upper = name.upper()
        done = subprocess.run(
            ["make", "-s", f"{name}-stack", "CC=arm-none-eabi-gcc", f"CFLAGS={flags}",
             f"{upper}_STACK_ARGS=--json", f"{upper}_PYTHON={sys.executable}"],
            cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        figures[name] = json.loads(done.stdout[done.stdout.index("{"):])
        su_file = tmp_path / f"{name}-stack" / f"{name}.su"
        assert su_file.is_file()
        frames = S.parse_su([(str(su_file), su_file.read_text())]).frames
        assert figures[name]["frames"] == {f: n for f, n in frames.items()
                                           if not f.startswith("aot_") and
                                           f in figures[name]["frames"]} | \
            {f: figures[name]["frames"][f] for f in figures[name]["folded"]}
    cnn = figures["cnn"]
    frames = cnn["frames"]
    kernels = [n for f, n in frames.items() if f.startswith("cnn_k")]
    assert cnn["bytes"] >= frames["cnn_run"] + max(kernels, default=0)
    assert cnn["path"][0] == "cnn_run"
    rec = figures["rec"]
    assert (rec["bytes"], rec["frames"]) == (built["bytes"], built["frames"])
    assert rec["bound"] == "stack budget"
    assert rec["bytes"] >= rec["frames"]["rec_run"] + rec["frames"]["rec_run_ctx"] + 65536
    # the same tool through the command line, another budget for the contexts
    done = subprocess.run([sys.executable, "-m", "aot", "stack", str(tmp_path / "rec"),
                           str(tmp_path / "rec-stack" / "rec.su"), "--stack-bytes", "4096"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "recursion bounded by the stack budget of 4,096 bytes" in done.stdout
    assert int(done.stdout.split("worst-case stack ")[1].split()[0].replace(",", "")) \
        == rec["bytes"] - 65536 + 4096


def test_the_tool_refuses_files_of_another_model(tmp_path):
    aot.compile(aot.parse(CNN), tmp_path / "cnn", name="cnn", build=False)
    other = tmp_path / "other.su"
    other.write_text("src/x.c:1:1:x_run\t16\tstatic\n")
    done = subprocess.run([sys.executable, str(tmp_path / "cnn" / "tools" / "aot_stack.py"),
                           str(tmp_path / "cnn"), str(other)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "no frame of cnn_run in" in done.stderr and "Traceback" not in done.stderr


def test_recompiling_keeps_the_metadata_file_time(tmp_path):
    """metadata.json is written once, with the figure: an unchanged compile
    leaves its time alone (a firmware make sees no change)."""
    mod = aot.parse(RECURSIVE)
    aot.compile(mod, tmp_path / "a", name="rec")
    meta = tmp_path / "a" / "metadata.json"
    stamp = meta.stat().st_mtime_ns - 10**9
    os.utime(meta, ns=(stamp, stamp))
    aot.compile(mod, tmp_path / "a", name="rec")
    assert meta.stat().st_mtime_ns == stamp
    assert "library" in json.loads(meta.read_text())["stack"]


def test_a_figure_that_cannot_be_made_is_a_warning_not_a_failed_compile(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise S.StackUsageError("the graph recurses through x without a counted function")
    monkeypatch.setattr(S, "worst_case", refuse)
    with pytest.warns(aot.diagnostics.AotWarning, match="no worst-case stack figure: the graph"):
        art = aot.compile(aot.parse(RECURSIVE), tmp_path / "a", name="rec")
    assert "library" not in art.metadata["stack"]
    assert art.layout.library.is_file()
