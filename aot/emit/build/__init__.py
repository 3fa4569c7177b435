"""Stage 4 of the backend: writing, building and loading.
:mod:`.artifact` renders a plan into an artifact directory (through
:mod:`aot.emit.c`), :mod:`.toolchain` finds the host C compiler and holds
the project's flags, :mod:`.library` builds an artifact's sources into
``lib/lib<name>.a`` (through the content-keyed :mod:`.cache`),
:mod:`.extension` builds the cffi extension module, and
:mod:`.compiled_model` / :mod:`.compiled_program` are the Python callables
:func:`aot.load` returns."""
