"""Lowerings of nn.conv1d / nn.conv2d / nn.conv2d_transpose
(aot/emit/lower/ops/nn_conv.py) against the interpreter, over the attribute
tables of tests/ops/test_nn_conv.py (layouts, strides, symmetric and
asymmetric padding, dilation, groups and depthwise, integer inputs with
out_dtype, output_padding), fused prologues and epilogues (cast, nn.pad,
bias_add + relu), the shape of the generated loop nest (no padding test in
the reduction loops, scalar accumulators), and the printed C compiled with
gcc."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.emit.kernel import ir as K
from aot.emit.c.printer import print_kernel
from aot.emit.kernel.walk import walk_exprs, walk_stmts
from aot.emit.lower.ops import nn_conv
from aot.emit.kernel.simplify import simplify_kernel
from aot.ir.dtype import DType
from kernel_c_harness import build, call
from cases import conv
from cases.common import attr_text
from lowering_harness import check_lowering, lower_main, run_lowered

#: float32 accumulates in float32 (nn_conv's design note): a few ulps of
#: the sum of |products| away from the reference's float64 sum
TOL = {"float16": (3e-3, 3e-3), "float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12)}


def ttype(shape: tuple, dtype: str) -> str:
    dims = ", ".join(str(d) for d in shape)
    return f"Tensor[({dims}{',' if len(shape) == 1 else ''}), {dtype}]"


def conv_program(op: str, xs: tuple, xdt: str, ws: tuple, wdt: str, attrs: dict,
                 epilogue: str = "") -> str:
    call = f"{op}(%x, %w, {attr_text(attrs)})" if attrs else f"{op}(%x, %w)"
    return (f"def @main(%x: {ttype(xs, xdt)}, %w: {ttype(ws, wdt)}) {{ "
            f"{epilogue.replace('CALL', call) if epilogue else call} }}")


def sample(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tol(dtype: str) -> dict:
    rtol, atol = TOL.get(dtype, (0, 0))
    return {"rtol": rtol, "atol": atol}


def check(op: str, xs: tuple, ws: tuple, attrs: dict, xdt: str = "float32",
          wdt: str | None = None, seed: int = 0, epilogue: str = ""):
    wdt = wdt or xdt
    rng = np.random.default_rng(seed)
    x, w = sample(rng, xs, xdt), sample(rng, ws, wdt)
    out = attrs.get("out_dtype", xdt)
    text = conv_program(op, xs, xdt, ws, wdt, attrs, epilogue)
    return check_lowering(text, [x, w], **tol(out))


def pads_attrs(strides, padding, dilation, groups) -> dict:
    return dict(strides=list(strides), padding=list(padding), dilation=list(dilation),
                groups=groups)


# ------------------------------------------------------------------ conv2d

@pytest.mark.parametrize("xs,ws,strides,padding,dilation,groups", conv.CONV2D)
@pytest.mark.parametrize("dtypes", conv.DTYPES, ids=lambda d: "-".join(filter(None, d)))
def test_conv2d_nchw(xs, ws, strides, padding, dilation, groups, dtypes):
    xdt, wdt, out = dtypes
    attrs = pads_attrs(strides, padding, dilation, groups)
    if out:
        attrs["out_dtype"] = out
    check("nn.conv2d", xs, ws, attrs, xdt, wdt)


def test_conv2d_int8_accumulation_wraps_in_the_output_type():
    text = conv_program("nn.conv2d", (1, 8, 3, 3), "int8", (2, 8, 3, 3), "int8", {})
    x = np.full((1, 8, 3, 3), 127, np.int8)
    w = np.full((2, 8, 3, 3), 127, np.int8)
    w[1] = -128
    check_lowering(text, [x, w])
    text64 = conv_program("nn.conv2d", (1, 8, 3, 3), "int16", (2, 8, 3, 3), "int16",
                          {"out_dtype": "int64"})
    big = np.full((1, 8, 3, 3), 32767, np.int16)
    check_lowering(text64, [big, np.full((2, 8, 3, 3), -32768, np.int16)])


@pytest.mark.parametrize("xdt,out", [("float64", None), ("int8", "float32"),
                                     ("float32", "float16"), ("int32", "uint8"),
                                     ("uint8", "int16")])
def test_conv2d_other_dtypes(xdt, out):
    attrs = dict(padding=[1, 0], strides=[1, 2])
    if out:
        attrs["out_dtype"] = out
    check("nn.conv2d", (1, 3, 5, 6), (4, 3, 2, 3), attrs, xdt)


def to_layout(a: np.ndarray, canon: str, layout: str) -> np.ndarray:
    return np.transpose(a, [canon.index(c) for c in layout])


@pytest.mark.parametrize("data_layout,kernel_layout", conv.LAYOUTS)
@pytest.mark.parametrize("out_layout", conv.OUT_LAYOUTS)
def test_conv2d_layouts(data_layout, kernel_layout, out_layout):
    xs = to_layout(np.empty((2, 4, 6, 5)), "NCHW", data_layout).shape
    ws = to_layout(np.empty((6, 2, 3, 2)), "OIHW", kernel_layout).shape
    attrs = dict(strides=[2, 1], padding=[1, 0, 0, 1], groups=2, data_layout=data_layout,
                 kernel_layout=kernel_layout)
    if out_layout:
        attrs["out_layout"] = out_layout
    check("nn.conv2d", xs, ws, attrs)


@pytest.mark.parametrize("dtype,out", [("int16", "int32"), ("float32", None)])
def test_conv2d_depthwise_nhwc_hwoi(dtype, out):
    attrs = dict(padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3],
                 data_layout="NHWC", kernel_layout="HWOI")
    if out:
        attrs["out_dtype"] = out
    check("nn.conv2d", (1, 5, 5, 4), (3, 3, 4, 1), attrs, dtype)


@pytest.mark.parametrize("xs,ws,attrs", [
    # grouped with more channels than a tile, remainder channel tiles
    ((1, 10, 5, 5), (10, 5, 3, 3), dict(groups=2, padding=[1, 1])),
    ((1, 3, 6, 7), (7, 3, 1, 1), {}),                          # 7 channels: 4 + 3
    ((1, 3, 4, 23), (8, 3, 3, 3), dict(padding=[1, 1])),        # wide rows: column tiles
    ((1, 6, 5, 9), (6, 1, 3, 3), dict(groups=6, strides=[2, 2], padding=[1, 1],
                                      dilation=[1, 2])),
    ((1, 7, 4, 5), (3, 3, 1, 10), dict(groups=5, padding=[2, 2], data_layout="NHWC",
                                        kernel_layout="HWIO")),  # depthwise x2, NHWC
    ((1, 2, 4, 4), (3, 2, 3, 3), dict(padding=[5, 0, 4, 6])),   # windows wholly in padding
    ((1, 1, 3, 12), (2, 1, 2, 9), dict(padding=[0, 4, 1, 4], dilation=[2, 1])),
])
def test_conv2d_tiles_and_borders(xs, ws, attrs):
    check("nn.conv2d", xs, ws, attrs)


@pytest.mark.parametrize("layout,xs,ws", [
    ("NCHW", (1, 6, 5, 5), (8, 6, 1, 1)),            # 25 positions: tiles cross rows
    ("NHWC", (2, 3, 5, 6), (8, 6, 1, 1)),
])
@pytest.mark.parametrize("prologue", [False, True])
def test_pointwise_flattened_tiles(layout, xs, ws, prologue):
    # the epilogue adds a tensor varying along H only: every tile column's
    # (row, column) must be right, not just its flat position
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    if layout == "NHWC":
        ws = (1, 1, ws[1], ws[0])
    rows = (1, 8, xs[2], 1) if layout == "NCHW" else (1, xs[1], 1, 8)
    x = "cast(%x, dtype=\"int32\")" if prologue else "%x"
    text = (f"def @main(%x: {ttype(xs, 'int16')}, %w: {ttype(ws, 'int16')}, "
            f"%r: {ttype(rows, 'int32')}) {{ add(nn.conv2d({x}, %w, data_layout=\"{layout}\", "
            f"kernel_layout=\"{kernel_layout}\", out_dtype=\"int32\"), %r) }}")
    rng = np.random.default_rng(11)
    group = check_lowering(text, [sample(rng, xs, "int16"), sample(rng, ws, "int16"),
                                  sample(rng, rows, "int32")])
    assert any(isinstance(s, K.For) and s.var.name.startswith("pt")
               for s in walk_stmts(group.kernel.body))


# ------------------------------------------------------------------ conv1d

@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", conv.CONV1D)
@pytest.mark.parametrize("layout", ["NCW", "NWC"])
def test_conv1d(xs, ws, stride, padding, dilation, groups, layout):
    attrs = dict(strides=[stride], padding=list(padding), dilation=[dilation], groups=groups,
                 data_layout=layout)
    if layout == "NWC":
        xs = (xs[0], xs[2], xs[1])
    check("nn.conv1d", xs, ws, attrs)
    check("nn.conv1d", xs, ws, dict(attrs, out_dtype="int32"), "int8")


def test_conv1d_kernel_layout_wio():
    check("nn.conv1d", (1, 9, 4), (3, 4, 5), dict(padding=[1, 2], data_layout="NWC",
                                                  kernel_layout="WIO"))


# ------------------------------------------------------- conv2d_transpose

@pytest.mark.parametrize("xs,ws,strides,padding,output_padding,dilation,groups",
                         conv.TRANSPOSE)
@pytest.mark.parametrize("dtype,out", [("float32", None), ("int8", "int32")])
def test_conv2d_transpose(xs, ws, strides, padding, output_padding, dilation, groups, dtype,
                          out):
    attrs = pads_attrs(strides, padding, dilation, groups)
    attrs["output_padding"] = list(output_padding)
    if out:
        attrs["out_dtype"] = out
    check("nn.conv2d_transpose", xs, ws, attrs, dtype)


@pytest.mark.parametrize("xs,ws,attrs", conv.TRANSPOSE_MORE)
def test_conv2d_transpose_more(xs, ws, attrs):
    check("nn.conv2d_transpose", xs, ws, attrs)


# ------------------------------------------------------- fused neighbours

def test_conv2d_bias_relu_fused():
    text = ("def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(8, 3, 3, 3), float32], "
            "%b: Tensor[(8,), float32]) { "
            "nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b)) }")
    rng = np.random.default_rng(5)
    args = [sample(rng, (1, 3, 6, 6), "float32"), sample(rng, (8, 3, 3, 3), "float32"),
            sample(rng, (8,), "float32")]
    group = check_lowering(text, args, **tol("float32"))
    assert group.anchor == "nn.conv2d"
    assert group.ops == ("nn.conv2d", "nn.bias_add", "nn.relu")
    assert np.any(run_lowered(group, args)[0] == 0)   # relu did clip something


def test_conv2d_int8_prologue_and_requantising_epilogue():
    # zero-point subtraction before the conv, bias + clip + cast after it
    text = ("def @main(%x: Tensor[(1, 4, 5, 5), uint8], %w: Tensor[(4, 1, 3, 3), int8], "
            "%b: Tensor[(4,), int32]) { "
            "%0 = subtract(cast(%x, dtype=\"int16\"), 3i16); "
            "%1 = nn.conv2d(%0, %w, padding=[1, 1], groups=4, out_dtype=\"int32\"); "
            "cast(clip(divide(nn.bias_add(%1, %b), 4), a_min=-128f, a_max=127f), "
            "dtype=\"int8\") }")
    rng = np.random.default_rng(6)
    args = [rng.integers(0, 256, (1, 4, 5, 5)).astype(np.uint8),
            sample(rng, (4, 1, 3, 3), "int8"), rng.integers(-500, 500, (4,)).astype(np.int32)]
    group = check_lowering(text, args)
    assert group.anchor == "nn.conv2d"


def test_conv2d_with_fused_pad_prologue():
    text = ("def @main(%x: Tensor[(1, 2, 4, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) { "
            "nn.conv2d(nn.pad(%x, 0.5f, pad_width=[[0, 0], [0, 0], [1, 2], [2, 1]]), %w, "
            "strides=[2, 1]) }")
    rng = np.random.default_rng(7)
    check_lowering(text, [sample(rng, (1, 2, 4, 5), "float32"),
                          sample(rng, (3, 2, 3, 3), "float32")], **tol("float32"))


def test_conv2d_double_accumulator_switch(monkeypatch):
    monkeypatch.setattr(nn_conv, "FLOAT32_ACCUMULATOR", DType.FLOAT64)
    group = check("nn.conv2d", (1, 3, 5, 5), (2, 3, 3, 3), dict(padding=[1, 1]))
    decls = [s.var.dtype for s in walk_stmts(group.kernel.body) if isinstance(s, K.Decl)
             and s.var.name.startswith("acc")]
    assert DType.FLOAT64 in decls and DType.FLOAT32 in decls   # accumulators, the sink's


# ------------------------------------------------------ shape of the nest

def _loops(stmt: K.Stmt) -> list[K.For]:
    return [s for s in walk_stmts(stmt) if isinstance(s, K.For)]


def _innermost_loops(stmt: K.Stmt) -> list[K.For]:
    return [f for f in _loops(stmt) if not _loops(f.body)]


def _reduction_loops(kernel: K.Kernel) -> list[K.For]:
    """Loops containing an accumulator update (the multiply-accumulate
    nests)."""
    out = []
    for f in _loops(kernel.body):
        if any(isinstance(s, K.Assign) and s.var.name.startswith("acc")
               for s in walk_stmts(f.body)) and not any(
                   isinstance(s, K.Store) for s in walk_stmts(f.body)):
            out.append(f)
    return out


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 3, 8, 8), (8, 3, 3, 3), dict(padding=[1, 1])),
    ((1, 8, 8, 3), (3, 3, 3, 8), dict(padding=[1, 2, 0, 1], data_layout="NHWC",
                                      kernel_layout="HWIO", strides=[2, 2])),
    ((1, 6, 7, 7), (6, 1, 3, 3), dict(padding=[1, 1], groups=6, dilation=[2, 2])),
])
def test_no_bounds_test_in_the_reduction_loops(xs, ws, attrs):
    text = conv_program("nn.conv2d", xs, "float32", ws, "float32", attrs)
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    # a depthwise layer's rows are all unrolled (constant tap ranges in the
    # border rows, two-row tiles): then no statement of the kernel tests
    bodies = [f.body for f in _reduction_loops(kernel)] or [kernel.body]
    assert any(isinstance(s, K.Assign) and s.var.name.startswith("acc")
               for b in bodies for s in walk_stmts(b))
    for b in bodies:
        for s in walk_stmts(b):
            assert not isinstance(s, K.IfThenElse)
            if isinstance(s, (K.Assign, K.Decl)) and s.var.name.startswith(("acc", "x", "w")):
                value = s.value if isinstance(s, K.Assign) else s.init
                assert not any(isinstance(e, K.Select) for e in walk_exprs(value)), s


def test_pointwise_nchw_is_a_dot_product_over_channels_with_register_tiles():
    text = conv_program("nn.conv2d", (1, 16, 4, 8), "float32", (8, 16, 1, 1), "float32", {})
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    inner = _innermost_loops(kernel.body)
    reductions = [f for f in inner if f in _reduction_loops(kernel)]
    assert reductions and all(isinstance(f.extent, K.Const) and f.extent.value == 16
                              for f in reductions)
    body = reductions[0].body
    loads = [e for s in walk_stmts(body) for e in walk_exprs_of(s) if isinstance(e, K.Load)]
    macs = [s for s in walk_stmts(body) if isinstance(s, K.Assign)]
    assert len(macs) == 24 and len(loads) == 10          # a 4 x 6 tile: 10 loads, 24 MACs
    assert all(isinstance(s.var, K.Var) and s.var.dtype is DType.FLOAT32 for s in macs)


def walk_exprs_of(s: K.Stmt):
    if isinstance(s, K.Decl) and s.init is not None:
        yield from walk_exprs(s.init)
    elif isinstance(s, K.Assign):
        yield from walk_exprs(s.value)
    elif isinstance(s, K.Store):
        yield from walk_exprs(s.index)
        yield from walk_exprs(s.value)


def test_kernel_column_loops_are_unrolled_and_row_ranges_precomputed():
    text = conv_program("nn.conv2d", (1, 4, 9, 9), "int8", (8, 4, 3, 3), "int8",
                        dict(padding=[1, 1], out_dtype="int32"))
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    loops = _reduction_loops(kernel)
    assert loops
    for f in loops:
        assert not f.var.name.startswith("wr")      # kw: constant ranges, unrolled
        for e in (f.start, f.extent):                # bounds computed outside the loop
            assert all(isinstance(x, (K.Var, K.Const, K.BinOp)) for x in walk_exprs(e)), e
    c = print_kernel(kernel)
    assert "int32_t acc" in c


# ------------------------------------------------------------- C compile

@pytest.mark.parametrize("text_args", [
    (conv_program("nn.conv2d", (1, 3, 6, 7), "float32", (5, 3, 3, 3), "float32",
                  dict(padding=[1, 2, 0, 1], strides=[1, 2])), "float32"),
    (conv_program("nn.conv2d", (1, 6, 4, 6), "int8", (3, 3, 6, 1), "int8",
                  dict(padding=[1, 1], groups=6, data_layout="NHWC", kernel_layout="HWOI",
                       out_dtype="int32")), "int8"),
    (conv_program("nn.conv2d_transpose", (1, 2, 3, 3), "float32", (2, 3, 3, 3), "float32",
                  dict(strides=[2, 2], padding=[1, 1], output_padding=[1, 1])), "float32"),
])
def test_printed_c_matches_the_evaluator(tmp_path, text_args):
    text, dtype = text_args
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    rng = np.random.default_rng(8)
    args = [sample(rng, b.shape, b.dtype.np.name) for b in group.inputs]
    want = run_lowered(group, args)[0]
    lib = build([kernel], tmp_path, "conv")
    arrays = {b.name: np.ascontiguousarray(a, dtype=b.dtype.np).reshape(-1)
              for b, a in zip(group.inputs, args)}
    out = np.zeros(group.outputs[0].size, dtype=group.outputs[0].dtype.np)
    arrays[group.outputs[0].name] = out
    call(lib, kernel, arrays)
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------- random

@st.composite
def conv_configs(draw):
    groups = draw(st.integers(1, 3))
    cin = groups * draw(st.integers(1, 2))
    cout = groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    h = draw(st.integers(max(1, (kh - 1) * dil[0] + 1 - pad[0] - pad[2]), 6))
    w = draw(st.integers(max(1, (kw - 1) * dil[1] + 1 - pad[1] - pad[3]), 6))
    nhwc = draw(st.booleans())
    return (1, cin, h, w), (cout, cin // groups, kh, kw), strides, pad, dil, groups, nhwc


@settings(max_examples=15, deadline=None)
@given(conv_configs())
def test_conv2d_random_configurations(cfg):
    xs, ws, strides, pad, dil, groups, nhwc = cfg
    attrs = dict(strides=list(strides), padding=list(pad), dilation=list(dil), groups=groups,
                 out_dtype="int32")
    if nhwc:
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
        xs = (xs[0], xs[2], xs[3], xs[1])
        ws = (ws[2], ws[3], ws[1], ws[0])
    check("nn.conv2d", xs, ws, attrs, "int8")


@st.composite
def transpose_configs(draw):
    groups = draw(st.integers(1, 2))
    cin = groups * draw(st.integers(1, 2))
    og = draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    out_pad = (draw(st.integers(0, strides[0] - 1)), draw(st.integers(0, strides[1] - 1)))
    full = ((h - 1) * strides[0] + (kh - 1) * dil[0] + 1 + out_pad[0],
            (w - 1) * strides[1] + (kw - 1) * dil[1] + 1 + out_pad[1])
    top = draw(st.integers(0, (full[0] - 1) // 2))
    left = draw(st.integers(0, (full[1] - 1) // 2))
    bottom = draw(st.integers(0, full[0] - 1 - top))
    right = draw(st.integers(0, full[1] - 1 - left))
    return ((1, cin, h, w), (cin, og, kh, kw), strides, (top, left, bottom, right), out_pad,
            dil, groups)


@settings(max_examples=12, deadline=None)
@given(transpose_configs())
def test_conv2d_transpose_random_configurations(cfg):
    xs, ws, strides, pad, out_pad, dil, groups = cfg
    attrs = dict(strides=list(strides), padding=list(pad), output_padding=list(out_pad),
                 dilation=list(dil), groups=groups, out_dtype="int32")
    check("nn.conv2d_transpose", xs, ws, attrs, "int8")


def test_empty_channels():
    check("nn.conv2d", (1, 0, 4, 4), (2, 0, 3, 3), dict(padding=[1, 1]))
    check("nn.conv2d", (1, 2, 4, 4), (0, 2, 3, 3), {})


# ------------------------------------------------------------- larger

@pytest.mark.slow
@pytest.mark.parametrize("xs,ws,attrs,dtype", [
    ((1, 16, 12, 12), (16, 16, 3, 3), dict(padding=[1, 1]), "float32"),
    ((1, 10, 5, 32), (3, 3, 32, 1), dict(padding=[1, 1], groups=32, data_layout="NHWC",
                                         kernel_layout="HWOI"), "int8"),
    ((1, 32, 5, 5), (24, 32, 1, 1), {}, "int8"),
    ((1, 1, 49, 10), (8, 1, 10, 4), dict(strides=[2, 2], padding=[4, 1, 5, 2]), "float32"),
])
def test_conv2d_larger(xs, ws, attrs, dtype):
    if dtype == "int8":
        attrs = dict(attrs, out_dtype="int32")
    check("nn.conv2d", xs, ws, attrs, dtype)
