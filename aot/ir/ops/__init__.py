"""Operator families.  Importing this package registers every operator;
each family lives in its own module and registers its records with
:func:`aot.ir.ops._common.defop`."""

from . import algorithm, elemwise, image, nn, qnn, reduce, transform  # noqa: F401
