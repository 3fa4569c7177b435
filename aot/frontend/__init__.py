"""Importers from other formats (ONNX: not yet written)."""
