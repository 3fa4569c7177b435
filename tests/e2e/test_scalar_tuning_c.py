"""The ``scalar`` tuning's nests for constant weights (the default, for a
Cortex-M4F) compiled to C: the layers of test_simd_tuning_c.py with their
weights bound as constants -- float32 dense layers then read a weight
packed at compile time (aot/emit/lower/ops/nn_dense_packed.py: 24-unit
tiles, remainder tiles, odd ``K``) -- against the interpreter, and bit for
bit against the same program with the weights passed at run time (the
in-place nests), since both sum every output in the same order with
``fmaf``, from the bias (a constant, or an input at run time).  One build each."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np

import aot
from aot.passes.bind_params import bind_params
from c_harness import assert_matches, flatten
from test_simd_tuning_c import LAYERS, program


def test_scalar_tuning_with_constant_weights():
    text, params, args = program()
    mod = aot.parse(text)
    out = Path(tempfile.mkdtemp(prefix="aot-scalar-"))
    fn = aot.load(aot.compile(mod, out, name="scal", params=params, tuning="scalar"))
    source = (out / "src" / "scal.c").read_text()
    assert "wi" in source and "tab" in source      # the packed dense nest ran
    # the pointwise layers with 4k output channels read float pairs
    # (nn_conv_pointwise: 32, 125, 9 and 25 positions, tiles of 6, 5 and 4 columns)
    assert source.count("aot_lo_f32(xd") >= 4 * 5
    # 3x3 tiles of at most 4 columns read their weights as float pairs
    # (nn_conv_wpairs: the strided layers), channels-first depthwise tiles
    # take two output rows (nn_conv.DEPTHWISE_ROWS)
    assert "aot_lo_f32(wd" in source and "int32_t oht" in source
    # the convolutions' accumulators start from the bias (epilogue_bias.fold_float_bias)
    assert re.search(r"float acc\d+ = c\d+\[", source), "no accumulator starts at the bias"
    want = aot.interpret(bind_params(aot.infer_types(mod), params, "main"), *args)
    got = flatten(fn(*args))
    for i, (g, w) in enumerate(zip(got, flatten(want))):
        assert_matches(g, w, f"layer {i}: {LAYERS[i]}", rtol=2e-5, atol=2e-5)
    # the same sums with the weights as run-time inputs (read in place)
    runtime = aot.load(aot.compile(mod, Path(tempfile.mkdtemp(prefix="aot-scalar-")),
                                   name="scalrt", tuning="scalar"))
    full = [v for k in range(len(LAYERS)) for v in (args[k], params[f"w{k}"], params[f"b{k}"])]
    for i, (g, r) in enumerate(zip(got, flatten(runtime(*full)))):
        np.testing.assert_array_equal(np.asarray(g).view(np.uint32),
                                      np.asarray(r).view(np.uint32),
                                      err_msg=f"layer {i}: {LAYERS[i]}")
