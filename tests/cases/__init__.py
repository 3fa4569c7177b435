"""Operator case tables shared by the three operator test layers.

* tests/ops: the interpreter's reference (the record's NumPy ``compute``)
  against an independent NumPy oracle,
* tests/emit: the lowering to kernel IR, run by the kernel-IR reference
  evaluator (and printed to C and compiled alone, for some families),
* tests/e2e/test_ops_c*.py: the whole C pipeline against the interpreter,
  many cases packed into one build.

One module per operator family holds the rows (shapes, dtypes,
attributes) every layer runs; a layer keeps in its own file only what is
its own: tolerances, the data it feeds (edge values for C, clean domains
for NumPy), the rows it leaves out (written as a filter over the table)
and the cases only it has.  The elementwise family is not written down at
all: :mod:`cases.elemwise` derives it from the operator registry.

Survey (issue 14), the tables that were copied before this package:

=============  ==========================  ==========================  ==========================
family         tests/ops                   tests/emit                  tests/e2e
=============  ==========================  ==========================  ==========================
elemwise       test_elemwise: SHAPES,      (none)                      test_ops_c_elemwise:
               BINARY_FLOAT, UNARY,                                    FLOAT_MATH, SAME_TYPE,
               COMPARE dicts by hand                                   ARITH, COMPARE, LOGICAL,
                                                                       SHAPES by hand
reduce         test_reduce: REDUCERS       test_lower_reduce: AXES,    test_ops_c_reduce: AXES,
                                           REDUCERS, DTYPES            REDUCERS, DTYPES (copies)
algorithm      (hypothesis strategies)     test_lower_algorithm:       test_ops_c_reduce:
                                           SPECIALS                    SPECIALS (copy)
conv           test_nn_conv: CONV2D_CASES, test_lower_conv: the same   test_ops_c_conv: CONV2D,
               LAYOUTS (5), CONV1D_CASES,  four, LAYOUTS (6), DTYPES   DTYPES, LAYOUTS, conv1d
               TRANSPOSE_CASES                                         and transpose rows inline
pool           test_nn_pool: POOL_CASES    test_lower_pool_image:      test_ops_c_conv: POOLS
                                           POOL_CASES
image          test_image: MODES, SIZES    test_lower_pool_image:      test_ops_c_conv: MODES,
                                           MODES, SIZES, ROUNDINGS     SIZES, ROUNDINGS
nn             test_nn: DENSE_CASES        test_lower_nn: DENSE_CASES  test_ops_c_nn: DENSE
transform      test_transform:             test_lower_transform*:      test_ops_c_transform:
               RESHAPE_CASES, SLICE_CASES  RESHAPES, SLICES,           RESHAPES, SLICES,
                                           INDEX_DTYPES, CAST_PAIRS    INDEX_DTYPES, CAST_PAIRS
qnn            test_qnn: CONV_CASES        test_lower_qnn: CONV_CASES  test_ops_c_qnn:
                                           (copy), ROUNDINGS           ROUNDINGS
=============  ==========================  ==========================  ==========================

Moved here so far: elemwise (derived), conv, reduce, algorithm, pool,
image, nn (dense, matmul, batch_matmul), qnn (the quantized convolution
rows, the requantize roundings) and transform (reshape rows and
dtypes, strided_slice attributes, take's index dtypes and modes with their
indices, gather and one_hot rows, cast pairs and clip bounds with their
edge values, layout_transform rows); tests/ops runs the reduce, sorting,
reshape, slice, take-index and cast tables beside its hypothesis
strategies.  Not rows
but whole programs with their data, and still near-copies between
tests/emit/test_lower_transform*.py and tests/e2e/test_ops_c_transform.py:
the squeeze ... broadcast_to_like, collapse_sum, take/one_hot/where
one-offs, cast_like, full/zeros/ones/arange cases (e2e has more dtypes;
the two layers feed different data and name cases differently).
"""
