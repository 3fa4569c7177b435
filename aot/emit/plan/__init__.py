"""Stage 2 of the backend: what is decided before anything is printed --
the plan records the printer reads (:mod:`.model`, :mod:`.program`,
:mod:`.program_types`), the static arena (:mod:`.arena`) and the size of
a program's object pool (:mod:`.pool_bound`)."""
