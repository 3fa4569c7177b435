"""Quantizing a float program: Relay's annotate -> calibrate -> realize.

``quantize(mod, calibration_inputs, config)`` (:mod:`.flow`) runs the
prerequisite passes, then three registered passes, one file each:
QuantizeAnnotate (:mod:`.annotate`: where the quantize points go),
QuantizeCalibrate (:mod:`.calibrate`: their scales, from the reference
interpreter's statistics) and QuantizeRealize (:mod:`.realize`: int8
weight tables).  The result is a QDQ program, which the DATAFLOW
pipeline's FakeQuantizationToInteger compiles to integer C like any
imported quantized model.  :class:`QConfig` (:mod:`.config`) holds
Relay's qconfig knobs.
"""

from .annotate import quantize_annotate
from .calibrate import quantize_calibrate
from .config import QConfig, make_config
from .flow import check_samples, load_calibration, quantize
from .realize import quantize_realize

__all__ = ["quantize", "QConfig", "make_config", "load_calibration", "check_samples",
           "quantize_annotate", "quantize_calibrate", "quantize_realize"]
