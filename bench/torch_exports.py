"""Real torch exports through aot: a one-off check, not run by CI or ``make test``.

``examples/architectures/models.py`` builds node-for-node replicas of what
PyTorch's exporters write, so that the test suite needs no torch.  This
script checks the real thing: it builds the models in PyTorch
(torchvision classifiers with ``weights=None`` at reduced input sizes,
keyword spotters with Conv1d, GRU and LSTM, a transformer encoder layer, a
conv-transpose autoencoder, upsampling, small Hardswish / SiLU / GELU /
LayerNorm models, models with ``torch.cond``, ``while_loop`` and
``torch.jit.script``-ed ``if`` / ``for`` / ``while``; seeded random
weights, eval mode), exports each with
both exporters -- the classic TorchScript-based
``torch.onnx.export(..., dynamo=False)`` and the dynamo exporter
``torch.onnx.export(..., dynamo=True)``, which needs onnxscript -- into a
temporary directory, compiles the file with ``aot.from_onnx`` +
``aot.compile`` (C for the host) + ``aot.load`` and compares the outputs
with onnxruntime on three seeded standard-normal inputs (each also
negated or scaled for the control-flow models).  Prints one row
per model and exporter: the opset, whether it compiles, the largest
absolute error relative to max(1, the output's magnitude), or the
diagnostic (``export failed: ...`` when torch itself cannot export,
``crash: ...`` for an exception other than aot's DiagnosticError, which is
a bug); then, for the models compiled with a C loop or ``if``, their
arena and object-pool bytes.  Usage (torch, torchvision, onnxscript and onnxruntime installed)::

    python bench/torch_exports.py [--models resnet18,kws_gru]
                                  [--exporters classic,classic@13,dynamo] [--markdown]
                                  [--json out.json] [--keep DIR] [--traceback]

Exit status 0 when every export compiles and matches (max error below
1e-3), 1 otherwise, 2 when torch is not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
try:
    import aot
except ImportError:
    sys.path.insert(0, str(ROOT))
    import aot
sys.path.insert(0, str(ROOT / "bench"))
from architectures import compile_sized  # noqa: E402  (bench/ is not a package)

try:
    import torch
    from torch import nn
except ImportError:
    torch = None  # type: ignore[assignment]
    nn = None  # type: ignore[assignment]

#: the largest relative error counted as a match
TOLERANCE = 1e-3
#: the token-id range of the models that take token ids
VOCAB = 50


def _sequence_modules() -> tuple[type, type, type]:
    """The keyword spotters and the encoder layer (torch.nn modules)."""

    class KwsConv1d(nn.Module):
        """Four Conv1d/BatchNorm/ReLU blocks over 40 MFCCs x 49 frames."""

        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            channels = 40
            for out, stride in ((64, 1), (64, 2), (64, 1), (64, 2)):
                layers += [nn.Conv1d(channels, out, 3, stride, padding=1),
                           nn.BatchNorm1d(out), nn.ReLU()]
                channels = out
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool1d(1)
            self.fc = nn.Linear(64, 12)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.features(x)), 1))

    class KwsRecurrent(nn.Module):
        """nn.GRU / nn.LSTM(40, 64, batch_first=True), the last step's output
        into a 12-way classifier."""

        def __init__(self, cell: str, layers: int = 1, bidirectional: bool = False) -> None:
            super().__init__()
            rnn = nn.GRU if cell == "gru" else nn.LSTM
            self.rnn = rnn(40, 64, num_layers=layers, batch_first=True,
                           bidirectional=bidirectional)
            self.fc = nn.Linear(128 if bidirectional else 64, 12)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.fc(out[:, -1])

    class Encoder(nn.Module):
        """nn.TransformerEncoderLayer(64, 4, 128, gelu) over 16 tokens."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0,
                                                    activation="gelu", batch_first=True)

        def forward(self, x):
            return self.layer(x)

    return KwsConv1d, KwsRecurrent, Encoder


def _image_modules() -> tuple[type, type, type]:
    """The autoencoder, the upsampling decoder and the activation models."""

    class Autoencoder(nn.Module):
        """Conv(1->16, s2) ReLU Conv(16->32, s2) ReLU, ConvTranspose back, Sigmoid."""

        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                nn.ConvTranspose2d(32, 16, 3, 2, 1, output_padding=1), nn.ReLU(),
                nn.ConvTranspose2d(16, 1, 3, 2, 1, output_padding=1), nn.Sigmoid())

        def forward(self, x):
            return self.net(x)

    class Upsample(nn.Module):
        """A small decoder: nearest and bilinear upsampling between convolutions."""

        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, 2, 1)
            self.c2 = nn.Conv2d(8, 8, 3, 1, 1)
            self.c3 = nn.Conv2d(8, 4, 3, 1, 1)

        def forward(self, x):
            y = torch.relu(self.c1(x))
            y = nn.functional.interpolate(y, scale_factor=2.0, mode="nearest")
            y = torch.relu(self.c2(y))
            y = nn.functional.interpolate(y, scale_factor=2.0, mode="bilinear",
                                          align_corners=False)
            return self.c3(y)

    class Activation(nn.Module):
        """Conv2d(3->16) then the activation (or LayerNorm over channels-last)."""

        def __init__(self, act: nn.Module, channels_last: bool = False) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, 1, 1)
            self.act = act
            self.channels_last = channels_last

        def forward(self, x):
            y = self.conv(x)
            if self.channels_last:
                return self.act(y.permute(0, 2, 3, 1))
            return self.act(y)

    return Autoencoder, Upsample, Activation


def _layer_modules() -> tuple[type, type, type]:
    """Layers beyond the classifiers': normalizations, pooling, attention."""

    class Layers2d(nn.Module):
        """InstanceNorm, GroupNorm, PixelShuffle, adaptive and ceil-mode pooling."""

        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(3, 16, 3, 1, 1)
            self.inorm = nn.InstanceNorm2d(16, affine=True)
            self.c2 = nn.Conv2d(16, 16, 3, 1, 1, groups=4)
            self.gnorm = nn.GroupNorm(4, 16)
            self.shuffle = nn.PixelShuffle(2)
            self.c3 = nn.Conv2d(4, 8, 3, 2, 1)

        def forward(self, x):
            y = torch.relu(self.inorm(self.c1(x)))
            y = nn.functional.max_pool2d(y, 3, 2, ceil_mode=True)
            y = self.shuffle(nn.functional.leaky_relu(self.gnorm(self.c2(y)), 0.1))
            y = nn.functional.avg_pool2d(self.c3(y), 3, 1, 1, count_include_pad=False)
            a = nn.functional.adaptive_avg_pool2d(y, (2, 2))
            m = nn.functional.adaptive_max_pool2d(y, 1)
            return torch.log_softmax(torch.flatten(a * m, 1), dim=1)

    class Layers1d(nn.Module):
        """Depthwise Conv1d, MaxPool1d, ConvTranspose1d, 1-D upsampling."""

        def __init__(self) -> None:
            super().__init__()
            self.dw = nn.Conv1d(40, 40, 5, 1, 2, groups=40)
            self.pw = nn.Conv1d(40, 32, 1)
            self.up = nn.ConvTranspose1d(32, 16, 4, 2, 1)

        def forward(self, x):
            y = nn.functional.max_pool1d(torch.relu(self.pw(self.dw(x))), 2)
            y = nn.functional.interpolate(self.up(y), scale_factor=2.0, mode="nearest")
            return torch.clamp(y, -1.0, 1.0).mean(dim=-1)

    class CausalAttention(nn.Module):
        """nn.MultiheadAttention with a causal mask, then a pre-norm encoder
        stack (two layers, norm_first) over 12 tokens."""

        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                               norm_first=True)
            self.stack = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.register_buffer("mask", torch.triu(torch.full((12, 12), float("-inf")), 1))

        def forward(self, x):
            y, _ = self.attn(x, x, x, attn_mask=self.mask, need_weights=False)
            return torch.softmax(self.stack(x + y), dim=-1)

    return Layers2d, Layers1d, CausalAttention


def _op_modules() -> tuple[type, type]:
    """More activations, and the convolution padding modes."""

    class Activations(nn.Module):
        """The activations torch.nn has beyond the classifiers', summed."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, 1, 1)
            self.prelu = nn.PReLU(8)

        def forward(self, x):
            F = nn.functional
            x = self.conv(x)
            return (F.softplus(x) + F.mish(x) + F.elu(x) + F.selu(x) + F.celu(x, 0.7)
                    + F.hardtanh(x) + F.softsign(x) + F.tanhshrink(x) + F.hardshrink(x)
                    + F.logsigmoid(x) + F.relu6(x) + F.hardsigmoid(x) + self.prelu(x)
                    + F.glu(torch.cat([x, x.flip(1)], 1), 1))

    class ConvPadding(nn.Module):
        """padding="same" with dilation, reflect and circular padding modes."""

        def __init__(self) -> None:
            super().__init__()
            self.same = nn.Conv2d(4, 8, 3, padding="same", dilation=2)
            self.reflect = nn.Conv2d(4, 8, 3, padding=1, padding_mode="reflect")
            self.circular = nn.Conv2d(4, 8, 3, padding=1, padding_mode="circular")

        def forward(self, x):
            return self.same(x) + self.reflect(x) + self.circular(x)

    return Activations, ConvPadding


def _text_module() -> type:
    """A token classifier: Embedding, GRU with its final state as a second
    output, chunk, cumsum, where, L2 normalization and an argmax output."""

    class TextGru(nn.Module):
        takes_tokens = True

        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 32)
            self.gru = nn.GRU(32, 32, batch_first=True)
            self.fc = nn.Linear(16, 5)

        def forward(self, ids):
            out, h = self.gru(self.emb(ids))
            a, b = out.chunk(2, dim=-1)
            z = torch.where(b > 0, torch.cumsum(a, dim=1), b)
            logits = self.fc(nn.functional.normalize(z.mean(1), dim=-1))
            return logits, h, logits.argmax(-1)

    return TextGru


def _branch_modules() -> tuple[type, type]:
    """Data-dependent control flow (these and :func:`_loop_modules`).
    The classic exporter traces a plain module, so a Python ``if`` on a
    tensor freezes the branch the example took and a ``for`` unrolls; it
    writes ONNX If / Loop only for a
    ``torch.jit.script``-ed module (``scripted = True``: the classic
    exporter is given ``torch.jit.script(module)``).  The dynamo exporter
    writes If for ``torch.cond`` and Loop for ``while_loop``, refuses a
    Python ``if`` on a tensor, and unrolls a ``for`` over a static range.
    ``probe_scales`` multiplies each seeded input, so that a negated input
    takes the other branch and a scaled one another trip count."""

    class CondBranch(nn.Module):
        """``torch.cond(x.sum() > 0, relu(a(x)), tanh(b(x)))``: two Linear(16, 8)."""

        probe_scales = (1.0, -1.0)

        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(16, 8)
            self.b = nn.Linear(16, 8)

        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: torch.relu(self.a(x)),
                              lambda x: torch.tanh(self.b(x)), (x,))

    class ScriptIf(nn.Module):
        """The same two branches under a Python ``if`` on a tensor value,
        for ``torch.jit.script``."""

        probe_scales = (1.0, -1.0)
        scripted = True

        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(16, 8)
            self.b = nn.Linear(16, 8)

        def forward(self, x):
            if bool(x.sum() > 0):
                y = torch.relu(self.a(x))
            else:
                y = torch.tanh(self.b(x)) - 1.0
            return y

    return CondBranch, ScriptIf


def _loop_modules() -> tuple[type, type]:
    """A scripted ``for`` over time carrying a tensor state (see
    :func:`_branch_modules`)."""

    class ScriptRnnLoop(nn.Module):
        """An Elman cell, ``for t in range(x.size(1))`` over 12 frames of
        8 features with the hidden state (16) carried, then Linear(16, 4)."""

        probe_scales = (1.0, -1.0)
        scripted = True

        def __init__(self) -> None:
            super().__init__()
            self.i = nn.Linear(8, 16)
            self.h = nn.Linear(16, 16)
            self.o = nn.Linear(16, 4)

        def forward(self, x):
            h = torch.zeros(x.size(0), 16)
            for t in range(x.size(1)):
                h = torch.tanh(self.i(x[:, t]) + self.h(h))
            return self.o(h)

    class ScriptRnnCollect(ScriptRnnLoop):
        """The same cell collecting every step's state in a list,
        ``torch.stack(outs, 1)``, then Linear(16, 4) per frame."""

        def forward(self, x):
            h = torch.zeros(x.size(0), 16)
            outs = []
            for t in range(x.size(1)):
                h = torch.tanh(self.i(x[:, t]) + self.h(h))
                outs.append(h)
            return self.o(torch.stack(outs, 1))

    return ScriptRnnLoop, ScriptRnnCollect


def _while_modules() -> tuple[type, type]:
    """A ``while`` on a tensor condition, scripted and as ``while_loop``."""

    class ScriptWhile(nn.Module):
        """A ``while`` on a tensor condition with a bounded counter: scale
        a Linear(16, 16) state until its norm passes 8 (at most 6 steps)."""

        probe_scales = (1.0, 0.25, 4.0)
        scripted = True

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            y = x
            i = 0
            while bool(y.abs().sum() < 8.0 * 16) and i < 6:
                y = torch.tanh(self.fc(y)) * 4.0 + y
                i += 1
            return y

    class WhileLoop(nn.Module):
        """``torch._higher_order_ops.while_loop``: the same loop for dynamo."""

        probe_scales = (1.0, 0.25, 4.0)

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            from torch._higher_order_ops import while_loop

            def cond(i, y):
                return (y.abs().sum() < 8.0 * 16) & (i < 6)

            def body(i, y):
                return i + 1, torch.tanh(self.fc(y)) * 4.0 + y

            _, y = while_loop(cond, body, (torch.tensor(0), x))
            return y

    return ScriptWhile, WhileLoop


def _models() -> dict[str, tuple[Callable[[], Any], tuple[int, ...]]]:
    """name -> (a constructor of the eval-mode module, the input shape)."""
    import torchvision.models as tvm
    KwsConv1d, KwsRecurrent, Encoder = _sequence_modules()
    Autoencoder, Upsample, Activation = _image_modules()
    Layers2d, Layers1d, CausalAttention = _layer_modules()
    TextGru = _text_module()
    Activations, ConvPadding = _op_modules()
    CondBranch, ScriptIf = _branch_modules()
    ScriptRnnLoop, ScriptRnnCollect = _loop_modules()
    ScriptWhile, WhileLoop = _while_modules()
    return {
        "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None, width_mult=0.35,
                                                  num_classes=10), (1, 3, 96, 96)),
        "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(weights=None, num_classes=10),
                               (1, 3, 96, 96)),
        "squeezenet1_1": (lambda: tvm.squeezenet1_1(weights=None, num_classes=10),
                          (1, 3, 64, 64)),
        "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(weights=None, num_classes=10),
                               (1, 3, 64, 64)),
        "mnasnet0_5": (lambda: tvm.mnasnet0_5(weights=None, num_classes=10), (1, 3, 96, 96)),
        "efficientnet_b0": (lambda: tvm.efficientnet_b0(weights=None, num_classes=10),
                            (1, 3, 64, 64)),
        "resnet18": (lambda: tvm.resnet18(weights=None, num_classes=10), (1, 3, 64, 64)),
        "kws_conv1d": (KwsConv1d, (1, 40, 49)),
        "kws_gru": (lambda: KwsRecurrent("gru"), (1, 49, 40)),
        "kws_lstm": (lambda: KwsRecurrent("lstm"), (1, 49, 40)),
        "kws_bigru_2layer": (lambda: KwsRecurrent("gru", 2, True), (1, 49, 40)),
        "kws_bilstm_2layer": (lambda: KwsRecurrent("lstm", 2, True), (1, 49, 40)),
        "transformer_encoder": (Encoder, (1, 16, 64)),
        "conv_autoencoder": (Autoencoder, (1, 1, 32, 32)),
        "upsample_net": (Upsample, (1, 3, 32, 32)),
        "hardswish": (lambda: Activation(nn.Hardswish()), (1, 3, 16, 16)),
        "silu": (lambda: Activation(nn.SiLU()), (1, 3, 16, 16)),
        "gelu": (lambda: Activation(nn.GELU()), (1, 3, 16, 16)),
        "gelu_tanh": (lambda: Activation(nn.GELU(approximate="tanh")), (1, 3, 16, 16)),
        "layer_norm": (lambda: Activation(nn.LayerNorm(16), channels_last=True),
                       (1, 3, 16, 16)),
        "layers_2d": (Layers2d, (1, 3, 32, 32)),
        "layers_1d": (Layers1d, (1, 40, 48)),
        "causal_attention": (CausalAttention, (1, 12, 32)),
        "text_gru": (TextGru, (1, 20)),
        "activations": (Activations, (1, 3, 16, 16)),
        "conv_padding": (ConvPadding, (1, 4, 15, 15)),
        "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(weights=None, num_classes=10),
                               (1, 3, 64, 64)),
        "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(weights=None, num_classes=10),
                           (1, 3, 64, 64)),
        "googlenet": (lambda: tvm.googlenet(weights=None, num_classes=10, aux_logits=False,
                                            init_weights=True), (1, 3, 64, 64)),
        "cond_if": (CondBranch, (1, 16)),
        "script_if": (ScriptIf, (1, 16)),
        "script_rnn_loop": (ScriptRnnLoop, (1, 12, 8)),
        "script_rnn_collect": (ScriptRnnCollect, (1, 12, 8)),
        "script_while": (ScriptWhile, (1, 16)),
        "while_loop": (WhileLoop, (1, 16)),
    }


def build(name: str, models: dict, seed: int = 0) -> tuple[Any, Any]:
    """The eval-mode module, with seeded weights and batch-norm statistics,
    and an example input."""
    ctor, shape = models[name]
    torch.manual_seed(seed)
    module = ctor().eval()
    with torch.no_grad():       # non-trivial batch-norm statistics
        for m in module.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    if getattr(module, "takes_tokens", False):
        return module, torch.randint(0, VOCAB, shape)
    return module, torch.randn(*shape)


@contextlib.contextmanager
def _quiet():
    """Silence the exporters' chatter, Python's and the C++ side's (file
    descriptors 1 and 2)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def export(module: Any, example: Any, path: Path, exporter: str) -> None:
    """Export with the classic (TorchScript) or the dynamo exporter, at its
    default opset or the one ``exporter`` names after an ``@``
    (``classic@13``); ``+dynamic`` makes the batch axis symbolic, as
    ``dynamic_axes`` / ``dynamic_shapes`` do."""
    spec, _, flag = exporter.partition("+")
    kind, _, opset = spec.partition("@")
    if kind not in ("classic", "dynamo") or flag not in ("", "dynamic"):
        raise ValueError(f"unknown exporter {exporter!r}: classic or dynamo, optionally "
                         f"@OPSET, optionally +dynamic")
    extra: dict[str, Any] = {"opset_version": int(opset)} if opset else {}
    with warnings.catch_warnings(), _quiet():
        warnings.simplefilter("ignore")
        if kind == "classic":
            if getattr(module, "scripted", False):
                module = torch.jit.script(module)
            if flag:
                extra["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
            torch.onnx.export(module, (example,), str(path), dynamo=False,
                              input_names=["x"], output_names=["y"], **extra)
        else:
            if flag:
                extra["dynamic_shapes"] = ({0: torch.export.Dim.DYNAMIC},)
            program = torch.onnx.export(module, (example,), dynamo=True, verbose=False,
                                        **extra)
            program.save(str(path))


def _torch_reference(module: Any, feeds: dict) -> list:
    """The eager module's outputs on ``feeds`` (one input), flattened."""
    with torch.no_grad():
        out = module(*(torch.from_numpy(v) for v in feeds.values()))
    flat = out if isinstance(out, (tuple, list)) else (out,)
    return [t.numpy() for t in flat]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def measure(name: str, exporter: str, models: dict, work: Path, seeds=(0, 1, 2)) -> dict:
    import onnx
    import onnxruntime as ort
    row: dict = {"model": name, "exporter": exporter}
    module, example = build(name, models)
    tag = exporter.replace("@", "_").replace("+", "_")
    path = work / f"{name}.{tag}.onnx"
    try:
        export(module, example, path, exporter)
    except Exception as exc:  # noqa: BLE001 - report whatever torch raises
        row["error"] = "export failed: " + _first_line(exc)
        return row
    proto = onnx.load(str(path))
    row["opset"] = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                        0)
    row["ops"] = sorted({n.op_type for n in proto.graph.node})
    start = time.perf_counter()
    cname = f"{name}_{tag}"
    # a symbolic batch axis is fixed to the example's, as a user would
    shapes = {proto.graph.input[0].name: tuple(example.shape)} if "+" in exporter else None
    try:
        art = compile_sized(aot.from_onnx(str(path), input_shapes=shapes), work / cname, cname,
                            row)
        fn = aot.load(art)
    except aot.DiagnosticError as e:
        row["error"] = str(e).strip().splitlines()[0]
        return row
    except Exception as exc:  # noqa: BLE001 - a crash is a bug to report, not to hide
        row["error"] = "crash: " + _first_line(exc)
        row["traceback"] = traceback.format_exc()
        return row
    row["compile_s"] = time.perf_counter() - start
    meta = art.metadata
    row.update(arena_bytes=meta.get("arena_bytes"), pool_bytes=meta.get("pool_bytes"),
               c_loops=len(meta.get("loops") or ()), c_branches=len(meta.get("branches") or ()))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = 0.0
    scales = getattr(module, "probe_scales", (1.0,))
    for seed, scale in ((s, k) for s in seeds for k in scales):
        feeds = {}
        rng = np.random.default_rng(seed)
        for i in session.get_inputs():
            shape = tuple(example.shape) if shapes else tuple(int(d) for d in i.shape)
            if "int" in i.type:       # token ids
                feeds[i.name] = rng.integers(0, VOCAB, shape).astype(np.int64)
            else:
                feeds[i.name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        try:
            want = session.run(None, feeds)
        except Exception as exc:  # noqa: BLE001 - onnxruntime refuses some valid graphs
            # compare with torch itself, and say so
            row["reference"] = "torch (onnxruntime refuses: " + _first_line(exc)[:80] + ")"
            want = _torch_reference(module, feeds)
        got = fn(*feeds.values())
        got = got if isinstance(got, (tuple, list)) else (got,)
        for g, w in zip(got, want):
            g = np.asarray(g)
            if g.shape != w.shape:
                row["error"] = f"output shape {g.shape}, reference {w.shape}"
                return row
            worst = max(worst, float(np.max(np.abs(g - w)) / max(1.0, float(np.max(np.abs(w))))))
    row["max_error"] = worst
    return row


def _status(r: dict) -> tuple[str, str]:
    if "error" in r:
        return "no", r["error"].replace("|", "\\|")
    ok = "yes" if r["max_error"] < TOLERANCE else "WRONG"
    vs = f" vs {r['reference']}" if "reference" in r else ""
    return ok, f"{r['max_error']:.1e}{vs}"


def _markdown(rows: list[dict], exporters: list[str]) -> None:
    """One row per model, one column per exporter: the max error, or why not."""
    opsets = {e: next((r["opset"] for r in rows if r["exporter"] == e and "opset" in r), "")
              for e in exporters}
    print("| model | " + " | ".join(f"{e.partition('@')[0]} (opset {opsets[e]})"
                                    for e in exporters) + " |")
    print("|---|" + "---|" * len(exporters))
    by = {(r["model"], r["exporter"]): r for r in rows}
    for model in dict.fromkeys(r["model"] for r in rows):
        cells = []
        for e in exporters:
            r = by.get((model, e))
            if r is None:
                cells.append("")
                continue
            ok, detail = _status(r)
            if ok == "no":      # the diagnostic's first sentence, without the file name
                detail = detail.split(": error: ", 1)[-1].split(". ", 1)[0]
            elif "reference" in r:
                detail = f"{r['max_error']:.1e} (vs torch: onnxruntime refuses the graph)"
            cells.append(detail if ok == "yes" else f"{ok}: {detail}")
        print(f"| {model} | " + " | ".join(cells) + " |")


def _report(rows: list[dict], exporters: list[str], markdown: bool) -> None:
    if markdown:
        _markdown(rows, exporters)
    else:
        head = f"{'model':<20} {'exporter':<10} {'opset':>5} {'compiles':<8} max error / diagnostic"
        print(head)
        print("-" * len(head))
        for r in rows:
            ok, detail = _status(r)
            print(f"{r['model']:<20} {r['exporter']:<10} {r.get('opset', ''):>5} {ok:<8} {detail}")
    flow = [r for r in rows if r.get("c_loops") or r.get("c_branches")
            or {"If", "Loop", "Scan"} & set(r.get("ops", ()))]
    if flow:
        print("\ncontrol flow: ONNX ops, C loops / ifs, arena and object-pool bytes")
        for r in flow:
            ops = ",".join(o for o in r.get("ops", ()) if o in ("If", "Loop", "Scan")) or "-"
            print(f"  {r['model']:<20} {r['exporter']:<10} {ops:<8} "
                  f"loops {r.get('c_loops', '-')} ifs {r.get('c_branches', '-')} "
                  f"arena {r.get('arena_bytes', '-')} pool {r.get('pool_bytes', '-')}")
    for exporter in exporters:
        mine = [r for r in rows if r["exporter"] == exporter]
        good = sum(1 for r in mine if _status(r)[0] == "yes")
        print(f"{exporter}: {good} of {len(mine)} compile and match")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated subset (default: all)")
    ap.add_argument("--exporters", default="classic,classic@13,dynamo",
                    help="classic (TorchScript) or dynamo, each at its default opset "
                         "or at @OPSET, optionally +dynamic (default: %(default)s)")
    ap.add_argument("--json", type=Path, help="write the rows to FILE")
    ap.add_argument("--render", type=Path, help="print the table of rows written by --json "
                    "before (needs no torch)")
    ap.add_argument("--markdown", action="store_true",
                    help="print a Markdown table: a row per model, a column per exporter")
    ap.add_argument("--keep", type=Path, help="export and compile into DIR and keep it")
    ap.add_argument("--traceback", action="store_true", help="print crashes' tracebacks")
    args = ap.parse_args(argv)
    if args.render:
        rows = json.loads(args.render.read_text())
        _report(rows, list(dict.fromkeys(r["exporter"] for r in rows)), args.markdown)
        return 0
    if torch is None:
        print("bench/torch_exports.py needs torch and torchvision (and onnxscript for the "
              "dynamo exporter, onnxruntime to compare): pip install torch torchvision "
              "onnxscript onnxruntime", file=sys.stderr)
        return 2
    models = _models()
    names = args.models.split(",") if args.models else list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(models)}")
    exporters = args.exporters.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-torch-exports-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("AOT_CACHE_DIR", str(Path(tmp) / "cache"))
        for name in names:
            for exporter in exporters:
                print(f"[{name} {exporter}] ...", file=sys.stderr, flush=True)
                row = measure(name, exporter, models, work)
                if args.traceback and "traceback" in row:
                    print(row["traceback"], file=sys.stderr)
                rows.append(row)
    print(f"torch {torch.__version__}", end="")
    with contextlib.suppress(ImportError):
        import onnxscript
        print(f", onnxscript {onnxscript.__version__}", end="")
    import onnxruntime
    print(f", onnxruntime {onnxruntime.__version__}")
    _report(rows, exporters, args.markdown)
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "traceback"}
                                         for r in rows], indent=2) + "\n")
    return 0 if all(_status(r)[0] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
