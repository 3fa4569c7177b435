"""Stage 2 of the backend: what is decided before anything is printed --
the plan records the printer reads (:mod:`.model`, :mod:`.program`,
:mod:`.program_types`) and the static arena (:mod:`.arena`)."""
