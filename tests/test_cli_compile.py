"""`aot compile` and `aot run --backend c`: the artifact contract from the
command line, the same printed result as the interpreter, diagnostics and
exit codes for programs the C backend refuses."""

from __future__ import annotations

import json

import numpy as np

from aot.cli import main

PROGRAM = """
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%0, 1f);
  tanh(%1)
}
"""


def write(tmp_path, text, name="prog.relay"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_compile_writes_the_artifact(tmp_path, capsys):
    f = write(tmp_path, PROGRAM)
    out = tmp_path / "art"
    assert main(["compile", f, "-o", str(out), "--name", "net"]) == 0
    for rel in ["include/net.h", "src/net.c", "lib/libnet.a", "net.mk", "metadata.json"]:
        assert (out / rel).is_file(), rel
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["name"] == "net"
    assert len(meta["kernels"]) == 1          # dense + add + tanh: one fused kernel
    assert "1 kernels" in capsys.readouterr().out


def test_compile_binds_params_and_static_arena(tmp_path):
    f = write(tmp_path, PROGRAM)
    w = tmp_path / "w.npy"
    np.save(w, np.arange(12, dtype=np.float32).reshape(4, 3))   # not a splat
    out = tmp_path / "art"
    assert main(["compile", f, "-o", str(out), "--name", "net", "--param", f"w={w}",
                 "--arena", "static"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert [i["name"] for i in meta["inputs"]] == ["x"]
    assert meta["constant_bytes"] == 4 * 3 * 4
    assert "net_run(const float *x, float *out)" in (out / "include/net.h").read_text()


def test_run_backend_c_prints_what_the_interpreter_prints(tmp_path, capsys):
    f = write(tmp_path, PROGRAM)
    x, w = tmp_path / "x.npy", tmp_path / "w.npy"
    rng = np.random.default_rng(1)
    np.save(x, rng.standard_normal((2, 3)).astype(np.float32))
    np.save(w, rng.standard_normal((4, 3)).astype(np.float32))
    args = ["run", f, "--input", f"x={x}", "--input", f"w={w}"]
    assert main(args + ["--backend", "interp"]) == 0
    interp = capsys.readouterr().out
    assert main(args + ["--backend", "c"]) == 0
    c = capsys.readouterr().out
    got = np.array(eval(c.replace("array", "")))
    want = np.array(eval(interp.replace("array", "")))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


#: control flow the whole-language backend compiles (an ``if`` over tensors
#: alone is a static if of the dataflow backend)
RECURSION = """def @rep(%n: int32, %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  if (%n <= 0) { %x } else { @rep(%n - 1, negative(%x)) }
}
def @main(%n: int32, %x: Tensor[(2), float32]) { @rep(%n, %x) }
"""


def test_compile_and_run_control_flow(tmp_path, capsys):
    f = write(tmp_path, RECURSION)
    assert main(["compile", f, "-o", str(tmp_path / "o"), "--pool-bytes", "4096",
                 "--max-depth", "50", "--stack-bytes", "8192"]) == 0
    out = capsys.readouterr().out
    assert "program" in out and "object pool 4096 bytes" in out and "50 nested calls" in out
    meta = json.loads((tmp_path / "o" / "metadata.json").read_text())
    assert meta["backend"] == "program" and meta["pool_bytes"] == 4096
    assert meta["program"]["stack_bytes"] == 8192
    assert meta["entry"]["context"]["name"] == "model_run_ctx"
    header = (tmp_path / "o" / "include" / "model.h").read_text()
    assert "#define MODEL_POOL_BYTES 4096" in header and "MODEL_ERR_MATCH" in header
    assert "#define MODEL_STACK_BYTES 8192 " in header and "#define MODEL_MAX_DEPTH 50 " in header
    assert "void model_ctx_init(model_ctx *context, size_t stack_bytes);" in header
    for backend in ("interp", "c"):
        assert main(["run", f, "--input", "n=1", "--input", "x=[1,2]",
                     "--backend", backend]) == 0
        assert capsys.readouterr().out.split() == ["[-1.,", "-2.]"]


def test_compile_rejects_a_tiny_stack_budget(tmp_path, capsys):
    f = write(tmp_path, RECURSION)
    assert main(["compile", f, "-o", str(tmp_path / "o"), "--stack-bytes", "100"]) == 1
    assert "stack_bytes must be between 1024 and 2^31 - 1, not 100" in capsys.readouterr().err


def test_compile_rejects_a_bad_model_name(tmp_path, capsys):
    f = write(tmp_path, PROGRAM)
    assert main(["compile", f, "-o", str(tmp_path / "o"), "--name", "9net"]) == 1
    assert "invalid model name" in capsys.readouterr().err


def test_compile_rejects_an_unknown_param(tmp_path, capsys):
    f = write(tmp_path, PROGRAM)
    v = tmp_path / "v.npy"
    np.save(v, np.ones(3, np.float32))
    assert main(["compile", f, "-o", str(tmp_path / "o"), "--param", f"v={v}"]) == 1
    assert "no parameter named `v`" in capsys.readouterr().err


QDQ_PROGRAM = """
def @main(%w: Tensor[(4, 3), int8], %x: Tensor[(2, 3), int8]) {
  %0 = qnn.dequantize(%x, 0.05f, 3);
  %1 = qnn.dequantize(%w, 0.02f, 0, axis=0);
  %2 = nn.dense(%0, %1);
  qnn.quantize(%2, 0.1f, -2, out_dtype="int8")
}
"""


def test_compile_quantized_integer_by_default_float_on_request(tmp_path, capsys):
    """A dequantize -> dense -> quantize program is one integer kernel with
    an int8 weight table by default; ``--quantized float`` keeps the float
    dense (float32 weights)."""
    w = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)
    f = write(tmp_path, QDQ_PROGRAM)
    wfile = tmp_path / "w.npy"
    np.save(wfile, w)
    metas = {}
    for mode in ("integer", "float"):
        out = tmp_path / mode
        flags = [] if mode == "integer" else ["--quantized", "float"]
        assert main(["compile", f, "-o", str(out), "--param", f"w={wfile}", "--no-build",
                     *flags]) == 0
        metas[mode] = json.loads((out / "metadata.json").read_text())
    ops = {mode: [op for k in m["kernels"] for op in k["ops"]] for mode, m in metas.items()}
    assert "qnn.dense" in ops["integer"] and "nn.dense" not in ops["integer"]
    assert "nn.dense" in ops["float"] and "qnn.dense" not in ops["float"]
    dtypes = {mode: {c["dtype"] for c in m["constants"]} for mode, m in metas.items()}
    assert "int8" in dtypes["integer"] and "float32" not in dtypes["integer"]
    assert "float32" in dtypes["float"]
