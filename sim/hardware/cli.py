"""``collsim hardware list|show NAME`` and the ``--hardware``/``--model nccl`` parts of
``collsim sim collective``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from sim.errors import CollsimError
from sim.hardware.presets import list_presets, load_preset


@click.group("hardware")
def hardware() -> None:
    """Hardware presets: machines with published link figures (docs/hardware.md)."""


@hardware.command("list")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list")
def list_command(as_json: bool) -> None:
    """Every preset with a one-line description."""
    if as_json:
        click.echo(json.dumps([{"name": name, "description": load_preset(name).description} for name in list_presets()]))
        return
    for name in list_presets():
        click.echo(f"{name:18s} {load_preset(name).description}")


@hardware.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="print the preset as JSON (rates in bytes/s, times in s)")
def show_command(name: str, as_json: bool) -> None:
    """One preset's values, each with its source."""
    preset = load_preset(name)
    if as_json:
        click.echo(json.dumps(preset.to_dict()))
        return
    click.echo(format_preset(preset.to_dict()))


@hardware.command("fit")
@click.argument("logs", nargs=-1, required=True)
@click.option("--hardware", "name", required=True, help="the preset the logs ran on (collsim hardware list)")
@click.option("--nodes", default=None, help="nodes of each log, comma list (default: from its rank count)")
@click.option("--nccl-proto", default=None, help="NCCL_PROTO the runs had (e.g. Simple,LL128), if set")
@click.option("--nccl-algo", default=None, help="NCCL_ALGO the runs had (e.g. Ring), if set or known")
@click.option("--nccl-version", default=None,
              help="NCCL release of logs that name none, one for all or a comma list per log (default: the log's own, else 2.27)")  # fmt: skip
@click.option("--fit", "names", default=None, help="constants to fit, comma list (default: all that the logs can tell)")
@click.option("--stride", default=1, type=int, help="use every Nth size of each log (faster)")
@click.option("-o", "--output", default=None, help="write the preset with its fitted block here (default: print the block)")
def fit_command(logs: tuple[str, ...], name: str, nodes: str | None, nccl_proto: str | None, nccl_algo: str | None,
                nccl_version: str | None, names: str | None, stride: int, output: str | None) -> None:  # fmt: skip
    """Fit a preset's effective constants (bandwidth efficiencies, latency scale, base latency)
    to nccl-tests logs with bounded least squares; print them with 95 % intervals. Each log is
    picked with the tuning of the NCCL release it names (else --nccl-version, else 2.27.7-1)."""
    from sim.collective.nccl_fit import fit, fitted_block

    preset = load_preset(name)
    if stride < 1:
        raise CollsimError(f"--stride: must be >= 1 (use every Nth size of each log), got {stride}")
    if output is not None:
        _check_writable(output)  # before the fit (minutes), not after it
    runs = _log_runs(logs, preset, nodes, nccl_version)
    chosen = names.split(",") if names else _default_constants(preset, [run.nodes for run in runs])
    result = fit([(run, run.nodes, nccl_proto, nccl_algo) for run in runs], name, chosen, stride)  # each log read once, in _log_runs
    block = fitted_block(result, runs, nccl_proto, nccl_algo)
    options = [
        ("--nodes", nodes),
        ("--nccl-proto", nccl_proto),
        ("--nccl-algo", nccl_algo),
        ("--nccl-version", nccl_version),
        ("--fit", ",".join(chosen)),
        ("--stride", stride if stride != 1 else None),
    ]
    block["command"] = " ".join(["collsim hardware fit", *(Path(log).name for log in logs), "--hardware", name]
                                + [f"{flag} {value}" for flag, value in options if value is not None])  # fmt: skip
    if output is None:
        click.echo(yaml_dump({"fitted": block}))
        return
    _write_fitted(output, name, block)


def _log_runs(logs: tuple[str, ...], preset: Any, nodes: str | None, nccl_version: str | None) -> list:
    """Each log's op, nodes and NCCL release (sim.collective.nccl_fit.log_runs); warnings and each
    release's line ("NCCL release: not named in the log; default 2.27.7-1 assumed") on stderr."""
    from sim.collective.nccl_fit import log_runs

    runs = log_runs(logs, preset, nodes, nccl_version, warn=lambda warning: click.echo(f"warning: {warning}", err=True))
    for run in runs:
        click.echo(f"{run.name}: {run.release.note}", err=True)
    return runs


def _check_writable(output: str) -> None:
    """Refuse an --output that cannot be opened for writing (a missing folder, a read-only one)."""
    import os

    from sim.collective.results import check_output_path

    check_output_path(output, "--output")
    existed = os.path.exists(output)
    try:
        open(output, "a").close()
    except OSError as error:
        raise CollsimError(f"--output: cannot write {output!r}: {error.strerror or error}") from None
    if not existed:
        os.remove(output)


def _write_fitted(output: str, name: str, block: dict[str, Any]) -> None:
    """The preset with its new ``fitted:`` block written to ``output``; where that fails the
    block is printed (minutes of fitting are not lost) and the error says it was not written."""
    from sim.hardware.presets import HERE

    text = (HERE / f"{name}.yaml").read_text()
    text = text.split("\nfitted:")[0].rstrip("\n") + "\n" + yaml_dump({"fitted": block})
    try:
        with open(output, "w") as handle:
            handle.write(text)
    except OSError as error:
        click.echo(yaml_dump({"fitted": block}))
        raise CollsimError(
            f"--output: cannot write {output!r}: {error.strerror or error}; the fitted block is printed above (paste it into a copy of the preset)"
        ) from None
    values = ", ".join(f"{key} {entry['value']:.4g}" for key, entry in block["constants"].items())
    click.echo(f"wrote {output}: {values or 'no constant moved from its default'}")
    for key, entry in {**block.get("held_at_prior", {}), **block.get("flagged", {})}.items():
        click.echo(f"  {key}: {entry['why']}")


def _default_constants(preset, counts: list[int]) -> list[str]:
    names = ["intra_efficiency", "latency_scale", "base_latency_us"]
    if max(counts) > 1:
        names.append("inter_efficiency")
    if preset.nccl is not None and preset.nccl.nvls:
        names += ["nvls_efficiency", "nvls_latency_scale"]
    return names


def yaml_dump(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=200)


def format_preset(data: dict[str, Any]) -> str:
    from sim.units import format_bandwidth, format_time

    sources = data["sources"]
    lines = [f"{data['name']}: {data['description']}"]
    for key, value in data.items():
        if key in ("name", "description", "sources", "nccl", "fitted", "effective"):
            continue
        if value is not None and key.endswith("_Bps"):
            value = format_bandwidth(value)
        elif value is not None and key.endswith("_s"):
            value = format_time(value)
        elif value is not None and key.endswith("_bytes"):
            value = f"{value / 1e9:g} GB ({value} bytes)"
        source_key = key.removesuffix("_Bps").removesuffix("_s").removesuffix("_bytes")
        lines.append(f"  {key:22s} {value}\n  {'':22s} source: {sources.get(source_key, '')}")
    if data["nccl"]:
        lines.append("  NCCL (what its topology search reports; read by --model nccl):")
        for key, value in data["nccl"].items():
            lines.append(f"    {key:20s} {value}\n    {'':20s} source: {sources.get('nccl.' + key, '')}")
    effective = data.get("effective") or {}
    if effective:
        lines.append("  effective constants (read by the DES data path and --model nccl; docs/nccl-model.md):")
        for key, value in effective.items():
            if key != "provenance":
                lines.append(f"    {key:20s} {value:.6g}   {effective['provenance'][key]}")
    return "\n".join(lines)


def echo_nccl(data: dict[str, Any], as_json: bool, nccl_algo: str | None = None, nccl_proto: str | None = None) -> None:
    """Print NCCL's pick for the scenario mapping's op and size on its hardware."""
    from sim.nccl.model import predict
    from sim.units import format_size, format_time, parse_size

    if data.get("hardware") is None:
        raise CollsimError("--model nccl needs --hardware NAME (collsim hardware list)")
    if "op" not in data:
        raise CollsimError("--model nccl needs --op")
    size = data.get("size_bytes", data.get("size", 0))
    size_bytes = size if isinstance(size, int) else parse_size(size, "--size")
    preset = load_preset(data["hardware"])
    nodes = int(data["ranks"]) // preset.gpus_per_node
    prediction = predict(preset, nodes, data["op"], size_bytes, nccl_algo, nccl_proto, data.get("nccl_version"))
    result = prediction.to_dict()
    if as_json:
        click.echo(json.dumps(result))
        return
    lines = [
        f"NCCL {result['nccl_version']} model: {result['op']} of {format_size(size_bytes)} on {result['nodes']} x {result['hardware']} ({result['ranks']} ranks)",
        f"  NCCL picks       {result['nccl_algorithm']} / {result['nccl_protocol']}",
        f"  predicted time   {format_time(result['time_s'])}",
    ]
    if result["busbw_GBps"] is not None:
        lines.append(f"  algbw / busbw    {result['algbw_GBps']:.4g} / {result['busbw_GBps']:.4g} GB/s")
    lines.append(
        "  candidates       " + ", ".join(f"{c['algorithm']}/{c['protocol']} {format_time(c['time_s'])}" for c in result["candidates"])
    )
    click.echo("\n".join(lines))
