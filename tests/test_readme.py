"""The README's examples work as written."""

from __future__ import annotations

import re
import os
from pathlib import Path

import numpy as np

import aot

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def code_blocks(lang: str = "") -> list[str]:
    return re.findall(r"```" + lang + r"\n(.*?)```", README, flags=re.S)


def test_language_tour_runs():
    tour = next(b for b in code_blocks() if "def @main" in b)
    mod = aot.infer_types(aot.parse(tour, source_name="README.md"))
    x = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
    scaled, area, count = aot.interpret(mod, x, np.float32(2.0))
    np.testing.assert_allclose(scaled, np.maximum(x, 0) * 2)
    np.testing.assert_allclose(area, np.float32(3.14159) + np.float32(4.0), rtol=1e-6)
    assert int(count) == 1


def test_python_api_block_runs(tmp_path):
    block = next(b for b in code_blocks("python") if "aot.parse(text" in b)
    text = "def @main(%x: Tensor[(2, 3), float32]) { %x * 2f }"
    args = (np.ones((2, 3), dtype=np.float32),)
    env = {"text": text, "args": args}
    cwd = os.getcwd()
    os.chdir(tmp_path)           # the block writes out/net
    try:
        exec(block, env)  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    # the last `value` is the compiled model's
    np.testing.assert_array_equal(env["value"], np.full((2, 3), 2, dtype=np.float32))
    assert (tmp_path / "out" / "net" / "lib" / "libnet.a").is_file()
    assert "main" in env["mod"]


def test_onnx_block_runs(tmp_path):
    """The ONNX section's block, on a small model with a free batch
    dimension that ``input_shapes`` fixes."""
    onnx = __import__("pytest").importorskip("onnx")
    from onnx import TensorProto, helper
    block = next(b for b in code_blocks("python") if "aot.from_onnx(" in b)
    graph = helper.make_graph(
        [helper.make_node("Relu", ["input"], ["output"])], "g",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 49, 10])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 1, 49, 10])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(tmp_path / "model.onnx"))
    env: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(block, env)  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    x = np.linspace(-1, 1, 490, dtype=np.float32).reshape(1, 1, 49, 10)
    np.testing.assert_array_equal(aot.load(env["art"])(x), np.maximum(x, 0))


def test_optimizer_blocks_run(tmp_path):
    """The PassContext block and the pattern block of "The optimizer"."""
    blocks = [b for b in code_blocks("python") if "PassTiming" in b or "DFPatternCallback" in b]
    assert len(blocks) == 2
    text = """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  nn.relu(nn.relu(nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1])))
}
"""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        env = {"text": text}
        exec(blocks[0], env)  # noqa: S102 - our own README
        assert "FuseOps" in env["timing"].runs and "FoldScaleAxis" not in env["timing"].runs
        env = {"text": text, "aot": aot}
        exec(blocks[1], env)  # noqa: S102
    finally:
        os.chdir(cwd)
    printed = str(env["mod"])
    assert printed.count("nn.relu") == 1, printed
    assert env["matched"] is False          # no bias_add in this program
