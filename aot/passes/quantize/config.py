"""The quantization configuration (Relay's ``qconfig``), a frozen record.

Relay's knobs, with two of our own (``per_channel``, ``percentile``), and
defaults chosen for a fully integer C program rather than Relay's (Relay:
``nbit_activation=32``/``dtype_activation="int32"``,
``calibrate_mode="global_scale"``, ``weight_scale="power2"``,
``skip_conv_layers=[0]``, ``skip_dense_layer=True``; pass those to get its
behaviour).  :func:`make_config` turns a user's mapping into the record and
refuses unknown keys and out-of-range values with a diagnostic.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from ...diagnostics import DiagnosticError

__all__ = ["QConfig", "make_config", "CALIBRATE_MODES", "WEIGHT_SCALES", "KINDS"]

CALIBRATE_MODES = ("global_scale", "max", "percentile", "kl_divergence")
WEIGHT_SCALES = ("max", "power2")
#: the annotation kinds, as Relay's QAnnotateKind (IDENTITY needs no knob)
KINDS = ("input", "weight", "activation")
_BITS = {"int8": 8, "int16": 16, "int32": 32}
_DTYPES = {"input": ("int8", "int16"), "weight": ("int8", "int16"),
           "activation": ("int8", "int16", "int32")}


@dataclass(frozen=True)
class QConfig:
    """How :func:`aot.quantize` quantizes (see README, "Quantizing a float
    model").  ``nbit_*`` is the number of bits of each kind of value
    (symmetric: the integers lie in ``[-(2**(nbit-1) - 1), 2**(nbit-1) - 1]``),
    ``dtype_*`` the integer type holding them."""

    nbit_input: int = 8
    nbit_weight: int = 8
    nbit_activation: int = 8
    dtype_input: str = "int8"
    dtype_weight: str = "int8"
    dtype_activation: str = "int8"
    calibrate_mode: str = "max"
    global_scale: float = 8.0
    percentile: float = 0.99999
    weight_scale: str = "max"
    per_channel: bool = True
    skip_conv_layers: tuple[int, ...] = ()
    skip_dense_layer: bool = False

    def nbit(self, kind: str) -> int:
        return int(getattr(self, f"nbit_{kind}"))

    def dtype(self, kind: str) -> str:
        return str(getattr(self, f"dtype_{kind}"))

    def clip_bound(self, kind: str) -> int:
        """The largest integer of ``kind`` (the smallest is its negation)."""
        return 2 ** (self.nbit(kind) - 1) - 1

    def narrower_than_dtype(self, kind: str) -> bool:
        return self.nbit(kind) < _BITS[self.dtype(kind)]


def _fail(message: str) -> DiagnosticError:
    return DiagnosticError(f"quantize config: {message}")


def _check_int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(f"{key} must be an integer, not {value!r}")
    return value


def _check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise _fail(f"{key} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _check_fields(cfg: QConfig) -> None:
    for kind in KINDS:
        dtype = _check_choice(f"dtype_{kind}", cfg.dtype(kind), _DTYPES[kind])
        nbit = _check_int(f"nbit_{kind}", getattr(cfg, f"nbit_{kind}"))
        if not 2 <= nbit <= _BITS[dtype]:
            raise _fail(f"nbit_{kind}={nbit} does not fit dtype_{kind}={dtype} "
                        f"(2 to {_BITS[dtype]} bits)")
    _check_choice("calibrate_mode", cfg.calibrate_mode, CALIBRATE_MODES)
    _check_choice("weight_scale", cfg.weight_scale, WEIGHT_SCALES)
    for key in ("global_scale", "percentile"):
        value = getattr(cfg, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise _fail(f"{key} must be a positive number, not {value!r}")
    if cfg.percentile > 1:
        raise _fail(f"percentile must be in (0, 1], not {cfg.percentile!r}")
    for key in ("per_channel", "skip_dense_layer"):
        if not isinstance(getattr(cfg, key), bool):
            raise _fail(f"{key} must be true or false, not {getattr(cfg, key)!r}")
    for index in cfg.skip_conv_layers:
        if _check_int("skip_conv_layers", index) < 0:
            raise _fail(f"skip_conv_layers holds conv2d indices from 0, not {index}")


def make_config(config: QConfig | Mapping[str, Any] | None) -> QConfig:
    """The checked :class:`QConfig` for ``config`` (None: the defaults; a
    mapping: the defaults updated with its keys)."""
    if config is None:
        cfg = QConfig()
    elif isinstance(config, QConfig):
        cfg = config
    elif isinstance(config, Mapping):
        names = [f.name for f in dataclasses.fields(QConfig)]
        unknown = sorted(str(k) for k in config if k not in names)
        if unknown:
            raise _fail(f"unknown key{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(repr(k) for k in unknown)} (known: {', '.join(names)})")
        raw = dict(config)
        if "skip_conv_layers" in raw:
            layers = raw["skip_conv_layers"]
            if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
                raise _fail(f"skip_conv_layers must be a list of conv2d indices, not {layers!r}")
            raw["skip_conv_layers"] = tuple(layers)
        cfg = QConfig(**raw)
    else:
        raise _fail(f"expected a mapping of knobs, not {type(config).__name__}")
    _check_fields(cfg)
    return cfg
