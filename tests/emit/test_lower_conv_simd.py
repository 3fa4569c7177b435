"""The ``simd`` tuning of the convolutions (aot/emit/lower/ops/nn_conv_simd.py)
and of nn.dense (aot/emit/lower/ops/nn.py)
against the interpreter, through the kernel-IR evaluator: weights bound as
constants (the nest needs them), over strides, dilation, asymmetric
padding, groups and depthwise, odd channel counts, layouts, conv1d, a
fused prologue and epilogue, float16 data; the conditions under which the
scalar nest is kept (non-constant or non-finite weights, the ``scalar``
tuning); and that the nest is the one the design note describes."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.kernel import ir as K
from aot.emit.kernel.walk import buffers_in, walk_stmts
from aot.emit.lower.group import lower_group
from aot.emit.lower.ops.tuning import using
from aot.passes.bind_params import bind_params

from lowering_harness import assert_close, main_as_group, run_lowered

RNG = np.random.default_rng(11)


def lower_bound(text: str, params: dict, tuning: str = "simd"):
    mod = aot.infer_types(bind_params(aot.parse(text), params, "main"))
    with using(tuning):
        group = lower_group(main_as_group(mod), "k")
    return mod, group


def check(text: str, x: np.ndarray, params: dict, tuning: str = "simd", rtol=2e-5, atol=2e-5):
    mod, group = lower_bound(text, params, tuning)
    want = np.asarray(aot.interpret(mod, x))
    (got,) = run_lowered(group, [x])
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(np.max(finite))) if finite.size else 1.0
    assert_close(got, want, rtol, atol * scale, text)
    return group


def conv_text(xs, ws, attrs: str, dtype="float32", wrap=lambda e: e, op="nn.conv2d"):
    body = wrap(f"{op}(%x, %w{', ' + attrs if attrs else ''})")
    return (f"def @main(%x: Tensor[{tuple(xs)}, {dtype}], %w: Tensor[{tuple(ws)}, {dtype}]) {{\n"
            f"  {body}\n}}\n")


def sample(shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def is_simd(group) -> bool:
    """The simd nest declares a local accumulator array."""
    return any(b.scope is K.BufferScope.LOCAL and b.name.startswith("acc")
               for b in buffers_in(group.kernel.body))


# data NCHW, weight OIHW, attributes
CASES = [
    ((1, 3, 7, 7), (4, 3, 3, 3), "padding=[1, 1]"),
    # read in place: 33 positions (a last tile overlapping the one before,
    # staged), 125 (8-channel pointwise tiles), 15 (one narrow tile)
    ((1, 1, 7, 7), (2, 1, 3, 3), ""),
    ((1, 2, 25, 5), (8, 2, 1, 1), ""),
    ((2, 4, 3, 5), (3, 4, 1, 1), ""),
    ((2, 3, 8, 6), (5, 3, 3, 2), "strides=[2, 1], padding=[1, 1]"),
    ((1, 2, 9, 9), (3, 2, 3, 3), "strides=[2, 2], padding=[1, 0, 2, 1]"),
    ((1, 4, 9, 8), (6, 2, 3, 3), "strides=[1, 2], padding=[1, 1], dilation=[2, 1], groups=2"),
    ((1, 4, 6, 6), (4, 1, 3, 3), "padding=[1, 1], groups=4"),                 # depthwise
    ((1, 6, 5, 5), (6, 1, 3, 3), "strides=[2, 2], padding=[1, 1], groups=6"),  # depthwise s2
    ((1, 3, 5, 5), (6, 1, 3, 3), "padding=[1, 1], groups=3"),                 # multiplier 2
    ((1, 4, 5, 4), (2, 2, 3, 3), "padding=[1, 1], groups=2"),                 # og 1, cg 2
    ((1, 5, 5, 5), (7, 5, 1, 1), ""),                                         # pointwise
    ((1, 5, 4, 8), (8, 5, 1, 1), ""),            # pointwise, 32 positions: read in place
    ((1, 3, 8, 8), (4, 3, 1, 1), "strides=[2, 2]"),                           # 1x1 s2
    ((1, 1, 11, 6), (5, 1, 4, 3), "strides=[2, 2], padding=[2, 1, 1, 1]"),    # ds-cnn-like
    ((1, 2, 4, 4), (2, 2, 5, 5), "padding=[2, 2]"),                           # kernel > input
    ((1, 3, 6, 7), (3, 3, 3, 3), "strides=[3, 2], dilation=[2, 3], padding=[2, 3]"),
    # small maps, many channels: the channel form
    ((1, 3, 3, 3), (16, 3, 3, 3), "padding=[1, 1]"),
    ((1, 5, 3, 2), (32, 5, 1, 1), ""),
    ((2, 4, 5, 5), (64, 2, 3, 3), "strides=[2, 2], padding=[1, 1], groups=2"),
]


@pytest.mark.parametrize("xs,ws,attrs", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_conv2d_simd(xs, ws, attrs):
    group = check(conv_text(xs, ws, attrs), sample(xs), {"w": sample(ws)})
    assert is_simd(group)


def test_channels_last_layouts():
    xs, ws = (1, 6, 5, 3), (3, 3, 3, 4)           # NHWC data, HWIO weight
    text = conv_text(xs, ws, 'padding=[1, 1], data_layout="NHWC", kernel_layout="HWIO"')
    assert is_simd(check(text, sample(xs), {"w": sample(ws)}))
    ws = (4, 3, 3, 3)                             # OHWI weight, NCHW output
    text = conv_text(xs, ws, 'padding=[1, 1], data_layout="NHWC", kernel_layout="OHWI", '
                             'out_layout="NCHW"')
    assert is_simd(check(text, sample(xs), {"w": sample(ws)}))


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 1, 11, 6), (16, 1, 4, 3), "strides=[2, 2], padding=[2, 1, 1, 1]"),      # ds-cnn stem
    ((1, 2, 12, 7), (16, 2, 5, 3), "strides=[2, 1], dilation=[2, 1], padding=[2, 1]"),
])
def test_channel_form_loops_over_kernel_rows(xs, ws, attrs):
    """More than MAX_UNROLLED_TAPS taps: the channel form loops over groups
    of stride rows (one left over in the second case) instead of unrolling
    every tap, and computes the same."""
    group = check(conv_text(xs, ws, attrs), sample(xs), {"w": sample(ws)})
    loops = [st.var.name for st in walk_stmts(group.kernel.body) if isinstance(st, K.For)]
    assert any(name.startswith("kh") for name in loops), loops


def test_conv1d():
    xs, ws = (2, 3, 11), (4, 3, 3)
    text = conv_text(xs, ws, "strides=[2], padding=[1, 2], dilation=[2]", op="nn.conv1d")
    assert is_simd(check(text, sample(xs), {"w": sample(ws)}))


def test_fused_prologue_and_epilogue():
    xs, ws = (1, 3, 6, 5), (4, 3, 3, 3)
    text = (f"def @main(%x: Tensor[{xs}, float32], %w: Tensor[{ws}, float32]) {{\n"
            f"  %0 = nn.conv2d(nn.relu(%x), %w, padding=[1, 1]);\n"
            f"  clip(add(%0, 0.5f), a_min=0f, a_max=2f)\n}}\n")
    assert is_simd(check(text, sample(xs), {"w": sample(ws)}))


# depthwise on narrow maps, read in place (nn_conv_depthwise_map.py): batch,
# dilation and asymmetric padding, a kernel taller than its padding, conv1d
DEPTHWISE_MAP = [
    ((1, 5, 9, 3), (5, 1, 3, 3), "padding=[1, 1], groups=5", "nn.conv2d"),
    ((2, 3, 7, 4), (3, 1, 3, 3), "padding=[2, 1, 2, 1], dilation=[2, 1], groups=3", "nn.conv2d"),
    ((1, 4, 6, 5), (4, 1, 3, 3), "padding=[0, 1, 0, 1], groups=4", "nn.conv2d"),
    ((1, 2, 5, 2), (2, 1, 2, 3), "padding=[1, 1, 0, 1], groups=2", "nn.conv2d"),
    ((1, 4, 10), (4, 1, 3), "padding=[1, 1], groups=4", "nn.conv1d"),
]


def reads_in_place(group) -> bool:
    """The depthwise map form has an int32 mask table and no planes."""
    names = [b.name for b in buffers_in(group.kernel.body)]
    return not any(n.startswith("planes") for n in names) and any(
        b.scope is K.BufferScope.CONST and b.dtype.name == "INT32"
        for b in buffers_in(group.kernel.body))


@pytest.mark.parametrize("xs,ws,attrs,op", DEPTHWISE_MAP, ids=[str(c[0]) for c in DEPTHWISE_MAP])
def test_depthwise_narrow_map_reads_in_place(xs, ws, attrs, op):
    text = conv_text(xs, ws, attrs, op=op, wrap=lambda e: f"nn.relu({e})")
    group = check(text, sample(xs), {"w": sample(ws)})
    assert reads_in_place(group)


def test_depthwise_narrow_map_keeps_infinities_to_their_taps():
    """A masked-off tap selects the padding's zero: an infinite element
    reaches only the outputs whose window covers it (a multiply by a zero
    mask would make NaNs in the next row's edge outputs)."""
    xs, ws = (1, 3, 6, 4), (3, 1, 3, 3)
    x = sample(xs)
    x[0, 0, 2, 3] = np.inf          # the last column: row 3's first output must stay finite
    x[0, 2, 0, 0] = -np.inf         # the first element of the last channel
    group = check(conv_text(xs, ws, "padding=[1, 1], groups=3"), x, {"w": np.abs(sample(ws))})
    assert reads_in_place(group)


def test_planes_padding_is_zeroed_whatever_the_scratch_held():
    """The planes are zeroed only around the copied input (runs of
    padding, the slack): run with every scratch element a NaN first, a
    cell the fill forgets shows up in the outputs."""
    from aot.emit.kernel.evaluate import run_kernel
    from aot.emit.kernel.simplify import simplify_kernel
    for xs, ws, attrs in [((1, 1, 5, 4), (2, 1, 3, 3), "padding=[1, 2, 0, 1]"),
                          ((1, 1, 7, 7), (1, 1, 3, 3), "strides=[2, 2], padding=[1, 0, 2, 1]"),
                          ((1, 1, 2, 2), (16, 1, 3, 3), "padding=[1, 1]")]:
        x, w = sample(xs), sample(ws)
        mod, group = lower_bound(conv_text(xs, ws, attrs), {"w": w})
        assert any(b.name.startswith("planes") for b in group.scratch)
        arrays = {group.inputs[0].name: x.reshape(-1).copy()}
        arrays.update({b.name: np.asarray(d, dtype=b.dtype.np).reshape(-1)
                       for b, d in group.constants})
        arrays.update({b.name: np.zeros(b.size, np.float32) for b in group.outputs})
        arrays.update({b.name: np.full(b.size, np.nan, np.float32) for b in group.scratch})
        run_kernel(simplify_kernel(group.kernel), arrays)
        got = arrays[group.outputs[0].name].reshape(group.outputs[0].shape)
        assert_close(got, np.asarray(aot.interpret(mod, x)), 2e-5, 2e-5, attrs)


def test_float16_data():
    xs, ws = (1, 3, 5, 5), (4, 3, 3, 3)
    text = conv_text(xs, ws, "padding=[1, 1]", dtype="float16")
    group = check(text, sample(xs, "float16"), {"w": sample(ws, "float16")},
                  rtol=3e-3, atol=3e-3)
    assert is_simd(group)


def test_non_finite_weight_keeps_the_scalar_nest():
    """Padding taps are skipped by the reference: 0 * inf would be NaN."""
    xs, ws = (1, 2, 4, 4), (2, 2, 3, 3)
    w = sample(ws)
    w[0, 0, 0, 0] = np.inf
    group = check(conv_text(xs, ws, "padding=[1, 1]"), sample(xs), {"w": w})
    assert not is_simd(group)


def test_weight_parameter_keeps_the_scalar_nest():
    xs, ws = (1, 2, 4, 4), (2, 2, 3, 3)
    mod = aot.infer_types(aot.parse(conv_text(xs, ws, "padding=[1, 1]")))
    with using("simd"):
        group = lower_group(main_as_group(mod), "k")
    assert not is_simd(group)


def test_scalar_tuning_is_the_default():
    xs, ws = (1, 3, 5, 5), (4, 3, 3, 3)
    _, group = lower_bound(conv_text(xs, ws, "padding=[1, 1]"), {"w": sample(ws)}, "scalar")
    assert not is_simd(group)
    mod = aot.infer_types(bind_params(aot.parse(conv_text(xs, ws, "padding=[1, 1]")),
                                      {"w": sample(ws)}, "main"))
    assert not is_simd(lower_group(main_as_group(mod), "k"))


def test_unknown_tuning_is_a_diagnostic():
    with pytest.raises(aot.DiagnosticError, match="unknown tuning"):
        with using("avx9000"):
            pass


DENSE = [((1, 40), (37, 40)), ((3, 9), (70, 9)), ((2, 5), (64, 5)), ((1, 7), (130, 7))]


@pytest.mark.parametrize("xs,ws", DENSE, ids=[f"{x}-{w}" for x, w in DENSE])
def test_dense_simd(xs, ws):
    text = (f"def @main(%x: Tensor[{xs}, float32], %w: Tensor[{ws}, float32]) {{\n"
            f"  nn.relu(nn.dense(%x, %w))\n}}\n")
    assert is_simd(check(text, sample(xs), {"w": sample(ws)}))


def test_dense_simd_with_prologue_and_float16_input():
    xs, ws = (2, 6), (33, 6)
    text = (f"def @main(%x: Tensor[{xs}, float16], %w: Tensor[{ws}, float32]) {{\n"
            f"  nn.dense(cast(%x, dtype=\"float32\"), %w)\n}}\n")
    assert is_simd(check(text, sample(xs, "float16"), {"w": sample(ws)}))


def test_small_dense_stays_scalar():
    xs, ws = (1, 16), (12, 16)
    text = (f"def @main(%x: Tensor[{xs}, float32], %w: Tensor[{ws}, float32]) {{\n"
            f"  nn.dense(%x, %w)\n}}\n")
    assert not is_simd(check(text, sample(xs), {"w": sample(ws)}))


SCALAR_DENSE = [((1, 8), (4, 8)), ((2, 7), (5, 7)), ((1, 1), (9, 1)), ((3, 10), (37, 10))]


@pytest.mark.parametrize("xs,ws", SCALAR_DENSE, ids=[f"{x}-{w}" for x, w in SCALAR_DENSE])
def test_dense_scalar_tiles(xs, ws):
    """The scalar tuning's float32 dense with a constant weight: 24-unit
    tiles over the weight packed at compile time (remainder tiles, odd and
    single-step reductions, a fused prologue); the packed table replaces
    the weight (no second copy in flash)."""
    text = (f"def @main(%x: Tensor[{xs}, float32], %w: Tensor[{ws}, float32]) {{\n"
            f"  nn.relu(nn.dense(negative(%x), %w))\n}}\n")
    group = check(text, sample(xs), {"w": sample(ws)}, tuning="scalar")
    assert not is_simd(group)
    tables = [b for b, _ in group.constants]
    assert [b.name.startswith("tab") for b in tables] == [True]
    assert sum(int(np.prod(b.shape)) for b in tables) == ws[0] * ws[1]
