"""Importers from other formats: :mod:`aot.frontend.onnx` (``aot.from_onnx``)
and :mod:`aot.frontend.tflite` (``aot.from_tflite``), with what they share:
file diagnostics (:mod:`.errors`), typed building (:mod:`.context`), input
names (:mod:`.names`) and ``SAME`` padding (:mod:`.padding`)."""
