"""The six canonical cases of a hang or desync, as per-rank programs (the YAML schema of
:mod:`sim.hang.programs`): the docs show them, tests explain them, and ``real/hang_check.py``
runs them on gloo ranks to check the explanation against torch's own messages."""

from __future__ import annotations

from typing import Any

__all__ = ["CASES", "case"]

_AR = {"op": "all_reduce", "count": 1024, "dtype": "float32"}

CASES: dict[str, dict[str, Any]] = {
    "size_mismatch": {
        "about": "rank 1 all-reduces a tensor twice the size of rank 0's",
        "ranks": [[{**_AR, "tag": "grads"}], [{**_AR, "count": 2048, "tag": "grads"}]],
    },
    "op_mismatch": {
        "about": "rank 0 all-reduces while rank 1 broadcasts from rank 0",
        "ranks": [[{**_AR, "tag": "grads"}], [{"op": "broadcast", "count": 1024, "root": 0, "tag": "weights"}]],
    },
    "skipped": {
        "about": "rank 1 skips its second all-reduce and goes on with other work",
        "ranks": [[{**_AR, "tag": "loss"}, {**_AR, "tag": "grads"}], [{**_AR, "tag": "loss"}, {"op": "stall"}]],
    },
    "swapped": {
        "about": "two groups of the same ranks used in opposite orders: a wait-for cycle",
        "groups": {"a": [0, 1], "b": [0, 1]},
        "ranks": [
            [{**_AR, "group": "a", "tag": "tp"}, {**_AR, "group": "b", "tag": "dp"}],
            [{**_AR, "group": "b", "tag": "dp"}, {**_AR, "group": "a", "tag": "tp"}],
        ],
    },
    "unpaired_send": {
        "about": "rank 0 sends to rank 1, which never posts the receive",
        "ranks": [[{"op": "send", "count": 1024, "peer": 1, "tag": "activations"}], [{"op": "stall"}]],
    },
    "rank_dies": {
        "about": "rank 1 dies after the first all-reduce",
        "ranks": [[{**_AR, "tag": "step 1"}, {**_AR, "tag": "step 2"}], [{**_AR, "tag": "step 1"}, {"op": "die"}]],
    },
}


def case(name: str) -> dict[str, Any]:
    """A canonical case's program data by name."""
    from sim.errors import CollsimError

    if name not in CASES:
        raise CollsimError(f"case: unknown case {name!r}; one of {', '.join(CASES)}")
    return CASES[name]
