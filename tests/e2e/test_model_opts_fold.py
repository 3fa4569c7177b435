"""What the folding passes change in the generated C of real models.

Each pass is shown on one model: the model compiled with ``aot.compile``
under ``PassContext(disabled=[pass])`` and by default, the artifacts'
metadata compared (kernels and the operators fused into them, constant
bytes in flash, arena bytes in RAM), and the two compiled programs run on
the same inputs and compared within the tolerance of
tests/e2e/test_mlperf_tiny.py (folding a scale into a weight changes the
rounding of each product by one float32 ulp; nothing else changes):

* FoldConstant on DS-CNN (MLPerf Tiny keyword spotting): the batch norms'
  ``1 / sqrt(var + eps) * gamma`` and shifts are computed at compile time
  instead of in a kernel at run time;
* FoldConstant on a small program with a configuration value, at opt
  level 2 (below PartialEvaluate's 3): ``if`` on a constant condition and
  ``match`` on a known ``Some(...)`` disappear, so only the kernels of the
  taken paths are left;
* BackwardFoldScaleAxis on DS-CNN: each batch norm's per-channel multiply
  and add leave the conv kernels' epilogues (the scale goes into the
  weights, the shift into the bias);
* ForwardFoldScaleAxis on a small image classifier with in-graph input
  normalisation (``(x - mean) * (1 / std)``, as a Keras Normalization
  layer exports): the multiply leaves the first conv's prologue, which
  runs once per multiply-accumulate.
"""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import aot  # noqa: E402
from aot.passes.manager import PassContext  # noqa: E402

MODELS_PY = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny" / "models.py"
RTOL = 1e-5
ATOL = 1e-5


def _load_models():
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models_fold", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


models = _load_models()


def _compile(mod, out_dir: Path, name: str, disabled: list[str], opt_level: int = 3):
    with PassContext(opt_level=opt_level, disabled=disabled):
        return aot.compile(mod, out_dir, name=name)


def _ops(art) -> collections.Counter:
    """Operators fused into the generated kernel functions (one function
    per distinct kernel: identical layers share it)."""
    return collections.Counter(op for k in art.metadata["kernels"] for op in k["ops"])


def _assert_close(got, want, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    atol = ATOL * max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=atol, err_msg=what)


def _inputs(shape, n: int = 2) -> list[np.ndarray]:
    return [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
            for seed in range(n)]


@pytest.fixture(scope="module")
def ds_cnn(tmp_path_factory):
    """(onnx model, imported module, default artifact, its callable)."""
    model = models.ds_cnn()
    path = tmp_path_factory.mktemp("ds_cnn") / "ds_cnn.onnx"
    onnx.save(model, path)
    mod = aot.from_onnx(str(path))
    art = _compile(mod, tmp_path_factory.mktemp("ds_cnn-default"), "ds_cnn", [])
    return model, mod, art, aot.load(art)


def _bn_channels(model) -> list[int]:
    """The channel count of every BatchNormalization of ``model``."""
    sizes = {t.name: int(np.prod(t.dims)) for t in model.graph.initializer}
    return [sizes[n.input[1]] for n in model.graph.node if n.op_type == "BatchNormalization"]


def test_fold_constant_on_ds_cnn(ds_cnn, tmp_path):
    model, mod, art, fn = ds_cnn
    off = _compile(mod, tmp_path, "ds_cnn", ["FoldConstant"])
    on_meta, off_meta = art.metadata, off.metadata
    # the batch-norm arithmetic on constants was a kernel of its own
    assert len(on_meta["kernels"]) < len(off_meta["kernels"])
    assert sum(_ops(art).values()) < sum(_ops(off).values())
    assert on_meta["constant_bytes"] < off_meta["constant_bytes"]
    assert on_meta["arena_bytes"] <= off_meta["arena_bytes"]
    # without FoldConstant the batch norm's scale is not a constant, so
    # FoldScaleAxis cannot take it either: multiplies stay in the kernels
    assert "multiply" not in _ops(art) and _ops(off)["multiply"] > 0
    off_fn = aot.load(off)
    for i, x in enumerate(_inputs(models.input_shape(model))):
        _assert_close(fn(x), off_fn(x), f"DS-CNN input {i}: FoldConstant on vs off")


def test_backward_fold_scale_axis_on_ds_cnn(ds_cnn, tmp_path):
    model, mod, art, fn = ds_cnn
    off = _compile(mod, tmp_path, "ds_cnn", ["BackwardFoldScaleAxis"])
    on_ops, off_ops = _ops(art), _ops(off)
    channels = _bn_channels(model)
    # the same kernels (identical layers share one), but the batch norms'
    # multiplies and adds are gone from them
    assert len(art.metadata["kernels"]) == len(off.metadata["kernels"])
    assert on_ops["multiply"] == 0 and on_ops["add"] == 0
    assert off_ops["multiply"] > 0 and off_ops["add"] > 0
    # and so are their per-channel scale and shift vectors (float32)
    saved = off.metadata["constant_bytes"] - art.metadata["constant_bytes"]
    assert saved >= 2 * 4 * sum(channels)
    assert art.metadata["arena_bytes"] <= off.metadata["arena_bytes"]
    off_fn = aot.load(off)
    for i, x in enumerate(_inputs(models.input_shape(model))):
        _assert_close(fn(x), off_fn(x), f"DS-CNN input {i}: BackwardFoldScaleAxis on vs off")


def _normalising_classifier():
    """A small CIFAR-sized classifier that normalises its input in the
    graph: (x - mean) * (1 / std) (ImageNet statistics), then two
    conv-batchnorm-relu layers, global pooling and a dense softmax."""
    g = models.GraphBuilder(5)
    mean = g.const("mean", np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1))
    inv_std = g.const("inv_std", (1 / np.array([0.229, 0.224, 0.225])).reshape(3, 1, 1))
    x = g.node("Mul", [g.node("Sub", ["input", mean]), inv_std])
    x = g.relu(g.batch_norm(g.conv(x, 3, 16, (3, 3), 2, models.same_pads((32, 32), (3, 3), 2)), 16))
    x = g.relu(g.batch_norm(g.conv(x, 16, 32, (3, 3), 2, models.same_pads((16, 16), (3, 3), 2)),
                            32))
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])])
    y = g.node("Softmax", [g.gemm(x, 32, 10, gain=1.0)])
    return g.model("normnet", [1, 3, 32, 32], y, [1, 10])


def test_forward_fold_scale_axis_on_an_input_normalising_classifier(tmp_path):
    model = _normalising_classifier()
    onnx.save(model, tmp_path / "normnet.onnx")
    mod = aot.from_onnx(str(tmp_path / "normnet.onnx"))
    on = _compile(mod, tmp_path / "on", "normnet", [])
    off = _compile(mod, tmp_path / "off", "normnet", ["ForwardFoldScaleAxis"])
    first_on, first_off = on.metadata["kernels"][0]["ops"], off.metadata["kernels"][0]["ops"]
    # the normalisation is the first kernel (arithmetic is no prologue of a
    # convolution, see FuseOps); its multiply is gone
    assert first_off == ["subtract", "multiply"] and first_on == ["subtract"]
    assert len(on.metadata["kernels"]) == len(off.metadata["kernels"])
    assert sum(_ops(on).values()) == sum(_ops(off).values()) - 1
    assert on.metadata["constant_bytes"] < off.metadata["constant_bytes"]
    on_fn, off_fn = aot.load(on), aot.load(off)
    for i in range(2):
        x = np.random.default_rng(i).uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)
        _assert_close(on_fn(x), off_fn(x), f"input {i}: ForwardFoldScaleAxis on vs off")


CONFIGURED = """
type Option[A] { Some(A), None }
def @main(%x: Tensor[(64), float32]) {
  let %gain = Some(2f);
  let %y = match (%gain) { Some(%k) => multiply(%x, %k), None => %x };
  if (greater(3f, 2f)) { nn.relu(%y) } else { negative(%y) }
}
"""


def test_fold_constant_resolves_configuration_control_flow(tmp_path):
    """A program specialised by a configuration value, at opt level 2
    (PartialEvaluate, level 3, would resolve it too): with FoldConstant the
    match on the known ``Some(2f)`` and the ``if`` on a constant condition
    are gone, and with them the kernels of the branches not taken."""
    mod = aot.parse(CONFIGURED, source_name="configured.relay")
    on = _compile(mod, tmp_path / "on", "cfg", [], opt_level=2)
    off = _compile(mod, tmp_path / "off", "cfg", ["FoldConstant"], opt_level=2)
    assert {"greater", "negative"} <= set(_ops(off))
    assert set(_ops(on)) == {"multiply", "nn.relu"}
    assert len(on.metadata["kernels"]) < len(off.metadata["kernels"])
    assert on.metadata["constant_bytes"] < off.metadata["constant_bytes"]
    on_fn, off_fn = aot.load(on), aot.load(off)
    x = np.linspace(-3, 3, 64).astype(np.float32)
    np.testing.assert_array_equal(on_fn(x), off_fn(x))
    np.testing.assert_array_equal(on_fn(x), aot.interpret(aot.infer_types(mod), x))
