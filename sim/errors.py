"""The one exception users see: a message naming what was wrong and what is allowed."""


class CollsimError(ValueError):
    """Bad input or an impossible scenario. The CLI prints its message and exits with code 2."""


class DeadlockError(CollsimError):
    """The simulation ended with ranks still waiting for messages that never come."""
