"""nn.instance_norm, nn.group_norm and nn.l2_normalize compiled by their
own lowerings (aot/emit/lower/ops/nn_norm.py), with SimplifyInference off:
one kernel each, equal to the interpreter (one C build)."""

from __future__ import annotations

import json

import numpy as np

import aot

TEXT = """
def @main(%x: Tensor[(2, 4, 3, 3), float32], %g: Tensor[(4), float32],
          %b: Tensor[(4), float32], %h: Tensor[(3), float32], %y: Tensor[(2, 6), float16]) {
  (nn.instance_norm(%x, %g, %b), nn.group_norm(%x, %g, %b, num_groups=2),
   nn.l2_normalize(%x, eps=1e-6f, axis=[1]), nn.group_norm(%x, %g, %b, num_groups=4, center=False),
   nn.l2_normalize(%x, eps=1e-6f), nn.instance_norm(%x, %h, %h, axis=3, scale=False),
   nn.l2_normalize(%y, eps=100f, axis=[1]))
}
"""


def test_the_normalisations_lower_on_their_own(tmp_path):
    mod = aot.parse(TEXT)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 4, 3, 3)).astype(np.float32),
            rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32),
            rng.standard_normal(3).astype(np.float32),
            rng.standard_normal((2, 6)).astype(np.float16)]
    with aot.PassContext(disabled=["SimplifyInference"]):
        art = aot.compile(mod, tmp_path / "norms", name="norms")
    kernels = json.loads((art.root / "metadata.json").read_text())["kernels"]
    assert sorted({k["ops"][0] for k in kernels}) == ["nn.group_norm", "nn.instance_norm",
                                                      "nn.l2_normalize"]
    got = aot.load(art)(*args)
    for c, want in zip(got, aot.interpret(mod, *args)):
        np.testing.assert_allclose(c.astype(np.float64), want.astype(np.float64),
                                   rtol=1e-6, atol=1e-6)
