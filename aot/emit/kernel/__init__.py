"""Kernel IR: one fused group of tensor operators as explicit loop nests
(:mod:`.ir`), and the services over it that every later stage relies on --
traversals (:mod:`.walk`), the verifier (:mod:`.verify`), the reference
evaluator (:mod:`.evaluate`, with C99's ``fmaf`` in :mod:`.fma`), integer
value ranges (:mod:`.ranges`), simplification (:mod:`.simplify`) and common
subexpressions of element expressions (:mod:`.cse`)."""
