"""fast_exp, fast_tanh, fast_erf and nn.fast_softmax compiled to C
(aot/emit/lower/ops/fast_math.py and the runtime helpers) against the
interpreter: float32 bit for bit (the helpers compute the reference's
operations in order) over a sweep with the special values; float16 and
float64 (exact fallbacks, float16 erf through float32) within the usual
tolerances.  One build."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from test_ops_c import case

SWEEP = np.concatenate([np.linspace(-100, 100, 397),
                        [np.nan, np.inf, -np.inf, 88.38, -88.2, -87.5, 0.0, -0.0, 1e-30, 4.0,
                         9.0]]).astype(np.float32)


def cases():
    out = []
    for op in ("fast_exp", "fast_tanh", "fast_erf"):
        for dt in ("float32", "float16", "float64"):
            x = SWEEP.astype(dt)
            exact = {"rtol": 0, "atol": 0} if dt == "float32" else {}
            out.append(case(f"{op}:{dt}", [("x", x.shape, dt)], f"{op}(%x)", [x], **exact))
    x = np.random.default_rng(0).uniform(-20, 20, (3, 5, 7)).astype(np.float32)
    for axis in (-1, 1, 0):
        out.append(case(f"nn.fast_softmax:{axis}", [("x", x.shape, "float32")],
                        f"nn.fast_softmax(%x, axis={axis})", [x], rtol=0, atol=0))
    out.append(case("nn.fast_softmax:f64", [("x", x.shape, "float64")], "nn.fast_softmax(%x)",
                    [x.astype(np.float64)]))
    # fused: a chain of approximations in one kernel
    out.append(case("fast_tanh:chain", [("x", (64,), "float32")],
                    "fast_tanh(fast_exp(fast_erf(%x)))", [SWEEP[:64]], rtol=0, atol=0))
    return out


def all_cases():
    return cases()


def test_fast_math_in_c():
    check_cases(cases(), "fastmath")
