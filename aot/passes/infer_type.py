"""InferType: the IR's type inference (:mod:`aot.ir.type_infer`) as a
registered pass, so pipelines can name it."""

from __future__ import annotations

from ..ir.type_infer import infer_types
from .manager import register_pass

register_pass("InferType", opt_level=0,
              doc="Infers and checks the type of every expression.")(infer_types)
