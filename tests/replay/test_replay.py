"""The generated C of a fixed set of programs is unchanged (see
:mod:`replay`): a refactor must emit byte-identical artifacts, and a commit
that changes them on purpose says why and refreshes ``hashes.json``."""

from __future__ import annotations

import json

import pytest

import replay

COMMITTED = json.loads(replay.HASHES.read_text())
TABLE = replay.programs()
# one test per group of programs (corpus, lang, mlperf, examples): small enough
# to spread over the workers, few enough that each imports its sources once
GROUPS = sorted({name.rsplit("/", 1)[0] if name.startswith("mlperf") else name.split("/")[0]
                 for name in TABLE})


def test_every_committed_program_is_replayed():
    missing = sorted(set(COMMITTED) - set(TABLE))
    assert not missing, f"programs in hashes.json that replay.py no longer lists: {missing}"
    new = sorted(set(TABLE) - set(COMMITTED))
    assert not new, f"programs without a committed digest (run replay.py --update): {new}"


@pytest.mark.parametrize("group", GROUPS)
def test_generated_c_is_unchanged(group):
    names = [n for n in sorted(TABLE) if n == group or n.startswith(group + "/")]
    got = replay.digests(names)
    changed = [n for n in names if got[n] != COMMITTED.get(n)]
    assert not changed, (f"the generated C changed for {changed}; if on purpose, say why in the "
                         "commit and run: .venv/bin/python tests/replay/replay.py --update")
