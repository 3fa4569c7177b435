"""Fusion as seen in the generated C (FileCheck-style): how many kernels a
typical chain becomes, that no intermediate tensor is materialised inside
a fused kernel, and that the fused C still computes what the interpreter
computes."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import aot
from c_harness import assert_matches, flatten

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def compile_text(text, name="m", **options):
    out = Path(tempfile.mkdtemp(prefix="aot-fusion-"))
    art = aot.compile(aot.parse(text), out, name=name, **options)
    source = (out / "src" / f"{name}.c").read_text()
    return art, source


def kernel_bodies(source: str, name: str = "m") -> dict[str, str]:
    """Kernel name -> its C text."""
    parts = re.split(rf"\nstatic void ({name}_k\d+)\(", source)
    return {parts[i]: parts[i + 1].split("\n}\n")[0] for i in range(1, len(parts), 2)}


CHAINS = [
    # (id, program, args, expected kernel count, expected ops of the first kernel)
    ("conv2d+bias_add+relu", """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}""", lambda: [f32(1, 3, 8, 8), f32(4, 3, 3, 3), f32(4)], 1,
     ["nn.conv2d", "nn.bias_add", "nn.relu"]),
    ("dense+add+tanh", """
def @main(%x: Tensor[(2, 16), float32], %w: Tensor[(8, 16), float32], %b: Tensor[(8), float32]) {
  tanh(add(nn.dense(%x, %w), %b))
}""", lambda: [f32(2, 16), f32(8, 16), f32(8)], 1, ["nn.dense", "add", "tanh"]),
    ("reshape+transpose+add", """
def @main(%x: Tensor[(2, 12), float32], %y: Tensor[(4, 3, 2), float32]) {
  %0 = reshape(%x, newshape=[2, 3, 4]);
  %1 = transpose(%0, axes=[2, 1, 0]);
  add(%1, %y)
}""", lambda: [f32(2, 12), f32(4, 3, 2)], 1, ["reshape", "transpose", "add"]),
    ("pad+conv2d (prologue)", """
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  %0 = nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);
  nn.conv2d(%0, %w)
}""", lambda: [f32(1, 2, 6, 6), f32(3, 2, 3, 3)], 1, ["nn.pad", "nn.conv2d"]),
    ("exp diamond", """
def @main(%x: Tensor[(4, 5), float32]) {
  %0 = exp(%x);
  add(%0, log(%0))
}""", lambda: [f32(4, 5)], 1, ["exp", "log", "add"]),
    ("sum of squares then scale", """
def @main(%x: Tensor[(3, 7), float32]) {
  %0 = multiply(%x, %x);
  %1 = sum(%0, axis=[1]);
  multiply(%1, 0.5f)
}""", lambda: [f32(3, 7)], 1, ["multiply", "sum", "multiply"]),
    ("softmax then scale", """
def @main(%x: Tensor[(2, 10), float32]) {
  multiply(nn.softmax(%x), 3f)
}""", lambda: [f32(2, 10)], 1, ["nn.softmax", "multiply"]),
    ("two convolutions", """
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w1: Tensor[(4, 2, 3, 3), float32],
          %w2: Tensor[(2, 4, 1, 1), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]));
  nn.relu(nn.conv2d(%0, %w2))
}""", lambda: [f32(1, 2, 6, 6), f32(4, 2, 3, 3), f32(2, 4, 1, 1)], 2,
     ["nn.conv2d", "nn.relu"]),
]


@pytest.mark.parametrize("cid,text,make_args,kernels,first_ops", CHAINS,
                         ids=[c[0] for c in CHAINS])
def test_fused_chain(cid, text, make_args, kernels, first_ops):
    args = make_args()
    art, source = compile_text(text)
    meta = art.metadata
    assert len(meta["kernels"]) == kernels, meta["kernels"]
    assert list(meta["kernels"][0]["ops"]) == first_ops
    bodies = kernel_bodies(source)
    assert len(bodies) == kernels
    if kernels == 1:
        # nothing between operators is materialised: no arena, no local
        # arrays, and the only buffer written is the output
        assert meta["arena_bytes"] == 0
        body = next(iter(bodies.values()))
        assert re.findall(r"\b(\w+)\[[^\]]*\] =", body) and \
            set(re.findall(r"\b(\w+)\[[^\]]*\] =", body)) == {"out"}, body
        assert not re.search(r"\w+ \w+\[\d+\];", body), "a local array in a fused kernel"
    want = flatten(aot.interpret(aot.parse(text), *args))
    got = flatten(aot.load(art)(*args))
    for g, w in zip(got, want):
        assert_matches(g, w, cid)


def test_repeated_blocks_share_one_kernel():
    text = """
def @main(%x: Tensor[(4, 8), float32], %w1: Tensor[(8, 8), float32],
          %w2: Tensor[(8, 8), float32]) {
  %0 = nn.relu(nn.dense(%x, %w1));
  nn.relu(nn.dense(%0, %w2))
}"""
    art, source = compile_text(text)
    assert len(art.metadata["kernels"]) == 1
    assert source.count("m_k0(") == 3           # the definition and two calls
    args = [f32(4, 8), f32(8, 8), f32(8, 8)]
    assert_matches(aot.load(art)(*args), aot.interpret(aot.parse(text), *args), "shared")


def test_chain_of_kernels_arena_meets_the_lower_bound():
    text = """
def @main(%x: Tensor[(1, 64), float32], %w: Tensor[(64, 64), float32]) {
  %0 = nn.relu(nn.dense(%x, %w));
  %1 = nn.relu(nn.dense(%0, %w));
  %2 = nn.relu(nn.dense(%1, %w));
  nn.relu(nn.dense(%2, %w))
}"""
    art, _ = compile_text(text)
    meta = art.metadata
    assert len(meta["kernels"]) == 1            # one kernel, called four times
    # three intermediates of 256 bytes, two live at a time
    assert meta["arena_whole_tensor_bound_bytes"] == 512
    assert meta["arena_bytes"] == 512
    # a dense layer reads its whole input for every output tile: only its
    # last tile (16 bytes) may land on the input (the analysis proves no
    # more), and the planner cannot use that along a chain of such pairs
    assert meta["arena_lower_bound_bytes"] == 496


def test_elementwise_kernel_writes_in_place():
    # exp(%0) has two consumers, so it is a kernel of its own; %0 dies there
    # (sum read it before), so exp may write over it
    text = """
def @main(%x: Tensor[(1, 16), float32], %w: Tensor[(16, 16), float32],
          %v: Tensor[(8, 16), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = sum(%0, axis=[1], keepdims=True);
  %2 = exp(%0);
  %3 = nn.dense(%2, %w);
  %4 = nn.dense(%2, %v);
  (%1, %3, %4)
}"""
    art, source = compile_text(text)
    meta = art.metadata
    assert meta["extra"]["inplace"] == 1
    assert meta["arena_bytes"] == meta["arena_lower_bound_bytes"] == 64
    # the in-place kernel's pointers are not restrict
    exp_kernel = next(k["name"] for k in meta["kernels"] if k["ops"] == ["exp"])
    assert re.search(rf"static void {exp_kernel}\(const float \*p0, float \*out\)", source)
    args = [f32(1, 16), f32(16, 16), f32(8, 16)]
    for g, w in zip(flatten(aot.load(art)(*args)), flatten(aot.interpret(aot.parse(text), *args))):
        assert_matches(g, w, "in place")
