"""aot.quantize (aot/passes/quantize/): Relay's annotate -> calibrate ->
realize on small float programs, each qconfig knob's documented effect,
and the diagnostics for bad calibration data and configurations (Python
API and command line)."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import cli
from aot.ir.expr import Call, Constant, Op
from aot.ir.visitor import post_order
from aot.passes.manager import get_pass
from aot.passes.quantize import kl_divergence
from cases.quantize_models import calibration, inputs, small_cnn

SAMPLES = calibration(6)


@pytest.fixture(scope="module")
def model():
    return small_cnn()


def calls(mod, name: str) -> list[Call]:
    return [e for e in post_order(mod["main"].body)
            if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name]


def weight_tables(mod) -> list[tuple[np.ndarray, np.ndarray]]:
    """(integer table, scale) of every dequantized constant weight."""
    return [(d.args[0].data, d.args[1].data) for d in calls(mod, "qnn.dequantize")
            if isinstance(d.args[0], Constant)]


def data_scales(mod) -> list[float]:
    """The scales of the quantizes of computed values (inputs, activations)."""
    return [float(q.args[1].data) for q in calls(mod, "qnn.quantize")]


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_passes_are_registered():
    for name in ("QuantizeAnnotate", "QuantizeCalibrate", "QuantizeRealize"):
        assert get_pass(name).doc


def test_default_flow_gives_a_qdq_program(model):
    q = aot.quantize(model, SAMPLES)
    assert [p.name_hint for p in q["main"].params] == ["x"]       # scales are bound
    tables = weight_tables(q)
    assert len(tables) == 4                                        # three convs and the dense
    for table, scale in tables:
        assert table.dtype == np.int8 and np.abs(table).max() == 127
        assert scale.ndim == 1 and scale.size == table.shape[0]    # per channel by default
    # conv, dense and their operands quantized; bias and softmax float
    assert not any(isinstance(b.args[1], Call) for b in calls(q, "nn.bias_add"))
    softmax, = calls(q, "nn.softmax")
    assert softmax.args[0].op.name == "qnn.dequantize"
    for x in inputs(5, 0):
        want, got = aot.interpret(model, x), aot.interpret(q, x)
        assert np.argmax(want) == np.argmax(got)
        assert cosine(want, got) > 0.999


def test_the_result_is_integer_c(model, tmp_path):
    q = aot.quantize(model, SAMPLES)
    art = aot.compile(q, tmp_path / "q", name="qsmall")
    anchors = [k["anchor"] for k in art.metadata["kernels"]]
    assert anchors.count("qnn.conv2d") >= 3 and "qnn.dense" in anchors
    assert "nn.conv2d" not in anchors and "nn.dense" not in anchors
    assert {c["dtype"] for c in art.metadata["constants"]} <= {"int8", "int32"}
    run = aot.load(art)
    for x in inputs(3, 0):
        np.testing.assert_allclose(run(x), aot.interpret(q, x), atol=0.03)


def test_power2_weight_scales_are_powers_of_two(model):
    q = aot.quantize(model, SAMPLES, {"weight_scale": "power2"})
    for _, scale in weight_tables(q):
        assert np.all(np.log2(scale) == np.round(np.log2(scale)))
    q = aot.quantize(model, SAMPLES, {"weight_scale": "max"})
    assert any(np.any(np.log2(s) != np.round(np.log2(s))) for _, s in weight_tables(q))


def test_per_channel_off_gives_one_scale_per_weight(model):
    q = aot.quantize(model, SAMPLES, {"per_channel": False})
    assert all(scale.ndim == 0 for _, scale in weight_tables(q))


def test_nbit_weight_4_keeps_weights_in_range(model):
    q = aot.quantize(model, SAMPLES, {"nbit_weight": 4})
    for table, _ in weight_tables(q):
        assert table.dtype == np.int8 and np.abs(table).max() == 7


def test_nbit_input_narrower_than_dtype_clips(model):
    q = aot.quantize(model, SAMPLES, {"nbit_input": 6})
    clips = [c for c in calls(q, "clip") if c.args[0].op.name == "qnn.quantize"]
    assert clips and all((c.attrs.a_min, c.attrs.a_max) == (-31.0, 31.0) for c in clips)
    q8 = aot.quantize(model, SAMPLES)
    assert not [c for c in calls(q8, "clip") if c.args[0].op.name == "qnn.quantize"]
    # two bits fewer, a step four times as coarse (the program's input point)
    assert data_scales(q)[0] == pytest.approx(4 * data_scales(q8)[0])


def test_int16_activations(model):
    q = aot.quantize(model, SAMPLES, {"nbit_activation": 16, "dtype_activation": "int16"})
    softmax, = calls(q, "nn.softmax")
    last = softmax.args[0].args[0]
    assert last.op.name == "qnn.quantize" and str(last.attrs.out_dtype) == "int16"


def test_int16_weights_and_inputs(model):
    q = aot.quantize(model, SAMPLES, {"nbit_weight": 16, "dtype_weight": "int16",
                                      "nbit_input": 16, "dtype_input": "int16"})
    for table, _ in weight_tables(q):
        assert table.dtype == np.int16 and np.abs(table).max() == 32767
    first = calls(q, "qnn.quantize")[0]
    assert str(first.attrs.out_dtype) == "int16"
    x = inputs(1, 0)[0]
    q8 = aot.quantize(model, SAMPLES)
    want = aot.interpret(model, x)
    assert np.abs(aot.interpret(q, x) - want).max() < np.abs(aot.interpret(q8, x) - want).max()


def test_skip_conv_layers_leaves_those_float(model):
    q = aot.quantize(model, SAMPLES, {"skip_conv_layers": [0]})
    convs = calls(q, "nn.conv2d")
    assert isinstance(convs[0].args[1], Constant)                 # float weight, first conv
    assert convs[0].args[1].data.dtype == np.float32
    assert convs[0].args[0] is q["main"].params[0]                # its input not quantized
    assert all(c.args[1].op.name == "qnn.dequantize" for c in convs[1:])
    q = aot.quantize(model, SAMPLES, {"skip_conv_layers": [1, 2], "skip_dense_layer": True})
    convs = calls(q, "nn.conv2d")
    assert [isinstance(c.args[1], Constant) for c in convs] == [False, True, True]
    dense, = calls(q, "nn.dense")
    assert isinstance(dense.args[1], Constant)


@pytest.mark.parametrize("mode, options", [("percentile", {"percentile": 0.99}),
                                           ("kl_divergence", {})])
def test_percentile_and_kl_scales_are_at_most_max(model, mode, options):
    wide = data_scales(aot.quantize(model, SAMPLES, {"calibrate_mode": "max"}))
    narrow = data_scales(aot.quantize(model, SAMPLES, {"calibrate_mode": mode, **options}))
    assert len(wide) == len(narrow)
    assert all(n <= w * (1 + 1e-6) for n, w in zip(narrow, wide))
    assert any(n < 0.95 * w for n, w in zip(narrow, wide))


def test_global_scale_needs_no_data(model):
    q = aot.quantize(model, [], {"calibrate_mode": "global_scale", "global_scale": 4.0})
    assert set(data_scales(q)) == {np.float32(4.0 / 128)}


def test_kl_threshold_clips_outliers():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(20000), [40.0, -35.0]])
    t = kl_divergence.kl_threshold(values)
    assert 2.0 < t < 20.0
    assert kl_divergence.kl_threshold(np.zeros(10)) == 0.0


# ----------------------------------------------------------------- bad input

X = SAMPLES[0][0]


@pytest.mark.parametrize("samples, message", [
    ([[X, X]], "calibration sample 0: @main expects 1 argument (%x), got 2"),
    ([[X], []], "calibration sample 1: @main expects 1 argument (%x), got 0"),
    ([[X[0]]], "calibration sample 0: argument %x of @main: expected Tensor[(1, 3, 12, 12)"),
    ([[X.astype(np.float64)]], "calibration sample 0: %x is Tensor[(1, 3, 12, 12), float32], "
                               "got a float64 array"),
    ([X], "calibration sample 0 must be a list of arrays, one per parameter of @main (%x)"),
    (X, "calibration_inputs must be an iterable of argument lists"),
    ([], "calibrate_mode 'max' needs at least one calibration sample"),
])
def test_bad_calibration_inputs(model, samples, message):
    with pytest.raises(aot.DiagnosticError) as info:
        aot.quantize(model, samples)
    assert message in str(info.value)


@pytest.mark.parametrize("config, message", [
    ({"nbits_input": 8}, "unknown key 'nbits_input'"),
    ({"calibrate_mode": "minmax"}, "calibrate_mode must be one of global_scale, max, "
                                   "percentile, kl_divergence"),
    ({"weight_scale": "pow2"}, "weight_scale must be one of max, power2"),
    ({"nbit_weight": 9}, "nbit_weight=9 does not fit dtype_weight=int8"),
    ({"dtype_input": "uint8"}, "dtype_input must be one of int8, int16"),
    ({"global_scale": -1.0}, "global_scale must be a positive number"),
    ({"skip_conv_layers": 0}, "skip_conv_layers must be a list of conv2d indices"),
    ({"per_channel": "yes"}, "per_channel must be true or false"),
    ("max", "expected a mapping of knobs"),
])
def test_bad_config(model, config, message):
    with pytest.raises(aot.DiagnosticError) as info:
        aot.quantize(model, SAMPLES, config)
    assert "quantize config: " + message in str(info.value)


# ----------------------------------------------------------------- command line

@pytest.fixture(scope="module")
def relay_file(tmp_path_factory, model):
    from aot.ir.printer import print_module
    path = tmp_path_factory.mktemp("cli") / "small.relay"
    path.write_text(print_module(model))
    return path


def _cli(capsys, *argv: str) -> tuple[int, str]:
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_cli_quantizes(relay_file, tmp_path, capsys):
    npz = tmp_path / "cal.npz"
    np.savez(npz, x=np.stack([s[0] for s in SAMPLES]))
    rc, out = _cli(capsys, "compile", relay_file, "-o", tmp_path / "out", "--no-build",
                   "--quantize", "int8", "--calibration", npz,
                   "--quantize-config", "calibrate_mode=percentile",
                   "--quantize-config", "skip_conv_layers=[0]")
    assert rc == 0, out
    text = (tmp_path / "out" / "src" / "model.c").read_text()
    assert "static const int8_t" in text
    np.save(tmp_path / "x.npy", X)
    rc, out = _cli(capsys, "run", relay_file, "--quantize", "int8", "--calibration", npz,
                   "--input", f"x={tmp_path / 'x.npy'}")
    assert rc == 0 and out.startswith("[["), out


@pytest.mark.parametrize("arrays, extra, message, status", [
    ({"y": (4, 1, 3, 12, 12)}, [], "no array for parameter 'x'; arrays that name no parameter: "
                                   "'y'", 1),
    ({"x": (1, 3, 12, 12)}, [], "array 'x' has shape (1, 3, 12, 12); %x is Tensor[(1, 3, 12, "
                                "12), float32], so the array must be (samples, 1, 3, 12, 12)", 1),
    ({"x": (2, 1, 3, 12, 12)}, ["--quantize-config", "nbit=8"], "unknown key 'nbit'", 1),
    ({"x": (2, 1, 3, 12, 12)}, ["--quantize-config", "oops"], "expects KEY=VALUE", 2),
    (None, [], "needs --calibration FILE.npz", 2),
])
def test_cli_bad_input(relay_file, tmp_path, capsys, arrays, extra, message, status):
    argv = ["check", relay_file, "--quantize", "int8", *extra]
    if arrays is not None:
        npz = tmp_path / "cal.npz"
        np.savez(npz, **{k: np.zeros(s, np.float32) for k, s in arrays.items()})
        argv += ["--calibration", npz]
    rc, out = _cli(capsys, *argv)
    assert rc == status and message in out and "Traceback" not in out, out


def test_cli_calibration_without_quantize(relay_file, capsys):
    rc, out = _cli(capsys, "check", relay_file, "--calibration", "x.npz")
    assert rc == 2 and "need --quantize int8" in out


def test_readme_block_runs(model, tmp_path):
    from pathlib import Path
    import re
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block, = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
              if "aot.quantize(mod, samples" in b]
    env = {"aot": aot, "mod": model, "calibration_arrays": [s[0] for s in SAMPLES]}
    block = block.replace('"out/kws_int8"', repr(str(tmp_path / "kws_int8")))
    exec(block, env)  # noqa: S102 - our own README
    assert env["art"].metadata["kernels"][0]["ops"] == ["qnn.quantize"]
