"""The bad-input suite: every kind of broken input through the command
line (``aot check|run|compile``) and through a loaded model.

Each case must give a diagnostic -- ``file:line:col: error:`` for text,
``file: error: node 'n' (Op): ...`` for models, ``aot: error: ...`` for a
bad command line --, a non-zero exit status, no Python traceback, and,
for ``compile``, nothing half-written in the output directory.  TFLite's
broken files are in tests/frontend/test_tflite_errors.py; the cases
here that concern models are ONNX's (the cases the ONNX import tests
check at the API level are checked here at the command line, where the
user meets them).

Most cases run ``aot.cli.main`` in-process (an uncaught exception would
fail the test with its traceback); the deep-nesting cases also run in a
subprocess, where the interpreter's real stack and recursion limit apply.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEEP = 100_000


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:      # argparse's own usage errors
        code = e.code if isinstance(e.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def assert_diagnostic(code: int, err: str, pattern: str, status: int | None = None) -> None:
    assert code != 0, err
    if status is not None:
        assert code == status, (code, err)
    assert "Traceback" not in err, err
    assert re.search(pattern, err), f"{pattern!r} not in:\n{err}"


# ------------------------------------------------------------ Relay text

RELAY_CASES = {
    # name: (file content, regex of the diagnostic)
    "syntax": ("def @main(%x: int32) {\n  add(%x, \n}\n",
               r"bad\.relay:3:1: error: "),
    "unknown-op": ("def @main(%x: int32) {\n  frobnicate(%x)\n}\n",
                   r"bad\.relay:2:3: error: .*frobnicate"),
    "type-error": ("def @main(%x: float32) {\n  %x + 1\n}\n",
                   r"bad\.relay:2:\d+: error: "),
    "shape-error": ("def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4,), float32]) {\n"
                    "  add(%x, %y)\n}\n", r"bad\.relay:2:\d+: error: "),
    "unbound-var": ("def @main() {\n  %nowhere\n}\n", r"bad\.relay:2:3: error: .*nowhere"),
    "unterminated-comment": ("def @main() { 1 } /* and then", r"bad\.relay:1:\d+: error: "),
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00",
               r"bad\.relay:1:\d+: error: "),
    "non-utf8": (b"def @main() {\n  1 // caf\xe9\n}\n",
                 r"bad\.relay:2:\d+: error: not UTF-8 text \(byte 0xe9\)"),
    "nul-bytes": (b"def @main() {\x00 1 }", r"bad\.relay:1:\d+: error: "),
}


def _nested(kind: str, n: int = DEEP) -> str:
    if kind == "parens":
        return "def @main() -> int32 {\n  " + "(" * n + "1" + ")" * n + "\n}\n"
    if kind == "lets":
        return ("def @main() -> int32 {\n  " + "".join(f"let %a{i} = (" for i in range(n))
                + "1" + "".join(f"); %a{i}" for i in reversed(range(n))) + "\n}\n")
    if kind == "calls":
        return "def @main(%x: int32) -> int32 {\n  " + "add(" * n + "%x" + ", 1)" * n + "\n}\n"
    if kind == "ifs":
        return ("def @main(%c: bool) -> int32 {\n  " + "if (%c) { 1 } else { " * n + "2"
                + " }" * n + "\n}\n")
    if kind == "tuple-types":
        return "def @main(%x: " + "(int32, " * n + "int32" + ")" * n + ") { 1 }\n"
    raise AssertionError(kind)


NESTED = ["parens", "lets", "calls", "ifs", "tuple-types"]


def _write(tmp_path: Path, content: str | bytes, name: str = "bad.relay") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.mark.parametrize("command", ["check", "run", "compile"])
@pytest.mark.parametrize("case", sorted(RELAY_CASES))
def test_bad_relay_text(tmp_path, capsys, case, command):
    content, pattern = RELAY_CASES[case]
    path = _write(tmp_path, content)
    out_dir = tmp_path / "out"
    argv = [command, str(path)] + (["-o", str(out_dir)] if command == "compile" else [])
    code, _, err = run_cli(argv, capsys)
    assert_diagnostic(code, err, pattern, status=1)
    assert not out_dir.exists()


def test_empty_file(tmp_path, capsys):
    """An empty module is valid Relay (nothing to check), but there is no
    @main to run or compile."""
    path = _write(tmp_path, "")
    assert run_cli(["check", str(path)], capsys)[0] == 0
    code, _, err = run_cli(["run", str(path)], capsys)
    assert_diagnostic(code, err, r"aot: error: the program has no @main", status=2)
    code, _, err = run_cli(["compile", str(path), "-o", str(tmp_path / "out")], capsys)
    assert_diagnostic(code, err, r"bad\.relay: error: the module has no `@main`", status=1)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", NESTED)
def test_deep_nesting_is_a_diagnostic(tmp_path, capsys, kind):
    path = _write(tmp_path, _nested(kind))
    code, _, err = run_cli(["check", str(path)], capsys)
    assert_diagnostic(code, err, r"bad\.relay:\d+:\d+: error: .*nested too deeply", status=1)
    assert "RecursionError" not in err


def test_deep_nesting_in_a_subprocess(tmp_path):
    """The real command, with its own stack: a diagnostic, status 1."""
    for kind in ("parens", "lets"):
        path = _write(tmp_path, _nested(kind), f"{kind}.relay")
        r = subprocess.run([sys.executable, "-m", "aot.cli", "check", str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 1, r.stderr[-2000:]
        assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
        assert re.search(rf"{kind}\.relay:\d+:\d+: error: .*nested too deeply", r.stderr)


def test_long_flat_let_chain_is_fine(tmp_path, capsys):
    """Length is not depth: 20,000 lets in sequence check without complaint."""
    n = 20_000
    text = ("def @main(%x0: Tensor[(4,), float32]) {\n"
            + "".join(f"  let %x{i + 1} = add(%x{i}, 1f);\n" for i in range(n)) + f"  %x{n}\n}}\n")
    code, out, err = run_cli(["check", str(_write(tmp_path, text, "long.relay"))], capsys)
    assert code == 0, err
    assert out.strip() == "@main: fn (Tensor[(4), float32]) -> Tensor[(4), float32]"


# ------------------------------------------------------------------ ONNX

def _onnx_model(nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    from onnx import helper
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def _vi(name, shape, elem=None):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info(name, elem or TensorProto.FLOAT, shape)


def _relu_model(opset=17):
    from onnx import helper
    return _onnx_model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                       [_vi("x", [2, 3])], [_vi("y", [2, 3])], opset=opset)


def onnx_cases(tmp_path: Path) -> dict[str, tuple[Path, str, list[str]]]:
    """name -> (file, regex of the diagnostic, extra arguments)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    good = _relu_model().SerializeToString()
    cases: dict[str, tuple[bytes | onnx.ModelProto, str, list[str]]] = {}
    cases["truncated"] = (good[: len(good) // 2], r"m\.onnx: error: ", [])
    rng = np.random.default_rng(0)
    cases["random-bytes"] = (rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                             r"m\.onnx: error: ", [])
    cases["empty-file"] = (b"", r"m\.onnx: error: ", [])
    cases["unsupported-op"] = (
        _onnx_model([helper.make_node("Relu", ["x"], ["t"], name="ok"),
                     helper.make_node("NonMaxSuppression", ["t", "t"], ["y"], name="nms")],
                    [_vi("x", [1, 4, 4])], [_vi("y", [1, 3], TensorProto.INT64)]),
        r"m\.onnx: error: .*NonMaxSuppression", [])
    cases["custom-domain"] = (
        _onnx_model([helper.make_node("Frob", ["x"], ["y"], name="frob", domain="com.acme")],
                    [_vi("x", [2])], [_vi("y", [2])]),
        r"m\.onnx: error: .*(com\.acme|Frob)", [])
    cases["inconsistent-shapes"] = (
        _onnx_model([helper.make_node("Add", ["x", "w"], ["y"], name="plus")],
                    [_vi("x", [2, 3])], [_vi("y", [2, 3])],
                    [numpy_helper.from_array(np.ones((4, 5), np.float32), "w")]),
        r"m\.onnx: error: .*(plus|Add)", [])
    cases["matmul-mismatch"] = (
        _onnx_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                    [_vi("x", [2, 3])], [_vi("y", [2, 5])],
                    [numpy_helper.from_array(np.ones((4, 5), np.float32), "w")]),
        r"m\.onnx: error: .*(mm|MatMul)", [])
    cases["free-dimension"] = (
        _onnx_model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                    [_vi("x", ["N", 3])], [_vi("y", ["N", 3])]),
        r"m\.onnx: error: .*x.*--input-shape|m\.onnx: error: .*'N'", [])
    cases["input-shape-unknown-name"] = (good, r"error: .*nope", ["--input-shape", "nope=1,2"])
    cases["opset-too-old"] = (_relu_model(opset=3), r"m\.onnx: error: .*opset", [])
    cases["opset-too-new"] = (_relu_model(opset=99), r"m\.onnx: error: the model uses opset 99, "
                              r"newer than the newest", [])
    for dtype, label in ((TensorProto.COMPLEX64, "complex64"), (TensorProto.STRING, "string"),
                         (TensorProto.FLOAT4E2M1, "float4e2m1")):
        if dtype == TensorProto.STRING:
            init = helper.make_tensor("w", dtype, [2], [b"a", b"b"])
        elif dtype == TensorProto.COMPLEX64:
            init = helper.make_tensor("w", dtype, [2], [1 + 0j, 2 + 0j])
        else:
            init = helper.make_tensor("w", dtype, [2], [1, 2])
        cases[f"initializer-{label}"] = (
            _onnx_model([helper.make_node("Identity", ["w"], ["y"], name="id")],
                        [_vi("x", [2])], [_vi("y", [2], dtype)], [init]),
            r"m\.onnx: error: .*(" + label.upper() + "|" + label + ")", [])
    # an initializer whose data lives in a file that is not there
    ext = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "24")):
        entry = ext.external_data.add()
        entry.key, entry.value = k, v
    cases["missing-external-data"] = (
        _onnx_model([helper.make_node("Add", ["x", "w"], ["y"], name="plus")],
                    [_vi("x", [2, 3])], [_vi("y", [2, 3])], [ext]),
        r"m\.onnx: error: .*weights\.bin", [])
    out = {}
    for name, (content, pattern, extra) in cases.items():
        path = tmp_path / name / "m.onnx"
        path.parent.mkdir()
        path.write_bytes(content if isinstance(content, bytes) else content.SerializeToString())
        out[name] = (path, pattern, extra)
    return out


ONNX_CASES = ["truncated", "random-bytes", "empty-file", "unsupported-op", "custom-domain",
              "inconsistent-shapes", "matmul-mismatch", "free-dimension",
              "input-shape-unknown-name", "opset-too-old", "opset-too-new",
              "initializer-complex64", "initializer-string", "initializer-float4e2m1",
              "missing-external-data"]


def test_onnx_case_list_is_complete(tmp_path):
    assert sorted(onnx_cases(tmp_path)) == sorted(ONNX_CASES)


@pytest.mark.parametrize("command", ["check", "run", "compile"])
@pytest.mark.parametrize("case", ONNX_CASES)
def test_bad_onnx_model(tmp_path, capsys, case, command):
    path, pattern, extra = onnx_cases(tmp_path)[case]
    out_dir = tmp_path / "out"
    argv = [command, str(path), *extra] + (["-o", str(out_dir)] if command == "compile" else [])
    code, _, err = run_cli(argv, capsys)
    assert_diagnostic(code, err, pattern)
    assert not out_dir.exists()


def test_free_dimension_is_fine_once_fixed(tmp_path, capsys):
    path, _, _ = onnx_cases(tmp_path)["free-dimension"]
    code, out, err = run_cli(["check", str(path), "--input-shape", "x=2,3"], capsys)
    assert code == 0, err
    assert "Tensor[(2, 3), float32]" in out


# ------------------------------------------------- arrays to a loaded model

@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    mod = aot.parse("def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3,), float32]) {\n"
                    "  add(%x, %y)\n}\n")
    return aot.load(aot.compile(mod, tmp_path_factory.mktemp("m"), name="bad_args"))


X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.array([0.5, -1, 2], np.float32)

BAD_ARGS = {
    "wrong-shape": ((np.ones((3, 2), np.float32), Y), r"input 0 `x`: expected float32\[2, 3\], "
                                                      r"got float32\[3, 2\]"),
    "wrong-rank": ((X, Y.reshape(1, 3)), r"input 1 `y`: expected float32\[3\]"),
    "wrong-dtype": ((X.astype(np.float64), Y), r"input 0 `x`: .*got float64.*astype"),
    "int-for-float": ((X.astype(np.int32), Y), r"input 0 `x`: .*got int32"),
    "scalar-for-tensor": ((1.0, Y), r"input 0 `x`: expected float32\[2, 3\], got float32 scalar"),
    "none": ((None, Y), r"input 0 `x`"),
    "too-few": ((X,), r"takes 2 input\(s\) \(x, y\), got 1"),
    "too-many": ((X, Y, Y), r"takes 2 input\(s\) \(x, y\), got 3"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGS))
def test_bad_arrays_to_a_loaded_model(loaded, case):
    args, pattern = BAD_ARGS[case]
    with pytest.raises(aot.DiagnosticError, match=pattern):
        loaded(*args)


def test_non_contiguous_arrays_are_read_correctly(loaded):
    """Not an error: strided views (a transpose, a step slice, a negative
    stride) are read element by element like NumPy reads them."""
    want = X + Y
    xt = np.ascontiguousarray(X.T).T                        # Fortran order
    xs = np.repeat(X, 2, axis=1)[:, ::2]                    # a step slice
    yr = np.ascontiguousarray(Y[::-1])[::-1]                # a negative stride
    for x, y in ((xt, Y), (xs, Y), (X, yr), (xt, yr)):
        assert not (x.flags.c_contiguous and y.flags.c_contiguous)
        np.testing.assert_array_equal(loaded(x, y), want)


# ------------------------------------------------------------ command lines

GOOD = "def @main(%x: Tensor[(3,), int32]) {\n  %x * 2\n}\n"


def test_unknown_flag(tmp_path, capsys):
    f = _write(tmp_path, GOOD, "good.relay")
    for argv in (["check", str(f), "--frobnicate"], ["compile", str(f), "-o", str(tmp_path / "o"),
                                                     "--opt-level", "9"], ["frob", str(f)], []):
        code, _, err = run_cli(argv, capsys)
        assert_diagnostic(code, err, r"aot: error: |usage: aot", status=2)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("spec,pattern", [
    ("x", r"--input expects NAME=VALUE"),
    ("x=[1, 2", r"--input x: cannot read"),
    ("x=[1, 2, 3]]", r"--input x: cannot read"),
    ("x=__import__('os')", r"--input x: cannot read"),
    ("z=[1, 2, 3]", r"has no parameter named z"),
    ("x=nope.npy", r"nope\.npy: cannot load"),
    ("x=[1, 2]", r"error: .*x"),
    ("x=[[1, 2, 3]]", r"error: .*x"),
])
def test_bad_input_option(tmp_path, capsys, spec, pattern):
    f = _write(tmp_path, GOOD, "good.relay")
    code, _, err = run_cli(["run", str(f), "--input", spec], capsys)
    assert_diagnostic(code, err, pattern)


def test_bad_npy_input(tmp_path, capsys):
    f = _write(tmp_path, GOOD, "good.relay")
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"\x93NUMPY garbage")
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object))
    for path in (junk, obj):
        code, _, err = run_cli(["run", str(f), "--input", f"x={path}"], capsys)
        assert_diagnostic(code, err, rf"{path.name}: cannot load", status=2)


@pytest.mark.parametrize("command", ["check", "run", "compile"])
def test_missing_file(tmp_path, capsys, command):
    for name in ("nope.relay", "nope.onnx", "nope.tflite"):
        argv = [command, str(tmp_path / name)] + \
            (["-o", str(tmp_path / "out")] if command == "compile" else [])
        code, _, err = run_cli(argv, capsys)
        assert_diagnostic(code, err, rf"aot: error: .*{name}: cannot read", status=2)
    assert not (tmp_path / "out").exists()


def test_a_directory_as_input(tmp_path, capsys):
    code, _, err = run_cli(["check", str(tmp_path)], capsys)
    assert_diagnostic(code, err, r"aot: error: .*cannot read", status=2)


def test_unwritable_output(tmp_path, capsys):
    f = _write(tmp_path, GOOD, "good.relay")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    for out in (blocker, blocker / "sub"):
        code, _, err = run_cli(["compile", str(f), "-o", str(out), "--no-build"], capsys)
        assert_diagnostic(code, err, r"error: cannot write the artifact", status=1)
    assert blocker.read_text() == "not a directory"


def test_bad_model_name_writes_nothing(tmp_path, capsys):
    f = _write(tmp_path, GOOD, "good.relay")
    out = tmp_path / "out"
    for name in ("1abc", "a-b", "", "int"):
        code, _, err = run_cli(["compile", str(f), "-o", str(out), "--name", name], capsys)
        assert_diagnostic(code, err, r"error: ")
    assert not out.exists()


def test_failed_compile_leaves_an_existing_output_directory_untouched(tmp_path, capsys):
    """A compile that fails (here: a type error) writes nothing, also not
    into a directory that already holds a previous artifact."""
    good = _write(tmp_path, GOOD, "good.relay")
    out = tmp_path / "out"
    code, _, err = run_cli(["compile", str(good), "-o", str(out), "--no-build"], capsys)
    assert code == 0, err
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = _write(tmp_path, RELAY_CASES["type-error"][0])
    code, _, err = run_cli(["compile", str(bad), "-o", str(out)], capsys)
    assert_diagnostic(code, err, r"bad\.relay:2:\d+: error: ", status=1)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_bad_param_file(tmp_path, capsys):
    f = _write(tmp_path, "def @main(%x: Tensor[(3,), float32], %w: Tensor[(3,), float32]) {\n"
                         "  %x * %w\n}\n", "p.relay")
    wrong = tmp_path / "w64.npy"
    np.save(wrong, np.ones(3, np.float64))
    out = tmp_path / "out"
    for spec, pattern in ((f"w={wrong}", r"--param w: the file holds float64"),
                          ("w=missing.npy", r"missing\.npy: cannot load"),
                          ("w", r"--param expects NAME=FILE\.npy")):
        code, _, err = run_cli(["compile", str(f), "-o", str(out), "--param", spec], capsys)
        assert_diagnostic(code, err, pattern, status=2)
    assert not out.exists()
