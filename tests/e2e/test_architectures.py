"""Real architectures (``examples/architectures/models.py``) against onnxruntime.

The graphs are torchvision / torch.nn architectures written node for node
as PyTorch's exporters write them (classic exporter at opsets 13 to 17,
dynamo exporter at opset 18), with seeded random weights.  Cheap models are
compiled to C and run; the seven image classifiers are checked through the
interpreter (about 1 s each) and compiled to C only under ``slow`` (20 to
35 s each, most of it the C compiler on megabytes of weight tables).
``bench/architectures.py`` prints the README's table from the same models.

Tolerance as tests/e2e/test_mlperf_tiny.py: rtol 1e-5, atol 1e-5 x the
output's magnitude (the implementations sum the same products in different
orders; measured errors are at most 3e-6 of the magnitude).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import aot  # noqa: E402

MODELS_PY = Path(__file__).resolve().parents[2] / "examples" / "architectures" / "models.py"
SEEDS = (0, 1)
#: a pool for the LSTM's loop, whose pool the compiler does not size (see
#: test_lstm_keyword_spotter): 512 KB is exhausted at run time although at
#: most 151,424 bytes are live at once (the allocator's fragmentation)


def _load():
    spec = importlib.util.spec_from_file_location("architectures_models", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


models = _load()
CLASSIFIERS = ["mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2",
               "mnasnet", "efficientnet_b0", "resnet18"]
SMALL = [n for n in models.MODELS if n not in CLASSIFIERS]


def _inputs(model) -> list[np.ndarray]:
    return [np.random.default_rng(s).standard_normal(models.input_shape(model))
            .astype(np.float32) for s in SEEDS]


def _ort(model, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})[0]


def _close(got, want, what: str) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == np.float32, (what, got.shape, got.dtype)
    atol = 1e-5 * max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol, err_msg=what)


def _compile_and_check(name: str, tmp: Path, **options) -> dict:
    model = models.MODELS[name]()
    art = aot.compile(aot.from_onnx(model), tmp, name=name, **options)
    fn = aot.load(art)
    for seed, x in zip(SEEDS, _inputs(model)):
        _close(fn(x), _ort(model, x), f"{name} seed {seed}: C vs onnxruntime")
    meta = art.metadata
    # no weight is duplicated (issue 19: FoldScaleAxis copied MobileNetV3's
    # dense layer where the classic exporter's Hardswish reads its output twice)
    assert _weight_bytes(meta) <= 4 * models.param_count(model) + 1024, meta["constants"]
    return meta


def _weight_bytes(meta: dict) -> int:
    """Bytes of the float constants: the weights (the host's depthwise kernels
    add integer tap-mask tables, shared by the calls of one geometry)."""
    return sum(c["bytes"] for c in meta["constants"] if c["dtype"].startswith("float"))


def test_statistics_follow_the_layer_shapes():
    """MACs from the graph agree with the sums written out from the layers."""
    gru = 49 * (3 * 64 * 40 + 3 * 64 * 64) + 64 * 12
    assert models.macs(models.kws_gru()) == gru
    enc = 16 * 64 * 192 + 2 * 4 * 16 * 16 * 16 + 16 * 64 * 64 + 2 * 16 * 64 * 128
    assert models.macs(models.transformer_encoder()) == enc
    ae = 16 * 16 * 16 * 9 + 8 * 8 * 32 * 16 * 9 + 8 * 8 * 32 * 16 * 9 + 16 * 16 * 16 * 9
    assert models.macs(models.conv_autoencoder()) == ae
    for name in ("kws_conv1d", "transformer_encoder"):
        assert models.MODELS[name]().SerializeToString() == \
            models.MODELS[name]().SerializeToString()


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_interpreter_matches_onnxruntime(name):
    model = models.MODELS[name]()
    mod = aot.from_onnx(model)
    x = _inputs(model)[0]
    _close(aot.interpret(mod, x), _ort(model, x), f"{name}: interpreter vs onnxruntime")


@pytest.mark.parametrize("name", SMALL)
def test_small_model_c_matches_onnxruntime(name, tmp_path):
    meta = _compile_and_check(name, tmp_path)
    if name in ("kws_gru", "kws_lstm"):
        # a C loop over time in the static arena, not 49 unrolled steps and
        # no object pool; the initial states and the Y accumulator are
        # zeros at run time, not tables
        assert meta["pool_bytes"] == 0 and len(meta["loops"]) == 1
        assert _weight_bytes(meta) <= 4 * models.param_count(models.MODELS[name]()) + 1024


@pytest.mark.slow
@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_c_matches_onnxruntime(name, tmp_path):
    _compile_and_check(name, tmp_path)
