"""One collective call: run it (``runner``), answer in one step (``collapsed``, ``analytic``),
explore it across sizes (``explore``), check what it moved (``verify``), results as data
(``results``), concurrent groups (``groups``), what the step player draws (``player``). docs/architecture.md has the picture."""

__all__ = [
    "analytic",
    "budget",
    "collapsed",
    "explore",
    "frames",
    "groups",
    "narrative",
    "nccl_fit",
    "pick",
    "player",
    "results",
    "runner",
    "verify",
]
