"""Importers from other formats: :mod:`aot.frontend.onnx` (``aot.from_onnx``)."""
