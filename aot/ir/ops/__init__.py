"""Operator families.  Importing this package registers every operator;
each family lives in its own module and registers its records with
:func:`aot.ir.ops._common.defop`."""

from . import (algorithm, elemwise, image, layout, nn, nn_conv, nn_pool, qnn,  # noqa: F401
               qnn_common, qnn_linear, reduce, transform, transform_broadcast, transform_index,
               transform_init)
