"""Helpers of the ONNX importer tests: build small models with
``onnx.helper`` and compare the imported module, run by the reference
interpreter, with onnxruntime (graph optimisations off, so that QDQ
graphs keep their literal meaning)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import aot

#: numpy dtype -> ONNX element type
ELEM = {np.dtype(k): v for k, v in [
    (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
    (np.float16, TensorProto.FLOAT16), (np.int8, TensorProto.INT8),
    (np.uint8, TensorProto.UINT8), (np.int16, TensorProto.INT16),
    (np.uint16, TensorProto.UINT16), (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64), (np.bool_, TensorProto.BOOL)]}


def model(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, np.ndarray | tuple],
          outputs: Sequence[str], inits: Mapping[str, np.ndarray] | None = None,
          opset: int = 13, infer: bool = True) -> onnx.ModelProto:
    """A model whose graph inputs are ``inputs`` (name -> example array, or
    (dtype, shape) with strings for symbolic dimensions) and whose outputs
    get their types from ONNX shape inference."""
    ins = []
    for name, spec in inputs.items():
        if isinstance(spec, np.ndarray):
            dtype, shape = spec.dtype, list(spec.shape)
        else:
            dtype, shape = np.dtype(spec[0]), list(spec[1])
        ins.append(helper.make_tensor_value_info(name, ELEM[np.dtype(dtype)], shape))
    outs = []
    for name in outputs:
        vi = onnx.ValueInfoProto()
        vi.name = name
        outs.append(vi)
    inits = inits or {}
    graph = helper.make_graph(list(nodes), "test", ins, outs,
                              initializer=[numpy_helper.from_array(np.asarray(v), k)
                                           for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 10)
    if infer:
        m = onnx.shape_inference.infer_shapes(m)
        typed = {vi.name: vi for vi in list(m.graph.input) + list(m.graph.value_info)}
        for out in m.graph.output:
            if out.type.WhichOneof("value") is None and out.name in typed:
                out.CopyFrom(typed[out.name])
    return m


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> \
        onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), **attrs)


def run_ort(m: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def run_aot(m: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
            input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> list[np.ndarray]:
    mod = aot.from_onnx(m, input_shapes=dict(input_shapes or {}))
    assert_round_trip(mod)
    result = aot.interpret(mod, *feeds.values())
    return list(result) if isinstance(result, tuple) else [result]


def assert_round_trip(mod: aot.IRModule) -> None:
    """The imported module prints and parses back to itself."""
    from aot.ir.structural import structural_equal
    text = str(mod)
    again = aot.infer_types(aot.parse(text, source_name="imported.relay"))
    assert structural_equal(mod["main"], again["main"]), text


def check(m: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float = 1e-5,
          atol: float = 1e-5, input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> None:
    """The imported module agrees with onnxruntime on ``feeds`` (exactly
    for integer and bool results)."""
    want = run_ort(m, feeds)
    got = run_aot(m, feeds, input_shapes)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"output {i}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype} != {w.dtype}"
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {i}")


def check_single(op_type: str, inputs: Mapping[str, np.ndarray], opset: int = 13,
                 inits: Mapping[str, np.ndarray] | None = None, n_outputs: int = 1,
                 rtol: float = 1e-5, atol: float = 1e-5, **attrs: Any) -> None:
    """One ``op_type`` node over graph inputs ``inputs`` and constant
    initializers ``inits`` (in that input order; a name mapped to None in
    ``inits`` is an omitted optional input)."""
    inits = dict(inits or {})
    names = list(inputs) + [k for k in inits]
    node_inputs = ["" if inits.get(n, 0) is None else n for n in names]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    outs = [f"y{i}" for i in range(n_outputs)]
    m = model([node(op_type, node_inputs, outs, **attrs)], inputs, outs,
              {k: v for k, v in inits.items() if v is not None}, opset=opset)
    check(m, inputs, rtol=rtol, atol=atol)


def rand(shape: Sequence[int], dtype: Any = np.float32, seed: int = 0, low: float = -3,
         high: float = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(low, high, size=tuple(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=tuple(shape)).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(int(low), int(info.min)), min(int(high), int(info.max))
    return rng.integers(lo, hi + 1, size=tuple(shape)).astype(dt)
