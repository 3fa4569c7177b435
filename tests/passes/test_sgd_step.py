"""aot.sgd_step: the first-order gradient ending in an SGD update."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import aot
from aot import DiagnosticError

LOSS = """def @main(%w: Tensor[(3, 2), float64], %b: Tensor[(3), float64],
                    %x: Tensor[(4, 2), float64], %k: Tensor[(4), int32]) {
  let %h = nn.bias_add(nn.dense(%x, %w), %b);
  mean(tanh(%h) * %h)
}"""


def test_the_step_is_the_update_by_the_gradient() -> None:
    rng = np.random.default_rng(0)
    w, b, x = rng.standard_normal((3, 2)), rng.standard_normal(3), rng.standard_normal((4, 2))
    k = np.arange(4, dtype=np.int32)
    mod = aot.parse(LOSS)
    loss, (dw, db, _, _) = aot.interpret(aot.gradient(mod), w, b, x, k)
    got = aot.interpret(aot.sgd_step(mod, 0.25), w, b, x, k)   # default: the float parameters
    assert len(got) == 4
    np.testing.assert_allclose(got[0], loss, rtol=1e-15)
    np.testing.assert_allclose(got[1], w - 0.25 * dw, rtol=1e-15)
    np.testing.assert_allclose(got[2], b - 0.25 * db, rtol=1e-15)
    only_b = aot.interpret(aot.sgd_step(mod, 0.5, trainable=["b"]), w, b, x, k)
    assert len(only_b) == 2
    np.testing.assert_allclose(only_b[1], b - 0.5 * db, rtol=1e-15)


@pytest.mark.parametrize("src, kwargs, message", [
    ("def @main(%x: Tensor[(2), float32]) { exp(%x) }", {}, "must return a float scalar loss"),
    (LOSS, {"trainable": ["v"]}, "has no parameter 'v'"),
    (LOSS, {"trainable": ["k"]}, "parameter 'k' of type .* is not a float tensor"),
])
def test_refusals(src: str, kwargs: dict, message: str) -> None:
    with pytest.raises(DiagnosticError, match=message):
        aot.sgd_step(aot.parse(src), 0.1, **kwargs)


def test_readme_sgd_step_block_runs() -> None:
    """Three steps of the README's block equal three updates by hand."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.findall(r"```python sgd_step\n(.*?)```", readme, flags=re.S)[0]
    env: dict[str, object] = {}
    exec(block, env)  # noqa: S102 - our own README
    w, x = np.full((4, 3), 0.1), np.ones((2, 3))
    for _ in range(3):
        t = np.tanh(x @ w.T)
        loss = t.mean()
        w = w - 0.1 * ((1 - t * t) / t.size).T @ x
    np.testing.assert_allclose(env["value"], loss, rtol=1e-5)
    np.testing.assert_allclose(env["w"], w, rtol=1e-5)
