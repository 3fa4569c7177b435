"""``aot profile``: instructions per kernel call on a Cortex-M core under
QEMU (and wall time on the host), with the model's node names, as a table
and as JSON; the README's DS-CNN table is what the command prints today."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.cli import main
from aot.emit.build.toolchain import find_toolchain
from aot.profiler import profile_module

REPO = Path(__file__).resolve().parents[2]

needs_qemu = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
    reason="needs arm-none-eabi-gcc and qemu-system-arm (make deps)")


def elementwise(n: int) -> aot.IRModule:
    """Two kernels over n floats: an elementwise chain fused into a
    softmax, then a second softmax."""
    return aot.infer_types(aot.parse(
        f"def @main(%x: Tensor[({n}), float32]) {{ nn.softmax(nn.softmax(nn.relu(%x * 2f + 1f))) }}"))


def named_onnx(tmp_path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    w = np.random.default_rng(1).standard_normal((4, 2, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu1"),
         helper.make_node("GlobalAveragePool", ["r"], ["y"], name="gap")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.reshape(-1).tolist())])
    path = tmp_path / "net.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@needs_qemu
def test_instruction_counts_are_exact_and_scale_with_the_work(tmp_path):
    small = profile_module(elementwise(1024), target="cortex-m4", work_dir=tmp_path / "a")
    again = profile_module(elementwise(1024), target="cortex-m4", work_dir=tmp_path / "b")
    large = profile_module(elementwise(2048), target="cortex-m4", work_dir=tmp_path / "c")
    assert small == again                                  # exact, run to run
    assert [c.ops for c in small.calls] == [("multiply", "add", "nn.relu", "nn.softmax"),
                                            ("nn.softmax",)]
    assert small.unit == "instructions" and "mps2-an386" in small.where
    for s, big in zip(small.calls, large.calls):
        assert 1.9 < big.value / s.value < 2.1, (s, big)   # twice the elements, twice the work
    assert small.calls[0].value > 1024                     # at least one instruction each
    assert small.total == sum(c.value for c in small.calls) + small.outside_calls
    assert 0 < small.outside_calls < 100                   # the entry's checks and calls


@needs_qemu
def test_the_command_prints_a_table_with_node_names_and_writes_json(tmp_path, capsys):
    model = named_onnx(tmp_path)
    report = tmp_path / "p.json"
    assert main(["profile", str(model), "--target", "cortex-m7", "--json", str(report),
                 "--name", "net", "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "net.onnx on cortex-m7 (QEMU mps2-an500, instructions), 2 kernel calls"
    data = json.loads(report.read_text())
    assert [c["nodes"] for c in data["calls"]] == [["conv1", "relu1"], ["gap"]]
    assert data["unit"] == "instructions" and data["target"] == "cortex-m7"
    assert abs(sum(c["share"] for c in data["calls"]) + data["outside_calls"] / data["total"]
               - 1.0) < 1e-9
    first = out[2].split()
    assert first[:3] == ["0", "net_k0", f"{int(data['calls'][0]['value']):,}"], out
    assert out[2].endswith("conv1, relu1") and out[3].endswith("gap")
    assert out[-1].split()[:2] == ["total", f"{int(data['total']):,}"], out


def test_the_host_profile_times_each_call(tmp_path):
    profile = profile_module(elementwise(4096), target="host", work_dir=tmp_path, runs=5)
    assert profile.unit == "us" and "median of 5 runs" in profile.where
    assert len(profile.calls) == 2 and all(c.value > 0 for c in profile.calls)
    assert profile.total >= sum(c.value for c in profile.calls)
    # built with the default host build's flags (gcc's miscompile workaround
    # included), which the profile names
    flags = " ".join(find_toolchain().codegen_flags)
    assert flags and f" {flags}, median" in profile.where


def test_programs_without_a_call_list_are_refused(tmp_path, capsys):
    # a list as long as a run-time count: the whole-language backend, no
    # kernel call list
    program = tmp_path / "p.relay"
    program.write_text("def @mk(%n: int32, %x: Tensor[(3), float32]) -> List[Tensor[(3), float32]] {\n"
                       "  if (%n <= 0) { Nil } else { Cons(%x, @mk(%n - 1, %x + %x)) }\n}\n"
                       "def @main(%x: Tensor[(3), float32], %n: int32) {\n"
                       "  @length(@mk(%n, %x))\n}\n")
    assert main(["profile", str(program), "--target", "host", "-q"]) == 1
    assert "aot profile measures static tensor programs" in capsys.readouterr().err


def test_static_branches_are_refused_on_the_host(tmp_path, capsys):
    # an if over tensors is a static if: its kernels may run or not per call
    program = tmp_path / "p.relay"
    program.write_text("def @main(%x: Tensor[(3), float32], %n: int32) {\n"
                       "  if (%n > 0) { %x + %x } else { %x }\n}\n")
    assert main(["profile", str(program), "--target", "host", "-q"]) == 1
    assert "this model has loops or branches" in capsys.readouterr().err


def test_an_unknown_core_is_refused_before_the_compile(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["profile", "x.onnx", "--target", "cortex-m85"])
    assert exit_info.value.code == 2
    from aot.profiler.qemu import board_of
    from aot.emit.build.targets import Target
    with pytest.raises(aot.DiagnosticError, match="cores QEMU models"):
        board_of(Target("cortex-m85", "arm-none-eabi-"))


@needs_qemu
@pytest.mark.parametrize("target", ["cortex-m0plus", "cortex-m33", "cortex-m55"])
def test_every_cortex_m_core_has_a_board(tmp_path, target):
    """The cores beyond the MPS2 ones: the AN505 (M33, boots Secure at
    0x10000000), the AN547 (M55, ITCM and DTCM) and the micro:bit (an M0,
    the M0+'s instruction set, 16 KiB of RAM); a model's counts are exact
    and the float-less M0+ takes more instructions (soft float)."""
    from aot.profiler.qemu import linker_script, board_of
    from aot.emit.build.targets import get_target
    assert "ORIGIN = 0x" in linker_script(board_of(get_target(target)))
    small = profile_module(elementwise(256), target=target, work_dir=tmp_path / "a")
    m4 = profile_module(elementwise(256), target="cortex-m4", work_dir=tmp_path / "b")
    assert small.total > 0 and all(c.value > 0 for c in small.calls)
    assert board_of(get_target(target)) in small.where
    if target == "cortex-m0plus":
        assert small.total > 2 * m4.total


def readme_table() -> list[tuple[str, str, str]]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Profiling a model on the target", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d*) \| (\S+) \| ([\d,]+) \| [\d.]+ % \|", section, flags=re.M)
    return rows


@needs_qemu
@pytest.mark.slow
def test_the_readme_table_is_what_the_command_prints(tmp_path, capsys):
    pytest.importorskip("onnx", reason="the MLPerf Tiny builder needs the onnx package")
    subprocess.run([sys.executable, str(REPO / "examples/mlperf_tiny/models.py"), "--out",
                    str(tmp_path), "ds_cnn"], check=True, capture_output=True)
    assert main(["profile", str(tmp_path / "ds_cnn.onnx"), "--name", "ds_cnn", "-q"]) == 0
    printed = []
    for line in capsys.readouterr().out.splitlines()[2:]:
        words = line.split()
        if words[0].isdigit():
            printed.append((words[0], words[1], words[2]))
        else:
            printed.append(("", words[0], words[1]))
    assert readme_table() == printed
