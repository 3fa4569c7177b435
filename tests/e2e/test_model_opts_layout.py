"""ConvertLayout, CombineParallelConv2D and CombineParallelDense on
realistic models, as seen in the generated C: each model is compiled with
the pass disabled and with it required, the artifacts' metadata compared
(kernels and the operators fused into them, constant and arena bytes),
and both libraries' results compared with the reference interpreter.

The passes are not in the default DATAFLOW pipeline yet, so
:func:`compile_with` runs DATAFLOW's passes before FuseOps with the pass
at the place proposed for it (ConvertLayout before FoldScaleAxis, the
combine passes after it) under the same context, then ``aot.compile``;
once a pass is in DATAFLOW, ``aot.compile`` alone runs it."""

from __future__ import annotations

import collections
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.passes.manager import PassContext, Sequential
from aot.passes.pipelines import DATAFLOW, GRAPH_FORM

RNG = np.random.default_rng(3)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _before_fuse(pass_name: str) -> list[str]:
    """DATAFLOW's passes before FuseOps, with ``pass_name`` where it is
    proposed to go (unless DATAFLOW already has it)."""
    names = [n for n in DATAFLOW.names if n != "FuseOps"]
    if pass_name in DATAFLOW.names:
        return names
    anchor = "FoldScaleAxis"
    at = names.index(anchor) + (0 if pass_name == "ConvertLayout" else 1) \
        if anchor in names else len(names)
    return names[:at] + [pass_name] + names[at:]


def compile_with(mod, pass_name: str, ctx: PassContext, name: str):
    out = Path(tempfile.mkdtemp(prefix=f"aot-{name}-"))
    with ctx:
        prepared = Sequential(_before_fuse(pass_name))(GRAPH_FORM(mod))
        return aot.compile(prepared, out, name=name)


def variants(mod, pass_name: str, name: str, **options):
    """(artifact with the pass disabled, artifact with it required)."""
    off = compile_with(mod, pass_name, PassContext(disabled=[pass_name]), name)
    on = compile_with(mod, pass_name, PassContext(required=[pass_name],
                                                  options={pass_name: options}), name)
    return off, on


def kernel_ops(art) -> collections.Counter:
    """Operators over all kernels (each kernel function counted once)."""
    return collections.Counter(op for k in art.metadata["kernels"] for op in k["ops"])


def kernel_calls(art) -> int:
    """Kernel calls in the generated entry function (kernel functions of
    the same shapes are shared between calls, so this can exceed the
    number of kernels)."""
    source = (Path(art.root) / "src" / f"{art.name}.c").read_text()
    entry = source[source.index(f"int32_t {art.name}_run("):]
    return len(re.findall(rf"\b{art.name}_k\d+\(", entry))


def anchors(art) -> collections.Counter:
    return collections.Counter(k["anchor"] for k in art.metadata["kernels"])


def assert_runs_like_interpreter(art, mod, *args, tol=1e-4):
    want = aot.interpret(aot.infer_types(mod), *args)
    got = aot.load(art)(*args)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# ------------------------------------------------------------ ConvertLayout

def tf_style_model():
    """A MobileNet-like NHWC stack as TensorFlow exporters write it to ONNX:
    every NCHW convolution between two Transposes, the bias add and ReLU6
    (Clip) in NHWC, a mean over H and W and a MatMul classifier."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    def node(op_type, inputs, outputs, **attrs):
        return helper.make_node(op_type, inputs, outputs, **attrs)

    def rand(shape, seed):
        return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)

    nodes, inits = [], {}
    prev, cin = "input_1", 3
    layers = [(8, 2, 1, 3), (8, 1, 8, 3), (16, 1, 1, 1), (16, 2, 16, 3), (16, 1, 1, 1)]
    for i, (cout, stride, group, k) in enumerate(layers):
        nodes += [node("Transpose", [prev], [f"t{i}"], perm=[0, 3, 1, 2]),
                  node("Conv", [f"t{i}", f"w{i}"], [f"c{i}"], strides=[stride, stride],
                       pads=[k // 2] * 4, group=group),
                  node("Transpose", [f"c{i}"], [f"n{i}"], perm=[0, 2, 3, 1]),
                  node("Add", [f"n{i}", f"b{i}"], [f"a{i}"]),
                  node("Clip", [f"a{i}", "zero", "six"], [f"r{i}"])]
        inits[f"w{i}"] = rand((cout, cin // group, k, k), seed=i)
        inits[f"b{i}"] = rand((cout,), seed=10 + i)
        prev, cin = f"r{i}", cout
    nodes += [node("ReduceMean", [prev], ["pool"], axes=[1, 2], keepdims=0),
              node("MatMul", ["pool", "fc"], ["out"])]
    inits.update(zero=np.asarray(0, np.float32), six=np.asarray(6, np.float32),
                 fc=rand((cin, 10), seed=99))
    graph = helper.make_graph(
        nodes, "tf_style",
        [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, [1, 16, 16, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = min(m.ir_version, 10)
    onnx.checker.check_model(m)
    return aot.from_onnx(m)


def test_convert_layout_removes_the_transposes_of_a_tf_style_model():
    """Without the pass, a layer's add and clip sit between two transposes
    in a kernel of their own (arithmetic is no prologue of a convolution)
    that stores an intermediate.  With it the transposes cancel but the
    input's (fused into the first convolution), the add becomes a channel
    bias that FoldScaleAxis turns into a bias_add, and add/clip move to the
    convolutions' epilogues: fewer kernels, no intermediate."""
    mod = tf_style_model()
    x = f32(1, 16, 16, 3)
    off, on = variants(mod, "ConvertLayout", "tfstyle")
    ops_off, ops_on = kernel_ops(off), kernel_ops(on)
    between = [k["ops"] for k in off.metadata["kernels"] if k["anchor"] is None]
    assert between.count(["transpose", "add", "clip", "transpose"]) >= 3, between
    assert ops_off["transpose"] >= 7 and ops_on["transpose"] == 1
    assert len(on.metadata["kernels"]) < len(off.metadata["kernels"])
    assert ops_on["nn.bias_add"] == ops_on["nn.conv2d"] and ops_on["add"] == 0
    for k in on.metadata["kernels"]:   # no elementwise prologue before any anchor
        if k["anchor"] == "nn.conv2d":
            assert k["ops"][-2:] == ["nn.bias_add", "clip"], k["ops"]
    assert sum(ops_on.values()) < sum(ops_off.values())
    assert on.metadata["constant_bytes"] == off.metadata["constant_bytes"]
    assert on.metadata["arena_bytes"] <= off.metadata["arena_bytes"]
    assert_runs_like_interpreter(off, mod, x)
    assert_runs_like_interpreter(on, mod, x)


def test_convert_layout_to_nhwc_leaves_no_transpose():
    mod = tf_style_model()
    x = f32(1, 16, 16, 3)
    options = {"ConvertLayout": {"desired_layouts": ("nn.conv2d:NHWC",)}}
    nhwc = compile_with(mod, "ConvertLayout",
                        PassContext(required=["ConvertLayout"], options=options), "tfnhwc")
    assert kernel_ops(nhwc)["transpose"] == 0
    assert all("data_layout=NHWC" in k["source"] for k in nhwc.metadata["kernels"]
               if k["anchor"] == "nn.conv2d")
    assert_runs_like_interpreter(nhwc, mod, x)


# ----------------------------------------------------- CombineParallelConv2D

INCEPTION_BLOCK = """
  let %{p}a = nn.relu(nn.bias_add(nn.conv2d(%{x}, %{p}wa), %{p}ba));
  let %{p}r3 = nn.relu(nn.bias_add(nn.conv2d(%{x}, %{p}wr3), %{p}br3));
  let %{p}c3 = nn.relu(nn.bias_add(nn.conv2d(%{p}r3, %{p}wc3, padding=[1, 1]), %{p}bc3));
  let %{p}r5 = nn.relu(nn.bias_add(nn.conv2d(%{x}, %{p}wr5), %{p}br5));
  let %{p}c5 = nn.relu(nn.bias_add(nn.conv2d(%{p}r5, %{p}wc5, padding=[2, 2]), %{p}bc5));
  let %{p}pp = nn.relu(nn.bias_add(nn.conv2d(nn.max_pool2d(%{x}, pool_size=[3, 3], padding=[1, 1]),
                                         %{p}wpp), %{p}bpp));
  let %{p}out = concatenate((%{p}a, %{p}c3, %{p}c5, %{p}pp), axis=1);"""


def inception_model():
    """Two Inception blocks (GoogLeNet's shape, small): per block three 1x1
    convolutions of the block input (one a branch, two reducing for a 3x3
    and a 5x5), a pooled 1x1 branch, the concatenation."""
    params: dict[str, np.ndarray] = {}
    body = []
    x, cin = "x", 16
    for b in range(2):
        p = f"b{b}"
        body.append(INCEPTION_BLOCK.format(p=p + "_", x=x))
        for name, shape in [("wa", (8, cin, 1, 1)), ("wr3", (8, cin, 1, 1)), ("wc3", (12, 8, 3, 3)),
                            ("wr5", (4, cin, 1, 1)), ("wc5", (6, 4, 5, 5)),
                            ("wpp", (6, cin, 1, 1))]:
            params[f"{p}_{name}"] = f32(*shape, scale=0.3)
            params[f"{p}_b{name[1:]}"] = f32(shape[0], scale=0.1)
        x, cin = f"{p}_out", 32
    sig = ", ".join(["%x: Tensor[(1, 16, 12, 12), float32]"] +
                    [f"%{k}: Tensor[{tuple(v.shape)}, float32]".replace(",)", ")")
                     for k, v in params.items()])
    text = f"def @main({sig}) {{{''.join(body)}\n  nn.global_avg_pool2d(%{x})\n}}"
    from aot.passes.bind_params import bind_params
    return aot.infer_types(bind_params(aot.infer_types(aot.parse(text)), params, "main"))


def test_combine_parallel_conv2d_on_inception_blocks():
    """Per block the three 1x1 convolutions of the block input become one
    (with their biases and ReLUs): two fewer kernel calls per block;
    the 3x3 and 5x5 convolutions and the concatenation read channel slices
    of the combined output through their prologues.  The weights take the
    same flash (concatenated, not copied)."""
    mod = inception_model()
    x = f32(1, 16, 12, 12)
    off, on = variants(mod, "CombineParallelConv2D", "inception")
    assert kernel_calls(on) == kernel_calls(off) - 2 * 2
    assert len(on.metadata["kernels"]) < len(off.metadata["kernels"])
    combined = [k for k in on.metadata["kernels"] if "channels=20" in k["source"]]
    assert len(combined) == 2 and all(k["ops"] == ["nn.conv2d", "nn.bias_add", "nn.relu"]
                                      for k in combined)
    assert kernel_ops(on)["strided_slice"] > 0          # fused into their readers,
    assert all(k["ops"] != ["strided_slice"] for k in on.metadata["kernels"])  # never copied
    assert on.metadata["constant_bytes"] == off.metadata["constant_bytes"]
    assert_runs_like_interpreter(off, mod, x)
    assert_runs_like_interpreter(on, mod, x)


# ------------------------------------------------------ CombineParallelDense

HEADS = """
def @main(%x: Tensor[(2, 24), float32], %wq: Tensor[(16, 24), float32],
          %wk: Tensor[(16, 24), float32], %wv: Tensor[(8, 24), float32],
          %bq: Tensor[(16,), float32], %bk: Tensor[(16,), float32], %bv: Tensor[(8,), float32]) {
  let %q = tanh(add(nn.dense(%x, %wq), %bq));
  let %k = tanh(add(nn.dense(%x, %wk), %bk));
  let %v = nn.relu(add(nn.dense(%x, %wv), %bv));
  sum(multiply(multiply(%q, %k), concatenate((%v, %v), axis=1)), axis=[1])
}"""


@pytest.mark.parametrize("to_batch", [False, True])
def test_combine_parallel_dense_on_projection_heads(to_batch):
    """Three projections of one input (query/key/value style).  The
    concatenate variant: one dense kernel computes all three with their
    biases (FoldScaleAxis made each ``add`` a ``bias_add``), the tanh and
    relu read slices, fewer kernel calls.  The batch_matmul variant
    combines the two of equal shape into one batch_matmul; on this backend
    it gains nothing (the data is stacked, the result split: copies)."""
    params = {"wq": f32(16, 24), "wk": f32(16, 24), "wv": f32(8, 24), "bq": f32(16),
              "bk": f32(16), "bv": f32(8)}
    from aot.passes.bind_params import bind_params
    mod = aot.infer_types(bind_params(aot.infer_types(aot.parse(HEADS)), params, "main"))
    x = f32(2, 24)
    options = {"to_batch_matmul": to_batch, "min_num_branches": 2 if to_batch else 3}
    off, on = variants(mod, "CombineParallelDense", "heads", **options)
    assert anchors(off)["nn.dense"] == 3
    if to_batch:
        assert anchors(on)["nn.batch_matmul"] == 1 and anchors(on)["nn.dense"] == 1
    else:
        assert anchors(on)["nn.dense"] == 1 and kernel_ops(on)["nn.bias_add"] == 1
        assert kernel_calls(on) < kernel_calls(off)
        assert on.metadata["constant_bytes"] == off.metadata["constant_bytes"]
    assert_runs_like_interpreter(off, mod, x)
    assert_runs_like_interpreter(on, mod, x)
