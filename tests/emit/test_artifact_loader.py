"""Loading a built artifact through cffi: results equal NumPy and the
kernel-IR reference run of the plan; constants round-trip bit for bit with
every compiler; bad arguments are diagnostics, never a crash in C."""

from __future__ import annotations

import numpy as np
import pytest

from aot.diagnostics import DiagnosticError
from aot.emit.build.artifact import build_artifact, write_artifact
from aot.emit.build.compiled_model import CompiledModel, TensorInfo, load
from aot.emit.build.toolchain import available_toolchains
from aot.ir.dtype import DType
from artifact_plans import (EDGE_CONSTANTS, addscale_expected, addscale_plan,
                            constants_plan, half_bool_expected, half_bool_plan, run_plan,
                            tuple_expected, tuple_plan)

TOOLCHAINS = available_toolchains()
RNG = np.random.default_rng(11)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind == "f" else a


def assert_bits_equal(got: np.ndarray, expected: np.ndarray) -> None:
    """Bit-exact equality; a NaN only needs to be a NaN: IEEE 754 (6.3)
    does not specify the sign of a NaN that arithmetic makes (x86's
    ``inf + -inf`` is the negative default NaN, Arm's the positive one),
    and gcc's vectorised and scalar code for the same max pick different
    NaN operands (seen once the host build gained
    ``-fno-tree-loop-if-convert``, since replaced); payloads are not kept either."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind == "f":
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(_bits(got[~nan]), _bits(expected[~nan]))
    else:
        assert np.array_equal(got, expected)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, CompiledModel]:
    root = tmp_path_factory.mktemp("loaded")
    plans = {"addscale": addscale_plan(), "static": addscale_plan("stat", "static"),
             "tuples": tuple_plan(), "halfbool": half_bool_plan()}
    return {key: load(write_artifact(plan, root / key)) for key, plan in plans.items()}


# ----------------------------------------------------------------- results

@pytest.mark.parametrize("which", ["addscale", "static"])
def test_add_scale_matches_numpy_and_the_plan(models, which):
    model = models[which]
    for _ in range(3):
        x = RNG.normal(size=(2, 3)).astype(np.float32)
        y = RNG.normal(size=(2, 3)).astype(np.float32)
        got = model(x, y)
        assert isinstance(got, np.ndarray) and got.shape == (2, 3)
        assert_bits_equal(got, addscale_expected(x, y))
        plan = addscale_plan(model.name, model.arena_mode)
        assert_bits_equal(got.reshape(-1), run_plan(plan, x, y)[0])


def test_special_values_flow_through(models):
    x = np.array([[np.nan, np.inf, -0.0], [1e38, -np.inf, 1e-45]], dtype=np.float32)
    y = np.array([[1.0, -np.inf, 0.0], [1e38, 1.0, 0.0]], dtype=np.float32)
    with np.errstate(all="ignore"):
        expected = addscale_expected(x, y)
    assert_bits_equal(models["addscale"](x, y), expected)


def test_tuple_outputs_scalar_input_and_bool(models):
    model = models["tuples"]
    a = np.array([7, -7, 5, -2 ** 31], dtype=np.int32)
    for s in (np.int32(-2), np.int32(3), np.int32(0), np.int32(-1)):
        got = model(a, s)
        assert isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], tuple)
        expected = tuple_expected(a, s)
        assert_bits_equal(got[0], expected[0])
        assert_bits_equal(got[1][0], expected[1])
        assert got[1][1].dtype == np.bool_
        assert_bits_equal(got[1][1], expected[2])
        flat = run_plan(tuple_plan(), a, np.asarray(s))
        assert_bits_equal(got[1][0], flat[1])


def test_python_values_are_converted_when_exact(models):
    model = models["tuples"]
    got = model([1, 2, 3, 4], 2)
    assert_bits_equal(got[0], np.array([0, 1, 1, 2], np.int32))
    assert_bits_equal(got[1][0], np.array([4, 6, 8, 10], np.int32))
    got = model((-1, -2, -3, -4), True)         # a Python bool is exact for int32
    assert_bits_equal(got[0], np.array([-1, -2, -3, -4], np.int32))
    x = [[1, 2, 3], [4, 5, 6]]                 # Python ints for a float32 input
    half = [[0.5] * 3] * 2
    assert_bits_equal(models["addscale"](x, half),
                      addscale_expected(np.array(x, np.float32), np.array(half, np.float32)))
    with pytest.raises(DiagnosticError, match="got float32 scalar"):
        models["addscale"](x, 0.5)             # no broadcasting


def test_float16_and_bool_io(models):
    model = models["halfbool"]
    h = np.array([1.0, -2.0, 0.5, 65504.0, np.nan], dtype=np.float16)
    m = np.array([True, True, False, True, False])
    out_h, out_m = model(h, m)
    assert out_h.dtype == np.float16 and out_m.dtype == np.bool_
    with np.errstate(all="ignore"):
        expected_h, expected_m = half_bool_expected(h, m)
    assert_bits_equal(out_h, expected_h)
    assert_bits_equal(out_m, expected_m)
    assert out_h[3] == np.inf     # 65504 * 2 overflows half precision


def test_metadata_and_tensor_infos(models):
    model = models["tuples"]
    assert model.name == "tuples" and model.metadata["name"] == "tuples"
    assert model.inputs == (TensorInfo(0, "a", (4,), DType.INT32, "a"),
                            TensorInfo(1, "s", (), DType.INT32, "s"))
    assert [o.dtype for o in model.outputs] == [DType.INT32, DType.INT32, DType.BOOL]
    assert model.output_tree == (0, (1, 2))
    assert "tuples(a: int32[4], s: int32 scalar)" in repr(model)


def test_load_by_path_builds_a_missing_library(tmp_path):
    art = write_artifact(addscale_plan("bypath"), tmp_path)
    assert not art.layout.library.is_file()
    model = load(tmp_path)
    assert art.layout.library.is_file()
    x = np.ones((2, 3), np.float32)
    assert_bits_equal(model(x, x), addscale_expected(x, x))


def test_no_inputs_and_no_arena(tmp_path):
    model = load(write_artifact(constants_plan(values={DType.INT16: np.array([3, -4], np.int16)}),
                                tmp_path))
    assert model.arena_bytes == 0
    (out,) = model()
    assert_bits_equal(out, np.array([3, -4], np.int16))


# ------------------------------------------------------------ constants

@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda t: t.kind.value)
def test_constants_round_trip_bit_exactly(tmp_path, toolchain):
    art = write_artifact(constants_plan(), tmp_path)
    build_artifact(art, toolchain=toolchain)
    outputs = load(art, toolchain=toolchain)()
    assert len(outputs) == len(EDGE_CONSTANTS)
    for (dtype, values), got in zip(EDGE_CONSTANTS.items(), outputs):
        assert got.dtype == dtype.np, dtype
        assert_bits_equal(got, values)


@pytest.mark.parametrize("flags", [(), ("-U__BYTE_ORDER__",)], ids=["string", "integers"])
def test_random_constant_bits_round_trip(tmp_path, flags):
    """Tables large enough for the string form; without ``__BYTE_ORDER__``
    the source reads their integer form from ``src/<name>_tables.inc``."""
    floats = {
        DType.FLOAT32: RNG.integers(0, 2 ** 32, 300, dtype=np.uint64).astype(np.uint32)
        .view(np.float32),
        DType.FLOAT64: RNG.integers(0, 2 ** 63, 300, dtype=np.uint64).view(np.float64) * -1.0,
        DType.FLOAT16: RNG.integers(0, 2 ** 16, 300, dtype=np.uint64).astype(np.uint16)
        .view(np.float16),
        DType.INT64: RNG.integers(-2 ** 63, 2 ** 63 - 1, 300, dtype=np.int64),
    }
    art = write_artifact(constants_plan(values=floats), tmp_path)
    assert (tmp_path / "src" / "consts_tables.inc").is_file()
    build_artifact(art, extra_flags=flags)
    outputs = load(art)()
    for (dtype, values), got in zip(floats.items(), outputs):
        assert_bits_equal(got, values)


# ------------------------------------------------------------------ errors

def _x():
    return np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("args, message", [
    (lambda: (_x(),), r"takes 2 input\(s\) \(x, y\), got 1"),
    (lambda: (_x(), _x(), _x()), "takes 2 input"),
    (lambda: (np.zeros((3, 2), np.float32), _x()),
     r"input 0 `x`: expected float32\[2, 3\], got float32\[3, 2\]"),
    (lambda: (_x(), np.zeros((2, 3), np.float64)),
     r"input 1 `y`: expected float32\[2, 3\], got float64\[2, 3\].*astype\(numpy.float32\)"),
    (lambda: (_x(), np.zeros(6, np.float32)), r"input 1 `y`: expected float32\[2, 3\]"),
    (lambda: (np.float32(1), _x()), r"expected float32\[2, 3\], got float32 scalar"),
    (lambda: ([[1, 2, 3], [4, 5, 6j]], _x()), "cannot be converted to float32 exactly"),
    (lambda: ("abc", _x()), "cannot be converted"),
    (lambda: ([[1, 2], [3]], _x()), "cannot make an array"),
])
def test_bad_arguments_are_diagnostics(models, args, message):
    with pytest.raises(DiagnosticError, match=message) as info:
        models["addscale"](*args())
    assert "model `addscale`" in str(info.value)


def test_inputs_by_name(models):
    """Keyword arguments by the inputs' names, alone or after positional ones."""
    model = models["addscale"]
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    y = RNG.normal(size=(2, 3)).astype(np.float32)
    want = model(x, y)
    assert_bits_equal(model(x=x, y=y), want)
    assert_bits_equal(model(y=y, x=x), want)
    assert_bits_equal(model(x, y=y), want)


@pytest.mark.parametrize("kwargs, message", [
    ({"z": _x()}, r"has no input named `z` \(inputs: x, y\)"),
    ({"y": _x()}, r"takes 2 input\(s\) \(x, y\), got 1 \(missing: x\)"),
    ({"x": _x(), "y": _x(), "w": _x()}, "no input named `w`"),
])
def test_bad_keyword_arguments_are_diagnostics(models, kwargs, message):
    with pytest.raises(DiagnosticError, match=message):
        models["addscale"](**kwargs)
    with pytest.raises(DiagnosticError, match="input `x` given twice"):
        models["addscale"](_x(), x=_x(), y=_x())


def test_python_floats_for_integer_inputs_are_refused(models):
    with pytest.raises(DiagnosticError, match="float64 values cannot be converted to int32"):
        models["tuples"]([1.0, 2.0, 3.0, 4.0], 1)
    with pytest.raises(DiagnosticError, match="value 2147483648 is out of range of int32"):
        models["tuples"]([1, 2, 3, 2 ** 31], 1)
    with pytest.raises(DiagnosticError, match="int64 values cannot be converted to bool"):
        models["halfbool"](np.zeros(5, np.float16), [0, 1, 0, 1, 0])
    with pytest.raises(DiagnosticError, match=r"input 1 `s`: expected int32 scalar, "
                                              r"got bool scalar"):
        models["tuples"]([1, 2, 3, 4], np.bool_(True))


def test_bool_and_python_lists_convert(models):
    out_h, out_m = models["halfbool"]([1.5, -1, 0, 2, 3], [True, False, True, True, False])
    assert out_h.dtype == np.float16
    assert_bits_equal(out_h, np.array([3, -1, 0, 4, 3], np.float16))
    assert_bits_equal(out_m, np.array([True, False, False, True, False]))


def test_non_contiguous_arrays_are_copied(models):
    x = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]
    assert not x.flags.c_contiguous
    y = np.ones((2, 3), np.float32)
    assert_bits_equal(models["addscale"](x, y), addscale_expected(np.ascontiguousarray(x), y))


def test_every_call_returns_a_fresh_output(models):
    """The fast path (plain arrays) copies a poisoned template per call: two
    calls never share an output, and read-only or Fortran-ordered inputs
    (the general path) give the same bits."""
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    y = RNG.normal(size=(2, 3)).astype(np.float32)
    model = models["addscale"]
    first, second = model(x, y), model(x, y)
    assert first is not second and not np.shares_memory(first, second)
    first[...] = 0
    assert_bits_equal(second, addscale_expected(x, y))
    frozen, fortran = x.copy(), np.asfortranarray(y)
    frozen.flags.writeable = False
    assert_bits_equal(model(frozen, fortran), addscale_expected(x, y))


def test_inputs_are_not_modified(models):
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    y = x.copy()
    models["addscale"](x, y)
    assert_bits_equal(x, y)



def test_a_non_zero_status_is_a_diagnostic_naming_it(tmp_path):
    model = load(write_artifact(addscale_plan("status"), tmp_path))
    x = np.zeros((2, 3), np.float32)
    model._entry = lambda *pointers: 2          # what an exhausted pool returns
    with pytest.raises(DiagnosticError, match=r"failed with status 2 \(STATUS_ERR_POOL: "
                                              r"the object pool is exhausted\)"):
        model(x, x)
