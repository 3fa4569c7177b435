"""Progress on long work (aot.progress and the command line): the stages a
compile goes through with their time, live on a terminal, as plain lines
with --verbose elsewhere, nothing with --quiet; --pass-timing accounts for
the whole compile."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aot.cli import main
from aot.progress import Progress, render_timing, stage

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """
def @main(%x: Tensor[(1, 2, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
  nn.relu(nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3]))
}
"""
STAGES = ["start-up", "import", "passes", "lowering", "planning", "verifying", "rendering",
          "C build"]


@pytest.fixture
def program(tmp_path) -> str:
    path = tmp_path / "conv.relay"
    path.write_text(PROGRAM)
    return str(path)


def test_stage_times_are_exclusive_and_add_up():
    progress = Progress()
    with progress:
        with stage("outer"):
            time.sleep(0.02)
            with stage("inner"):
                time.sleep(0.03)
        with stage("outer"):                 # entered again: adds up
            time.sleep(0.01)
    assert list(progress.seconds) == ["outer", "inner"]
    assert 0.03 <= progress.seconds["outer"] < 0.06
    assert 0.03 <= progress.seconds["inner"] < 0.05


def test_no_progress_no_cost_and_no_record():
    with stage("anything"):
        pass                                  # outside a Progress: a no-op


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    progress = Progress.for_stream(stream, verbose=True)
    assert progress.display and not progress.live
    with progress:
        with stage("import"):
            pass
        with stage("C build"):
            with stage("nested"):             # shown as part of its parent
                pass
    lines = stream.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["import", "C"]
    assert all(re.fullmatch(r"aot: \S.{9} +\d+\.\d\d s", line) for line in lines), lines
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_silent_when_not_a_terminal_unless_verbose_and_quiet_wins():
    assert not Progress.for_stream(io.StringIO()).display

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Progress.for_stream(Terminal()).live
    assert not Progress.for_stream(Terminal(), quiet=True).display


def test_live_display_redraws_the_running_stage():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with Progress.for_stream(stream):
        with stage("lowering"):
            time.sleep(0.6)                   # two ticks at least
    text = stream.getvalue()
    assert text.count("\r\033[Kaot: lowering") >= 3, repr(text)   # begin + ticks + end
    assert re.search(r"aot: lowering +0\.\d s \.\.\.", text), repr(text)
    assert text.endswith("s\n") and re.search(r"aot: lowering +0\.\d\d s\n$", text)


def test_render_timing_accounts_every_second():
    progress = Progress()
    progress.seconds.update({"import": 1.0, "passes": 0.5, "C build": 2.0})
    table = render_timing(progress, 4.0, {"InferType": (2, 0.3), "FuseOps": (1, 0.1)})
    rows = {line[:40].strip(): line.split() for line in table.splitlines()[1:]}
    assert rows["InferType"][1:3] == ["2", "300.00"]
    assert rows["(pass manager, between passes)"][-2] == "100.00"
    assert rows["other (not in a stage)"][-2:] == ["500.00", "12.5"]
    assert rows["total (wall time)"][-2:] == ["4000.00", "100.0"]


def test_compile_shows_every_stage_with_verbose(program, tmp_path, capsys):
    assert main(["compile", program, "-o", str(tmp_path / "out"), "-v"]) == 0
    captured = capsys.readouterr()
    shown = [line.split("aot: ", 1)[1].rsplit(None, 2)[0].strip()
             for line in captured.err.splitlines()]
    assert shown == STAGES, captured.err
    assert "kernels, arena" in captured.out


def test_compile_is_silent_off_a_terminal_and_quiet_drops_the_summary(program, tmp_path,
                                                                      capsys):
    assert main(["compile", program, "-o", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "kernels, arena" in captured.out
    assert main(["compile", program, "-o", str(tmp_path / "out"), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")


def test_pass_timing_accounts_for_the_whole_compile(program, tmp_path, capsys):
    start = time.perf_counter()
    assert main(["compile", program, "-o", str(tmp_path / "out"), "--pass-timing", "-q"]) == 0
    wall = time.perf_counter() - start
    table = capsys.readouterr().err.splitlines()
    rows = {line[:40].strip(): float(line[46:57]) for line in table[1:]}
    top = [label for label in rows if not label.startswith(("  ", "total"))
           and label in [line[:40].strip() for line in table if not line.startswith("  ")]]
    for name in STAGES:
        assert name in rows, table
    assert "FuseOps" in rows and "InferType" in rows
    total = rows["total (wall time)"]
    assert abs(sum(rows[label] for label in top) - total) < 0.1 * len(top), table
    assert total <= wall * 1e3 and total >= 0.95 * wall * 1e3 - 20, (total, wall)
    assert rows["other (not in a stage)"] < 0.05 * total + 20, table


def test_a_terminal_sees_the_stages_live(program, tmp_path):
    """The real command with its stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "aot", "compile", program, "-o",
                                str(tmp_path / "out")], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break                               # EIO: the terminal's other end closed
        if not data:
            break
        chunks.append(data)
    out, _ = process.communicate(timeout=300)
    os.close(master)
    text = b"".join(chunks).decode()
    assert process.returncode == 0, text
    assert "\r\x1b[Kaot: import" in text, repr(text)
    for name in STAGES:
        assert re.search(rf"aot: {re.escape(name)} +\d+\.\d\d s\r?\n", text), (name, text)
    assert b"kernels, arena" in out


def test_a_failed_stage_is_not_shown_as_finished():
    stream = io.StringIO()
    progress = Progress.for_stream(stream, verbose=True)
    with progress:
        with stage("import"):
            pass
        with pytest.raises(ValueError):
            with stage("lowering"):
                raise ValueError("bad")
    assert [line.split()[1] for line in stream.getvalue().splitlines()] == ["import"]
    assert "lowering" in progress.seconds           # its time still counts
