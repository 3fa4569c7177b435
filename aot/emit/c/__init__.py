"""Stage 3 of the backend: printing C.  :mod:`.printer` prints kernel IR
(:mod:`.expr` spells expressions with minimal parentheses, :mod:`.types`
spells dtypes, :mod:`.helpers` lists the runtime helpers a kernel may use);
:mod:`.objects` prints the object IR of a whole-language program and
:mod:`.program_api` its value API; :mod:`.context` turns a plan into what
the Jinja templates print and into ``metadata.json``."""
