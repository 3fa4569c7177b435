"""The check shared by the weight-staging tests (convolutions,
tests/e2e/test_conv_weight_stage_c.py; products,
tests/e2e/test_product_weight_stage_c.py): one packed program built with
its computed weights staged and with staging switched off
(``WEIGHT_STAGE_BYTES`` 0); the two must agree bit for bit and match the
interpreter, and the staged build must hold ``staged`` stages."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import aot
from aot.emit.lower.ops import nn_conv_wstage
from c_harness import assert_matches, compile_and_load, flatten, pack


def check_staged(monkeypatch, cases, name: str, staged: int) -> None:
    mod = pack(cases)
    out = Path(tempfile.mkdtemp(prefix=f"aot-{name}-")) / "a"
    aot.compile(mod, out, name=name, build=False)
    assert (out / "src" / f"{name}.c").read_text().count("float wst") == staged
    args = [a for c in cases for a in c.args]
    got_staged = compile_and_load(mod, name=name)(*args)
    monkeypatch.setattr(nn_conv_wstage, "WEIGHT_STAGE_BYTES", 0)
    plain = compile_and_load(pack(cases), name=name + "0")(*args)
    for c, got, ref in zip(cases, got_staged, plain):
        np.testing.assert_array_equal(got, ref, err_msg=c.name)
        want = aot.interpret(aot.parse(c.text), *c.args)
        assert_matches(flatten(got)[0], flatten(want)[0], c.name, c.rtol, c.atol)
