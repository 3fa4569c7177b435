"""Names of imported graph inputs as IR identifiers."""

from __future__ import annotations

import re
from typing import Sequence

_IDENT_START = re.compile(r"[A-Za-z_]")


def sanitize_names(names: Sequence[str]) -> list[str]:
    """IR identifiers for a model's names (graph inputs), deterministic
    and unique: characters outside ``[A-Za-z0-9_]`` become ``_``, a
    leading digit gets a ``_`` prefix, and a clash gets ``_1``, ``_2`` ...
    in order."""
    out: list[str] = []
    used: set[str] = set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "input"
        if not _IDENT_START.match(base):
            base = "_" + base
        cand = base
        k = 1
        while cand in used:
            cand = f"{base}_{k}"
            k += 1
        used.add(cand)
        out.append(cand)
    return out
