"""Converter families, one module per ONNX operator family; importing this
package registers them all."""

from . import (activation, conv, index, init, linear, math, norm, pad, pool, quant, reduce,  # noqa: F401
               resize, shape)
