"""ONNX RNN, GRU and LSTM, imported as loops over time, against
onnxruntime (every direction, layouts, biases, initial states, sequence
lengths, GRU's linear_before_reset, LSTM peepholes) and compiled to C."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402

import aot  # noqa: E402
from aot.diagnostics import DiagnosticError  # noqa: E402
from onnx_helpers import check, model, node, run_ort  # noqa: E402

F = TensorProto.FLOAT
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 5, 2, 3, 4


def recurrent(op: str, direction: str = "forward", *, bias: bool = True,
              initial: bool = False, lens: bool = False, layout: int = 0,
              peepholes: bool = False, **attrs: object) -> tuple[onnx.ModelProto,
                                                                 dict[str, np.ndarray]]:
    """A one-node model of ``op`` and its feeds (X, and sequence_lens when
    ``lens``); weights are initializers."""
    rng = np.random.default_rng(hash((op, direction, bias, initial, lens, layout)) % 2**32)
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x_shape = (SEQ, BATCH, INPUT) if layout == 0 else (BATCH, SEQ, INPUT)
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    inits = {"W": rng.standard_normal((d, g * HIDDEN, INPUT)).astype(np.float32) * 0.5,
             "R": rng.standard_normal((d, g * HIDDEN, HIDDEN)).astype(np.float32) * 0.5}
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        inits["B"] = rng.standard_normal((d, 2 * g * HIDDEN)).astype(np.float32) * 0.5
        names[3] = "B"
    if lens:
        feeds["L"] = np.array([SEQ, SEQ - 2][:BATCH], dtype=np.int32)
        names[4] = "L"
    state = (d, BATCH, HIDDEN) if layout == 0 else (BATCH, d, HIDDEN)
    if initial:
        inits["H0"] = rng.standard_normal(state).astype(np.float32)
        names[5] = "H0"
        if op == "LSTM":
            inits["C0"] = rng.standard_normal(state).astype(np.float32)
            names[6] = "C0"
    if peepholes:
        inits["P"] = rng.standard_normal((d, 3 * HIDDEN)).astype(np.float32) * 0.5
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    extra = {"layout": layout} if layout else {}
    n = node(op, names, outs, hidden_size=HIDDEN, direction=direction, **extra, **attrs)
    return model([n], feeds, outs, inits=inits, opset=14), feeds


CASES = [(op, direction) for op in ("RNN", "GRU", "LSTM")
         for direction in ("forward", "reverse", "bidirectional")]


@pytest.mark.parametrize("op,direction", CASES)
def test_directions(op: str, direction: str) -> None:
    check(*recurrent(op, direction))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_initial_states_and_sequence_lengths(op: str, direction: str) -> None:
    check(*recurrent(op, direction, initial=True, lens=True))


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_batch_first_layout_without_bias(op: str) -> None:
    """onnxruntime refuses layout=1: the reference is the layout-0 model
    with the same weights, on transposed inputs and states."""
    m1, feeds1 = recurrent(op, "bidirectional", bias=False, initial=True, layout=1)
    m0, _ = recurrent(op, "bidirectional", bias=False, initial=True)
    for init0, init1 in zip(m0.graph.initializer, m1.graph.initializer):
        arr = onnx.numpy_helper.to_array(init1)
        if init1.name in ("H0", "C0"):
            arr = arr.transpose(1, 0, 2)
        init0.CopyFrom(onnx.numpy_helper.from_array(np.ascontiguousarray(arr), init1.name))
    want = run_ort(m0, {"X": feeds1["X"].transpose(1, 0, 2)})
    mod = aot.from_onnx(m1)
    got = aot.interpret(mod, feeds1["X"])
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-5)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_gru_linear_before_reset(direction: str) -> None:
    check(*recurrent("GRU", direction, initial=True, linear_before_reset=1))


def test_lstm_peepholes_and_clip() -> None:
    check(*recurrent("LSTM", "forward", peepholes=True, clip=0.7))


def test_activations() -> None:
    check(*recurrent("GRU", "forward", activations=["Sigmoid", "Relu"]))


def test_unsupported_activation_is_refused() -> None:
    m, _ = recurrent("RNN", activations=["Softsign"])
    with pytest.raises(DiagnosticError, match="activations=.*Softsign"):
        aot.from_onnx(m)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_compiled_to_c(op: str) -> None:
    m, feeds = recurrent(op, "bidirectional", initial=True, lens=True)
    want = run_ort(m, feeds)
    art = aot.compile(aot.from_onnx(m), tempfile.mkdtemp(), name=f"onnx_{op.lower()}")
    # two loops over time (bidirectional) over the static arena, no object pool
    assert art.metadata["pool_bytes"] == 0 and len(art.metadata["loops"]) == 2
    fn = aot.load(art)
    got = fn(*feeds.values())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
