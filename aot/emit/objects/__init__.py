"""Object IR: a whole-language program as functions over the object
runtime (:mod:`.ir`), the walks over it (:mod:`.walk`) and its verifier
(:mod:`.verify`).  :mod:`aot.emit.lower.program` produces it and
:mod:`aot.emit.c.objects` prints it."""
