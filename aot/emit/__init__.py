"""The C backend, one sub-package per stage, in the order data flows:

1. :mod:`.lower` -- a typed, fused module to data: kernel IR for each fused
   group (:mod:`.kernel` holds the kernel IR and its verifier and evaluator),
   the call sequence of a dataflow model, the functions of a whole-language
   program (:mod:`.objects` holds the object IR and its verifier);
2. :mod:`.plan` -- the plan records and the static arena;
3. :mod:`.c` -- C printing and the templates' context;
4. :mod:`.build` -- the artifact directory written from a plan, gcc/clang +
   ar into ``lib<name>.a``, and cffi loading.

Each stage imports only the ones before it (and the two IRs, kernel and
objects, which every stage reads); a test
(``tests/test_layering.py``) reads the imports and holds the tree to it.
:mod:`.resources` finds the templates and the C runtime.  The driver that
runs the passes and picks a backend is :mod:`aot.compiler`.
"""
