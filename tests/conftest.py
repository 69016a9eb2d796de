"""Suite-wide settings."""

from hypothesis import settings

# Property tests draw the same examples on every run: CI runs on a fresh clone with no example
# database, and a red build should be reproducible, not a lottery.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")
