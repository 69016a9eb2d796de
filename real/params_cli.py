"""`collsim real params`: a torch model's parameter list (registration order) for `collsim sim
ddp --params`, from a built-in model or a ``module:factory``."""

from __future__ import annotations

from typing import Any

import click

from real.cli_common import check_output_file, output_errors
from sim.errors import CollsimError

__all__ = ["params"]


def _model_from_spec(spec: str) -> Any:
    """``module:factory`` called: an nn.Module, or one error saying what the spec gave instead."""
    import importlib

    from torch import nn

    name, attribute = spec.split(":", 1)
    try:
        factory = getattr(importlib.import_module(name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise CollsimError(f"--model {spec}: cannot load it ({error}); give module:factory returning a torch.nn.Module") from None
    try:
        module = factory() if callable(factory) else factory
    except TypeError as error:  # os:remove and the like need arguments
        raise CollsimError(f"--model {spec}: cannot call it without arguments ({error}); give a module:factory") from None
    if not isinstance(module, nn.Module):
        raise CollsimError(f"--model {spec}: gave a {type(module).__name__}, not a torch.nn.Module; give module:factory returning one")
    return module


@click.command("params")
@click.option("--model", default="small", show_default=True, help="built-in model (small, mlp) or module:factory returning an nn.Module")
@click.option("--output", "-o", required=True, help="parameter list file (JSON, or YAML for .yaml/.yml)")
def params(model: str, output: str) -> None:
    """Export a torch model's parameter list (registration order) for collsim sim ddp --params."""
    from real.ddp import save_params
    from real.models import MODELS, fresh_model

    if model in MODELS:
        module = fresh_model(MODELS[model], 0)
    elif ":" in model:
        module = _model_from_spec(model)
    else:
        raise CollsimError(f"--model: {model!r} is neither a built-in model ({', '.join(MODELS)}) nor module:factory")
    check_output_file(output, "--output")
    with output_errors(output, "--output"):
        save_params(module, output)
    click.echo(f"# {sum(1 for p in module.parameters() if p.requires_grad)} parameter tensors written to {output}")
