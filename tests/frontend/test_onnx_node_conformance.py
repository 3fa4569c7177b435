"""Conformance: the ONNX backend node tests, imported, compiled to C, run.

``onnx==1.22.0`` (the ``conformance`` extra) is the last release that ships
the backend node tests as files: ``onnx/backend/test/data/node/<test>/``
holds ``model.onnx`` and ``test_data_set_0/{input,output}_<i>.pb``.  Every
test whose nodes all use operators in :data:`CLAIMED` runs here: the model
is imported with :func:`aot.from_onnx`, compiled to C with
:func:`aot.compile`, loaded with cffi, called on the test's inputs, and
its outputs are compared with the expected ones with the tolerances of
ONNX's own backend test runner (``rtol=1e-3, atol=1e-7``; integers and
booleans exactly).  Tests using any operator not claimed are skipped, and
only those.

Some tests of claimed operators use what the IR does not have (float4,
float8e8m0, int2, strings, a training-mode output ...).  They are
listed in :data:`REFUSED` with the reason the importer must give: such a
test passes only if the importer refuses the model with a diagnostic
containing that text, so the list cannot hide a crash or a wrong answer.

Compiling one model per test would take the suite past its time budget,
so tests are compiled in *batches*: the ``main`` functions of a batch are
packed into one program that takes all their parameters and returns all
their results (as ``tests/e2e/c_harness.py`` does for operator cases); one
C build serves them all, and each test still compares and fails on its
own.  When a batch does not compile, its tests are compiled one by one so
the error names the culprit.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

import aot  # noqa: E402
from aot.ir.expr import Function, Tuple  # noqa: E402
from aot.ir.module import IRModule  # noqa: E402

NODE_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
if not NODE_DIR.is_dir():
    pytest.skip(f"onnx {onnx.__version__} does not ship the backend node tests as files "
                "(install the conformance extra: onnx==1.22.0)", allow_module_level=True)

#: The ONNX operators the importer claims.  ``test_claimed_list_is_the_registry``
#: keeps this list equal to the importer's converter registry.
CLAIMED = frozenset("""
    Abs Acos Add And ArgMax ArgMin Asin Atan Attention AveragePool BatchNormalization Cast
    BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor
    CastLike Ceil Clip Concat Constant ConstantOfShape Conv ConvTranspose Cos
    CumSum
    Cosh DepthToSpace DequantizeLinear Div Dropout Einsum Elu Equal Erf Exp Expand
    Flatten Floor Gather GatherElements GatherND Gelu Gemm GlobalAveragePool GroupNormalization
    GRU GlobalMaxPool Greater GreaterOrEqual HardSigmoid HardSwish Identity If
    InstanceNormalization IsInf
    IsNaN LRN LSTM LayerNormalization LeakyRelu Less LessOrEqual Log LogSoftmax Loop
    LpNormalization LpPool GlobalLpPool
    MatMul Max MaxPool Mean Min Mod Mul Neg NegativeLogLikelihoodLoss Not OneHot Or PRelu Pad Pow
    QLinearConv QLinearMatMul QuantizeLinear RMSNormalization Range Reciprocal ReduceL1 ReduceL2
    ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd
    RNN ReduceSum ReduceSumSquare Relu Reshape Resize Round Selu Shape Sigmoid Sign
    Scan ScatterElements ScatterND
    Celu Mish
    Sin Sinh Size Slice Softmax SoftmaxCrossEntropyLoss Softplus Softsign SpaceToDepth Split Sqrt
    Squeeze Sub Sum Tan Tanh Tile TopK Transpose Trilu Unsqueeze Where Xor
""".split())

#: Node tests of claimed operators that the importer must refuse, with
#: (part of) the diagnostic it must give.
REFUSED: dict[str, str] = {
    # the expanded AffineGrid passes Range a limit of shape [1] (a scalar
    # in Range's schema)
    "test_affine_grid_2d_align_corners_expanded": "limit must be a scalar",
    "test_affine_grid_2d_expanded": "limit must be a scalar",
    "test_affine_grid_3d_align_corners_expanded": "limit must be a scalar",
    "test_affine_grid_3d_expanded": "limit must be a scalar",
    "test_batchnorm_epsilon_training_mode": "training_mode",
    "test_batchnorm_example_training_mode": "training_mode",
    "test_identity_opt": "optional_type",
    "test_identity_sequence": "sequence_type",
    # the body slices at the iteration number: a Slice with run-time starts
    "test_loop11": "must be a constant",
    "test_maxpool_with_argmax_2d_precomputed_pads": "Indices output",
    "test_maxpool_with_argmax_2d_precomputed_strides": "Indices output",
    "test_resize_downsample_scales_cubic": "scales=",
    "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside": "scales=",
    "test_resize_downsample_scales_cubic_align_corners": "scales=",
    "test_resize_downsample_scales_cubic_antialias": "scales=",
    "test_resize_downsample_scales_linear": "scales=",
    "test_resize_downsample_scales_linear_align_corners": "scales=",
    "test_resize_downsample_scales_linear_antialias": "scales=",
    "test_resize_downsample_scales_linear_half_pixel_symmetric": "coordinate_transformation_mode",
    "test_resize_downsample_scales_nearest": "scales=",
    "test_resize_downsample_sizes_cubic_antialias": "antialias=1",
    "test_resize_downsample_sizes_linear_antialias": "antialias=1",
    "test_resize_downsample_sizes_nearest_not_larger": "keep_aspect_ratio_policy",
    "test_resize_downsample_sizes_nearest_not_smaller": "keep_aspect_ratio_policy",
    "test_resize_upsample_scales_linear_half_pixel_symmetric": "coordinate_transformation_mode",
    "test_resize_upsample_sizes_nearest_not_larger": "keep_aspect_ratio_policy",
    "test_resize_upsample_sizes_nearest_not_smaller": "keep_aspect_ratio_policy",
    "test_training_dropout": "training_mode",
    "test_training_dropout_default": "training_mode",
    "test_training_dropout_default_mask": "training_mode",
    "test_training_dropout_mask": "training_mode",
    "test_training_dropout_zero_ratio": "training_mode",
    "test_training_dropout_zero_ratio_mask": "training_mode",
}

#: Tests compiled together in one C build.
BATCH = 40
RTOL, ATOL = 1e-3, 1e-7


def _ops_of(model_path: Path) -> frozenset[str]:
    model = onnx.load(str(model_path), load_external_data=False)
    ops: set[str] = set()
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for node in g.node:
            ops.add(node.op_type)
            for attr in node.attribute:
                if attr.HasField("g"):
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)
    return frozenset(ops)


def _all_tests() -> list[tuple[str, frozenset[str]]]:
    return [(d.name, _ops_of(d / "model.onnx"))
            for d in sorted(NODE_DIR.iterdir()) if (d / "model.onnx").is_file()]


#: Element types the IR does not have; a test using one is refused.
UNSUPPORTED_DTYPES = frozenset(
    name.lower() for name in onnx.TensorProto.DataType.keys()
    if name.startswith(("FLOAT4", "INT2", "UINT2")) or name == "FLOAT8E8M0"
    or name in ("STRING", "COMPLEX64", "COMPLEX128"))


def _dtypes_used(model: "onnx.ModelProto") -> set[str]:
    g = model.graph
    codes = {v.type.tensor_type.elem_type for v in [*g.input, *g.output, *g.value_info]}
    codes |= {t.data_type for t in g.initializer}
    for node in g.node:
        for attr in node.attribute:
            if attr.name in ("to", "output_dtype") and attr.type == onnx.AttributeProto.INT:
                codes.add(attr.i)
            if attr.type == onnx.AttributeProto.TENSOR:
                codes.add(attr.t.data_type)
    return {onnx.TensorProto.DataType.Name(c).lower() for c in codes if c}


def _expected_refusal(test: str) -> str | None:
    """The diagnostic text the importer must give for ``test``, or None if
    the test must compile and pass.  By rule: models below opset 11, and
    models using an element type the IR lacks; then :data:`REFUSED`."""
    model = onnx.load(str(NODE_DIR / test / "model.onnx"))
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                default=0)
    if opset < 11:
        return "the importer supports opset 11 and later"
    unsupported = sorted(_dtypes_used(model) & UNSUPPORTED_DTYPES)
    if unsupported:
        return unsupported[0]
    return REFUSED.get(test)


ALL_TESTS = _all_tests()
RUN = [name for name, ops in ALL_TESTS if ops <= CLAIMED]
NOT_CLAIMED = {name: sorted(ops - CLAIMED) for name, ops in ALL_TESTS if not ops <= CLAIMED}
EXPECTED_REFUSALS = {name: why for name in RUN if (why := _expected_refusal(name)) is not None}
COMPILED = [name for name in RUN if name not in EXPECTED_REFUSALS]


def _tensors(test: str, kind: str) -> list[np.ndarray]:
    folder = NODE_DIR / test / "test_data_set_0"
    out = []
    i = 0
    while (folder / f"{kind}_{i}.pb").is_file():
        proto = onnx.TensorProto()
        proto.ParseFromString((folder / f"{kind}_{i}.pb").read_bytes())
        out.append(numpy_helper.to_array(proto))
        i += 1
    return out


#: Inputs that ONNX lets be computed at run time but that fix shapes or
#: types (an axis list, a target shape, ``k``, a quantization scale): the
#: importer needs them constant.  The node tests feed many of them as
#: graph inputs; the harness *freezes* every graph input that reaches one
#: of these slots -- it becomes an initializer holding the test's value, as
#: a user freezes such inputs before compiling -- and the rest stay
#: parameters.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,),
    "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
    "Pad": (1, 2, 3), "TopK": (1,), "OneHot": (1,), "Range": (0, 1, 2),
    "Resize": (1, 2, 3), "Dropout": (1, 2),
    "Loop": (0,),  # the trip count fixes the length of the scan outputs
    "CumSum": (1,),
    "ReduceMean": (1,), "ReduceSum": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
    "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,),
    "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2),
    "QLinearMatMul": (1, 2, 4, 5, 6, 7), "QLinearConv": (1, 2, 4, 5, 6, 7),
}


def _subgraphs(node: "onnx.NodeProto") -> list["onnx.GraphProto"]:
    out = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            out.append(attr.g)
        out.extend(attr.graphs)
    return out


def _nodes(graph: "onnx.GraphProto") -> list["onnx.NodeProto"]:
    """The nodes of ``graph`` and of its subgraphs, at any depth."""
    out = []
    for node in graph.node:
        out.append(node)
        for sub in _subgraphs(node):
            out.extend(_nodes(sub))
    return out


@lru_cache(maxsize=None)
def _prepared(test: str) -> tuple[bytes, tuple[int, ...]]:
    """The test's model with its shape-fixing graph inputs frozen (see
    :data:`SHAPE_INPUTS`), serialized, and the indices of the test inputs
    that remain parameters."""
    model = onnx.load(str(NODE_DIR / test / "model.onnx"))
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in inits]
    # graph inputs that reach a shape slot, through any computation except
    # Shape and Size (whose results do not depend on the values); a node
    # with subgraphs (If, Loop) depends on every name its subgraphs use
    nodes = _nodes(graph)
    producer = {out: node for node in nodes for out in node.output}
    work = [node.input[k] for node in nodes
            for k in SHAPE_INPUTS.get(node.op_type, ()) if k < len(node.input)]
    seen: set[str] = set()
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        node = producer.get(value)
        if node is not None and node.op_type not in ("Shape", "Size"):
            work.extend(node.input)
            for sub in _subgraphs(node):
                work.extend(name for inner in _nodes(sub) for name in inner.input)
    frozen = {name for name in inputs if name in seen}
    data = _tensors(test, "input") if frozen else []
    for name in sorted(frozen):
        graph.initializer.append(numpy_helper.from_array(data[inputs.index(name)], name))
    kept = [i for i in graph.input if i.name not in frozen]
    del graph.input[:]
    graph.input.extend(kept)
    return (model.SerializeToString(),
            tuple(k for k, name in enumerate(inputs) if name not in frozen))


def _import(test: str) -> IRModule:
    return aot.from_onnx(_prepared(test)[0], source_name=f"{test}/model.onnx")


def _args(test: str) -> list[np.ndarray]:
    data = _tensors(test, "input")
    return [data[k] for k in _prepared(test)[1]]


def _compile(mods: list[IRModule], name: str):
    """One library whose ``main`` takes every module's parameters and
    returns the tuple of every module's result."""
    packed = IRModule()
    params: list = []
    bodies: list = []
    for mod in mods:
        fn = mod["main"]
        params.extend(fn.params)
        bodies.append(fn.body)
    packed.add("main", Function(tuple(params), Tuple(tuple(bodies))))
    out = Path(tempfile.mkdtemp(prefix=f"aot-{name}-"))
    return aot.load(aot.compile(packed, out, name=name))


def _flatten(value: object) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [x for v in value for x in _flatten(v)]
    return [np.asarray(value)]


@lru_cache(maxsize=None)
def _batch_results(index: int) -> dict[str, object]:
    """Run batch ``index`` of :data:`COMPILED`: test name -> list of output
    arrays, or the error text when the test did not import, compile or run."""
    names = COMPILED[index * BATCH:(index + 1) * BATCH]
    results: dict[str, object] = {}
    mods: dict[str, IRModule] = {}
    for name in names:
        try:
            mods[name] = _import(name)
        except aot.DiagnosticError as e:
            results[name] = f"import failed:\n{e}"
    ok = list(mods)
    try:
        fn = _compile([mods[n] for n in ok], f"node{index}")
        outs = fn(*[a for n in ok for a in _args(n)])
        for n, value in zip(ok, outs):
            results[n] = _flatten(value)
        return results
    except Exception:          # find the culprits one by one, with their own errors
        pass
    for n in ok:
        try:
            fn = _compile([mods[n]], "node")
            results[n] = _flatten(fn(*_args(n))[0])
        except Exception as e:  # noqa: BLE001 - reported as the test's failure
            results[n] = f"{type(e).__name__}: {e}"
    return results


def _check(test: str, got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want), f"{test}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        what = f"{test} output {i}"
        assert g.shape == w.shape, f"{what}: shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, expected {w.dtype}"
        if w.dtype.name.startswith(("bfloat16", "float8", "int4", "uint4")):
            # ml_dtypes' types (numpy kind "V"): compared as float32 / int8
            wide = np.float32 if w.dtype.name.startswith(("b", "f")) else np.int8
            g, w = g.astype(wide), w.astype(wide)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


@pytest.mark.parametrize("test", COMPILED)
def test_node(test: str) -> None:
    result = _batch_results(COMPILED.index(test) // BATCH)[test]
    if isinstance(result, str):
        pytest.fail(f"{test}: {result}")
    _check(test, result, _tensors(test, "output"))


@pytest.mark.parametrize("test", sorted(EXPECTED_REFUSALS))
def test_refused_with_diagnostic(test: str) -> None:
    with pytest.raises(aot.DiagnosticError) as info:
        _import(test)
    assert EXPECTED_REFUSALS[test] in str(info.value), str(info.value)


def test_refused_list_names_claimed_tests() -> None:
    assert sorted(set(REFUSED) - set(RUN)) == []


def test_claimed_list_is_the_registry() -> None:
    from aot.frontend.onnx.registry import all_converters
    registered = {c.op_type for c in all_converters() if c.domain == ""}
    assert CLAIMED == registered, (f"claimed but not registered: {sorted(CLAIMED - registered)}; "
                                   f"registered but not claimed: {sorted(registered - CLAIMED)}")


#: Claimed operators whose node tests are all refused (below opset 11);
#: tests/frontend covers them against onnxruntime.
NO_NODE_TEST = {"QLinearConv": "its one node test is opset 10",
                "Xor": "its node tests are opset 7",
                "GlobalLpPool": "it has none (tests/frontend/test_onnx_pool_nd.py)"}


def test_every_claimed_operator_runs_node_tests() -> None:
    compiled = set(COMPILED)
    tested = set().union(*(ops for name, ops in ALL_TESTS if name in compiled))
    assert sorted(CLAIMED - tested) == sorted(NO_NODE_TEST)


if os.environ.get("AOT_NODE_REPORT"):
    print(f"node tests: {len(ALL_TESTS)}, of claimed operators: {len(RUN)} "
          f"(compiled {len(COMPILED)}, refused {len(EXPECTED_REFUSALS)})")
