"""The ``simd`` tuning (aot/emit/lower/ops/tuning.py) compiled to C against
the interpreter: convolutions and dense layers with their weights bound
as constants, packed into one program (one build), with fused bias and
activations as the models have them after batch-norm folding; the C is
clean under the strict flags with gcc (the build) and clang, and
byte-identical across two compilations."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.passes.bind_params import bind_params
from c_harness import assert_matches, flatten

RNG = np.random.default_rng(5)

# (input shape, weight shape, conv attributes or None for dense, activation)
LAYERS = [
    ((1, 3, 9, 9), (8, 3, 3, 3), "padding=[1, 1]", "relu"),
    ((1, 8, 9, 9), (8, 8, 3, 3), "strides=[2, 2], padding=[0, 0, 1, 1]", "relu"),
    ((1, 6, 7, 5), (6, 1, 3, 3), "padding=[1, 1], groups=6", "clip"),
    ((1, 6, 7, 5), (5, 6, 1, 1), "", "clip"),
    ((1, 8, 4, 8), (12, 8, 1, 1), "", None),                   # 32 positions, in place
    ((1, 8, 25, 5), (16, 8, 1, 1), "", "relu"),                # 8-channel tiles, staged
    ((2, 1, 13, 6), (4, 1, 4, 3), "strides=[2, 2], padding=[2, 1, 1, 1]", "relu"),
    ((1, 4, 3, 3), (36, 4, 3, 3), "padding=[1, 1]", "relu"),   # channels > positions
    ((1, 8, 3, 3), (32, 8, 1, 1), "", "clip"),                 # the channel form
    ((1, 6, 5, 5), (8, 6, 1, 1), "", "relu"),                  # 6 channels: copied one by one
    ((1, 4, 4, 4), (16, 4, 3, 3), "strides=[2, 2], padding=[1, 1]", "relu"),
    ((1, 40), (37, 40), None, "relu"),                          # dense
    ((3, 9), (70, 9), None, None),                              # dense, batch 3
    ((1, 130), (8, 130), None, "relu"),
    ((2, 33), (129, 33), None, "relu"),                         # dense, a 1-unit tail tile
    ((1, 5), (48, 5), None, None),                              # dense, odd K, whole tiles
    ((1, 1, 13, 6), (16, 1, 6, 3), "strides=[2, 2], padding=[2, 1, 2, 1]", "relu"),  # row loop
    ((1, 4, 6, 11), (4, 1, 3, 3), "padding=[1, 1], groups=4", "clip"),  # two-row tiles
    ((1, 8, 6, 6), (32, 8, 1, 1), "", "clip"),                 # channel form, tiles of 6
    ((1, 8, 4, 5), (32, 8, 3, 3), "padding=[1, 1]", "relu"),   # channel form, remainder tile
    ((1, 3, 8, 8), (8, 3, 3, 3), "strides=[2, 2], padding=[1, 1]", None),  # phases, own borders
    # every phase the same cells: one copy loop over the phases
    ((1, 8, 10, 10), (8, 1, 3, 3), "strides=[2, 2], padding=[0, 0, 1, 1], groups=8", "clip"),
    ((1, 3, 10, 6), (8, 3, 3, 3), "strides=[2, 2], padding=[0, 0, 1, 1]", "relu"),
]


def program() -> tuple[str, dict, list]:
    params, decls, results, args = {}, [], [], []
    for k, (xs, ws, attrs, act) in enumerate(LAYERS):
        decls += [f"%x{k}: Tensor[{xs}, float32]", f"%w{k}: Tensor[{ws}, float32]",
                  f"%b{k}: Tensor[({ws[0]},), float32]"]
        if attrs is None:
            core = f"nn.dense(%x{k}, %w{k})"
        else:
            core = f"nn.conv2d(%x{k}, %w{k}{', ' + attrs if attrs else ''})"
        e = f"nn.bias_add({core}, %b{k})"
        if act == "relu":
            e = f"nn.relu({e})"
        elif act == "clip":
            e = f"clip({e}, a_min=0f, a_max=6f)"
        results.append(e)
        params[f"w{k}"] = (RNG.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
        params[f"b{k}"] = RNG.standard_normal(ws[0]).astype(np.float32)
        args.append(RNG.standard_normal(xs).astype(np.float32))
    text = f"def @main({', '.join(decls)}) {{\n  ({', '.join(results)})\n}}\n"
    return text, params, args


def test_simd_tuning_matches_the_interpreter():
    text, params, args = program()
    mod = aot.parse(text)
    out = Path(tempfile.mkdtemp(prefix="aot-simd-"))
    fn = aot.load(aot.compile(mod, out, name="simd", params=params, tuning="simd"))
    want = aot.interpret(bind_params(aot.infer_types(mod), params, "main"), *args)
    got = fn(*args)
    for i, (g, w) in enumerate(zip(flatten(got), flatten(want))):
        assert_matches(g, w, f"layer {i}: {LAYERS[i]}", rtol=2e-5, atol=2e-5)
    source = (out / "src" / "simd.c").read_text()
    assert source.count("acc") > 0
    # deterministic: the same input gives the same C
    again = Path(tempfile.mkdtemp(prefix="aot-simd-"))
    aot.compile(mod, again, name="simd", params=params, tuning="simd", build=False)
    assert (again / "src" / "simd.c").read_text() == source


def test_repacked_weights_are_stored_once():
    """The simd kernels read weights repacked into tables of their own
    layout; the original constants are then neither passed nor emitted, so
    flash holds each weight once (plus the packing's padding)."""
    text, params, _ = program()
    mod = aot.parse(text)
    weights = sum(w.nbytes for w in params.values())
    out = Path(tempfile.mkdtemp(prefix="aot-simd-"))
    art = aot.compile(mod, out, name="simd", params=params, tuning="simd", build=False)
    constant_bytes = art.metadata["constant_bytes"]
    assert weights <= constant_bytes < 1.6 * weights, (constant_bytes, weights)


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_simd_tuning_is_clean_under_clang():
    text, params, _ = program()
    out = Path(tempfile.mkdtemp(prefix="aot-simd-"))
    aot.compile(aot.parse(text), out, name="simd", params=params, tuning="simd", build=False)
    subprocess.run(["clang", "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2",
                    "-ffp-contract=off", f"-I{out / 'include'}", f"-I{out / 'runtime_c'}",
                    "-c", str(out / "src" / "simd.c"), "-o", str(out / "simd.o")],
                   check=True, capture_output=True, text=True)


def test_cli_tuning_option(tmp_path):
    from aot.cli import main

    src = tmp_path / "dense.relay"
    src.write_text("def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(64, 8), float32]) {\n"
                   "  nn.dense(%x, %w)\n}\n")
    w = tmp_path / "w.npy"
    np.save(w, RNG.standard_normal((64, 8)).astype(np.float32))
    sources = {}
    for tuning in ("scalar", "simd"):
        out = tmp_path / tuning
        assert main(["compile", str(src), "-o", str(out), "--name", "net", "--param", f"w={w}",
                     "--tuning", tuning, "--no-build"]) == 0
        sources[tuning] = (out / "src" / "net.c").read_text()
    assert "acc" in sources["simd"] and "[64]" in sources["simd"]
    assert "[64]" not in sources["scalar"]
