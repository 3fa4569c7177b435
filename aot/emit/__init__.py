"""The C backend: kernel IR, lowering, memory planning, rendering, build and load (not yet written)."""
