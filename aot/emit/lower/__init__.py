"""Stage 1 of the backend: lowering a typed, fused module to data.

* :mod:`.registry` -- tensor values and the lowering column of the operator
  records; :mod:`.ops` holds the lowerings, one file per operator family.
* :mod:`.group` -- one fused group (a ``Primitive=1`` function) to one kernel.
* :mod:`.dataflow` -- a static tensor program to a
  :class:`~aot.emit.plan.model.ModelPlan` (kernels, slots, the call sequence).
* :mod:`.program`, :mod:`.program_function`, :mod:`.match_tree`,
  :mod:`.program_entry` -- a whole-language program (closures, ADTs,
  match, recursion, references) to the object IR (:mod:`aot.emit.objects`):
  functions over the object runtime, and its entry function.
"""
