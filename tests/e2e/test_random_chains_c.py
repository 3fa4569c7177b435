"""Random operator chains, compiled to C and compared with the interpreter.

Hypothesis draws the chains: each example is a pack of programs (one build
for the pack, see c_harness) whose ``main`` applies a random sequence of
elementwise, broadcast, injective and reduction operators to its inputs,
so FuseOps sees random mixtures of prologues, anchors and epilogues.
Float32 tolerance is widened to rtol 1e-4 / atol 1e-5: a chain compounds
the ulp differences between C's libm and NumPy.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c_harness import Case, check_cases

UNARY = ["negative", "abs", "tanh", "sigmoid", "nn.relu", "exp(clip({x}, a_min=-5f, a_max=5f))",
         "sqrt(abs({x}))", "round", "floor", "nn.leaky_relu({x}, alpha=0.1f)"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


def _shape_text(shape):
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


@st.composite
def chains(draw):
    """(program text, argument shapes) of one random chain."""
    rows = draw(st.integers(1, 4))
    cols = draw(st.integers(1, 6))
    shape = [rows, cols]
    params = [("x", [rows, cols]), ("y", [cols])]
    lines = []
    cur = "%x"
    steps = draw(st.integers(1, 7))
    for k in range(steps):
        kind = draw(st.sampled_from(["unary", "binary", "binary_row", "scalar", "reduce",
                                     "transpose", "reshape", "softmax", "concat", "slice"]))
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            expr = op.format(x=cur) if "{x}" in op else f"{op}({cur})"
        elif kind == "binary":
            expr = f"{draw(st.sampled_from(BINARY))}({cur}, {cur})"
        elif kind == "binary_row" and shape[-1] == cols and len(shape) == 2:
            expr = f"{draw(st.sampled_from(BINARY))}({cur}, %y)"
        elif kind == "scalar":
            c = draw(st.sampled_from(["0.5f", "2f", "-1.5f"]))
            expr = f"{draw(st.sampled_from(BINARY))}({cur}, {c})"
        elif kind == "reduce" and len(shape) == 2:
            op = draw(st.sampled_from(["sum", "max", "mean", "min"]))
            expr = f"{op}({cur}, axis=[1], keepdims=True)"
            shape = [shape[0], 1]
        elif kind == "transpose" and len(shape) == 2:
            expr = f"transpose({cur}, axes=[1, 0])"
            shape = [shape[1], shape[0]]
        elif kind == "reshape":
            n = shape[0] * shape[1]
            expr = f"reshape({cur}, newshape=[{n}, 1])"
            shape = [n, 1]
        elif kind == "softmax":
            expr = f"nn.softmax({cur}, axis=-1)"
        elif kind == "concat":
            expr = f"concatenate(({cur}, {cur}), axis=0)"
            shape = [shape[0] * 2, shape[1]]
        elif kind == "slice" and shape[0] > 1:
            expr = f"strided_slice({cur}, begin=[1, 0], end=[{shape[0]}, {shape[1]}])"
            shape = [shape[0] - 1, shape[1]]
        else:
            expr = f"negative({cur})"
        lines.append(f"  %{k} = {expr};")
        cur = f"%{k}"
    sig = ", ".join(f"%{n}: Tensor[{_shape_text(s)}, float32]" for n, s in params)
    text = f"def @main({sig}) {{\n" + "\n".join(lines) + f"\n  {cur}\n}}\n"
    return text, [s for _, s in params]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(chains(), min_size=6, max_size=10), st.integers(0, 2**31 - 1))
def test_random_chains_match_the_interpreter(programs, seed):
    rng = np.random.default_rng(seed)
    cases = []
    for i, (text, shapes) in enumerate(programs):
        args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        cases.append(Case(f"chain{i}", text, args, rtol=1e-4, atol=1e-5))
    check_cases(cases, name="chains")
