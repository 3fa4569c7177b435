"""The TFLite importer against LiteRT's reference kernels
(``OpResolverType.BUILTIN_REF``), on the small models of
``tflite_models/`` (written by ``tflite_models/make_models.py``).

Every model is imported, run by the reference interpreter and, packed
with the others into one C build, by the compiled C; both are compared
with LiteRT on seeded random inputs (floats N(0, 2), integers over their
whole range).

Agreement asked for:

* **float32**: ``|got - want| <= 1e-5 * max(1, max|want|)`` elementwise
  (plus the same relative term).  Both sides compute in float32 but sum
  convolutions, dense layers, pools and means in different orders, and
  ``exp``/``tanh``/``sigmoid`` are not correctly rounded in either libm:
  a few float32 ulps of the largest magnitude.  Measured: at most 2e-6.
* **int8/uint8/int16**: bit-exact with TFLite.  MEAN, LOGISTIC, TANH,
  HARD_SWISH and SOFTMAX import as ``qnn.mean``/``qnn.sigmoid``/
  ``qnn.tanh``/``qnn.hardswish``/``qnn.softmax``, TFLite's reference
  integer arithmetic (over more scales in ``test_tflite_qnn_nonlinear.py``
  and ``test_tflite_softmax.py``; SOFTMAX also in the 16x8 int16 models).
  Operators imported through the float fallback (``qnn.dequantize`` ->
  float operator -> ``qnn.quantize``, see
  ``aot/frontend/tflite/ops/util.py``; none among the test models) would be
  held to at most one output step anywhere and the fraction of exact
  elements given in ``FALLBACK``.  The per-channel convolutions are held to
  bit-exactness although their multiplier is derived from a float32
  product where TFLite multiplies in double (see
  ``aot/frontend/tflite/ops/conv.py``): no test input hits the difference.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import aot  # noqa: E402
from aot.compiler import plan  # noqa: E402
from aot.ir.expr import Function, Tuple  # noqa: E402
from aot.ir.module import IRModule  # noqa: E402
from aot.ir.types import TensorType  # noqa: E402

MODELS = Path(__file__).resolve().parent / "tflite_models"
sys.path.insert(0, str(MODELS))

NAMES = sorted(p.stem for p in MODELS.glob("*.tflite") if not p.stem.startswith("bad_"))
#: float-fallback models and the fraction of their elements that must be exact
FALLBACK: dict[str, float] = {}
SAMPLES = 6
FLOAT_TOL = 1e-5


def load(name: str) -> IRModule:
    return aot.from_tflite(MODELS / f"{name}.tflite")


def inputs(mod: IRModule, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType)
        dt = np.dtype(t.dtype.np)
        shape = tuple(int(d) for d in t.shape)
        if dt.kind == "f":
            out.append(rng.normal(0, 2, shape).astype(dt))
        else:
            info = np.iinfo(dt)
            out.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dt))
    return out


def run_litert(name: str, xs: list[np.ndarray]) -> list[np.ndarray]:
    it = litert.Interpreter(model_path=str(MODELS / f"{name}.tflite"),
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def as_list(v: object) -> list[np.ndarray]:
    return [np.asarray(x) for x in v] if isinstance(v, tuple) else [np.asarray(v)]


class Agreement:
    """Per model: the largest float error, or the integer differences."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.diffs: list[np.ndarray] = []

    def add(self, got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, \
                f"{self.name} {what}: {g.dtype}{g.shape}, LiteRT {w.dtype}{w.shape}"
            if w.dtype.kind == "f":
                bound = FLOAT_TOL * max(1.0, float(np.abs(w).max(initial=0.0)))
                np.testing.assert_allclose(g, w, rtol=FLOAT_TOL, atol=bound,
                                           err_msg=f"{self.name} {what}")
            else:
                self.diffs.append(np.abs(g.astype(np.int64) - w.astype(np.int64)).reshape(-1))

    def check(self, exact_fraction: bool = True) -> None:
        """``exact_fraction`` false: only the one-step bound of the float
        fallback (for the C test, whose integers equal the interpreter's
        and whose few samples say little about the fraction)."""
        if not self.diffs:
            return
        d = np.concatenate(self.diffs)
        if self.name in FALLBACK:
            assert d.max() <= 1, f"{self.name}: off by {d.max()} steps"
            assert not exact_fraction or np.mean(d == 0) >= FALLBACK[self.name], \
                f"{self.name}: {np.mean(d == 0):.1%} exact"
        else:
            assert d.max() == 0, \
                f"{self.name}: {np.count_nonzero(d)} of {d.size} elements differ from LiteRT"


@pytest.mark.parametrize("name", NAMES)
def test_interpreter_matches_litert(name):
    mod = load(name)
    agreement = Agreement(name)
    for seed in range(SAMPLES):
        xs = inputs(mod, seed)
        agreement.add(as_list(aot.interpret(mod, *xs)), run_litert(name, xs), f"seed {seed}")
    agreement.check()


def pack(mods: list[IRModule]) -> IRModule:
    """One module whose ``main`` takes every model's inputs and returns the
    tuple of their results (one C build for all)."""
    params, bodies = [], []
    for mod in mods:
        params.extend(mod["main"].params)
        bodies.append(mod["main"].body)
    packed = IRModule()
    packed.add("main", Function(tuple(params), Tuple(tuple(bodies))))
    return aot.infer_types(packed)


#: models with IF / WHILE: compiled on their own
CONTROL = ("while_f32", "if_f32")


@pytest.mark.parametrize("group", ["f32", "i8"])
def test_c_matches_litert(group):
    names = [n for n in NAMES if ("_f32" in n) == (group == "f32") and n not in CONTROL]
    mods = [load(n) for n in names]
    out = Path(tempfile.mkdtemp(prefix=f"aot-tflite-{group}-"))
    fn = aot.load(aot.compile(pack(mods), out, name=f"tflite_{group}"))
    samples = [[inputs(m, seed) for m in mods] for seed in range(2)]
    agreements = [Agreement(n) for n in names]
    for seed, per_model in enumerate(samples):
        results = fn(*[x for xs in per_model for x in xs])
        for agreement, mod, xs, got in zip(agreements, mods, per_model, results):
            want = run_litert(agreement.name, xs)
            agreement.add(as_list(got), want, f"C, seed {seed}")
            interp = as_list(aot.interpret(mod, *xs))
            for g, i in zip(as_list(got), interp):
                if i.dtype.kind != "f":
                    np.testing.assert_array_equal(g, i, err_msg=f"{agreement.name}: C vs interp")
    for agreement in agreements:
        agreement.check(exact_fraction=False)


@pytest.mark.parametrize("name", CONTROL)
def test_control_flow_c_matches_litert(name):
    """WHILE is a C loop, IF a C ``if``, over the static arena (no object
    pool)."""
    mod = load(name)
    model = plan(mod, name)
    assert model.program is None and model.pool_bytes == 0
    assert (len(model.loops), len(model.branches)) == ((1, 0) if name == "while_f32" else (0, 1))
    fn = aot.load(aot.compile(mod, tempfile.mkdtemp(prefix=f"aot-{name}-"), name=name))
    agreement = Agreement(name)
    for seed in range(3):
        xs = inputs(mod, seed)
        agreement.add(as_list(fn(*xs)), run_litert(name, xs), f"C, seed {seed}")


def test_models_are_reproducible(tmp_path):
    """The committed .tflite files are exactly what make_models.py writes."""
    import make_models
    written = {p.name: p.read_bytes() for p in make_models.write_all(tmp_path)}
    committed = {p.name: p.read_bytes() for p in MODELS.glob("*.tflite")}
    assert sorted(written) == sorted(committed)
    stale = [name for name in written if written[name] != committed[name]]
    assert not stale, f"rerun tests/frontend/tflite_models/make_models.py: {stale} differ"


def test_imported_ir_keeps_layouts_and_integers():
    """Convolutions stay NHWC/OHWI (no transposes), int8 models compute
    in qnn operators (no float convolution)."""
    text = str(load("cnn_i8"))
    assert "qnn.conv2d" in text and "qnn.dense" in text and "transpose" not in text
    assert 'data_layout="NHWC"' in text and 'kernel_layout="OHWI"' in text
    assert "nn.conv2d(" not in text.replace("qnn.conv2d(", "")
