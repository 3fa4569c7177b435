"""Compiler passes: type inference and program transformations, one file per pass."""
