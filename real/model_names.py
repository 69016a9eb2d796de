"""The built-in models' names (:data:`real.models.MODELS` builds them), read without torch: a
command checks ``--model`` before anything needs torch (``collsim validate`` refuses a bad
``--out`` at once, not after the seconds of torch's import)."""

from __future__ import annotations

from sim.errors import CollsimError

MODEL_NAMES = ("mlp", "small")


def check_model_name(name: str) -> None:
    """Refuse a name that is not a built-in model's, naming them."""
    if name not in MODEL_NAMES:
        raise CollsimError(f"--model: unknown {name!r}; built-in models: {', '.join(MODEL_NAMES)}")


__all__ = ["MODEL_NAMES", "check_model_name"]
