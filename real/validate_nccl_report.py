"""The outputs of ``collsim validate nccl-tests``: summary.json, report.md and report.html (the same
tables; the HTML adds a busbw figure where plotly is installed), and the lines the command prints.
Pure functions of the document :func:`real.validate_nccl.validate` returns."""

from __future__ import annotations

import html
import json
from pathlib import Path

import click

from sim.errors import CollsimError
from sim.units import format_size

HOW_TO_READ = (
    "The fit saw only the fitted logs; the predicted logs are the test. For each regime of message size: the median and the "
    "worst busbw error of the predictions (predicted busbw / measured - 1: + means the model is too fast) and how often the "
    "80 % interval held the measurement (about 80 % is honest; far less means the interval is too narrow). The fitted "
    "logs' errors are in-sample and say only how well the model can follow them."
)


def busbw_GBps(point: dict, gpus_per_node: int, seconds: float | None = None) -> float | None:
    from sim.collective.analytic import busbw_factor

    time_s = point["measured_s"] if seconds is None else seconds
    if time_s is None:
        return None
    return point["size_bytes"] / time_s / 1e9 * busbw_factor(point["op"], point["nodes"] * gpus_per_node)


def _pct(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else f"{value:+.1%}" if signed else f"{value:.1%}"


def sections(document: dict) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(title, sentence, headers, rows) of every table, for both the Markdown and the HTML report."""
    split = [[role, row["log"], row["op"], str(row["nodes"]), str(row["sizes"]), row["nccl_algo"] or "-", row["nccl_proto"] or "-",
              _release_cell(row)] for role in ("fitted", "predicted") for row in document["split"][role]]  # fmt: skip
    strides = f"fitted on {_every(document['fit_stride'])}, predicted {_every(document['stride'])}"
    return [
        ("Held-out split", f"Which logs the fit saw and which it predicts ({strides}).",
         ["role", "log", "op", "nodes", "sizes", "NCCL_ALGO", "NCCL_PROTO", "NCCL release (from)"], split),
        ("Predicted (held-out) points per regime", "How far to trust a prediction: errors on logs the fit did not see.",
         ["regime", "points", "median abs busbw error", "worst busbw error", "80 % interval covered", "median interval x/÷"], _regime_table(document, "predicted")),
        ("Fitted points per regime (in-sample, not a validation)", "How closely the fit follows the logs it saw.",
         ["regime", "points", "median abs busbw error", "worst busbw error"], _regime_table(document, "fitted")),
        ("Constants", "The value every prediction used, its one-sd range (what the interval propagates) and where it came from.",
         ["constant", "value", "one-sd range", "source"], _constant_rows(document)),
        ("Points", "Every size: measured and predicted busbw (GB/s), the 80 % interval for predicted points.",
         ["role", "log", "size", "measured", "predicted", "80 % interval", "error", "covered"], _point_rows(document)),
    ]  # fmt: skip


def _release_cell(row: dict) -> str:
    release = row.get("nccl_release")
    return f"{release['version']} ({release['source']})" if release else "-"


def release_notes(document: dict) -> list[str]:
    """One line per log: the NCCL release its points were picked with and where it came from."""
    return [f"{row['log']}: {row['nccl_release']['note']}" for role in ("fitted", "predicted") for row in document["split"][role]
            if row.get("nccl_release")]  # fmt: skip


def _every(stride: int) -> str:
    return "every size" if stride == 1 else f"every {stride}{ {2: 'nd', 3: 'rd'}.get(stride, 'th') } size"


def _regime_table(document: dict, role: str) -> list[list[str]]:
    rows = []
    for row in document["regimes"][role]:
        cells = [row["regime"], str(row["points"]), _pct(row["median_abs_error"]), _pct(row["worst_error"], signed=True)]
        if role == "predicted":
            judged = row["coverage"] is not None
            cells.append(f"{row['covered']}/{row['points']} ({row['coverage']:.0%})" if judged else "-")
            cells.append(f"{row['median_width']:.2f}" if judged else "-")
        rows.append(cells)
    return rows


def _constant_rows(document: dict) -> list[list[str]]:
    fit = document["fit"]
    rows = []
    for name, entry in document["constants"].items():
        low, high = entry["sd_range"]
        if name in (fit.get("constants") or {}):
            kept = fit["constants"][name]
            source = f"fitted, 95 % interval {kept['interval']}, prior {kept['prior']['value']}; moved by {', '.join(kept['moved_by']) or 'no single log'}"
        elif name in (fit.get("held_at_prior") or {}) or name in (fit.get("flagged") or {}):
            source = "prior: " + {**(fit.get("held_at_prior") or {}), **(fit.get("flagged") or {})}[name]["why"]
        else:
            source = "prior (not fitted: " + ("nothing was fitted)" if fit.get("constants") is None else "the fitted logs cannot move it)")
        rows.append([name, f"{entry['value']:.4g}", f"{low:.4g} - {high:.4g}", source])
    return rows


def _point_rows(document: dict) -> list[list[str]]:
    per_node = document["gpus_per_node"]
    rows = []
    for point in document["points"]:
        low, high = point["low_s"], point["high_s"]
        interval = "-" if low is None else f"{busbw_GBps(point, per_node, high):.4g} - {busbw_GBps(point, per_node, low):.4g}"
        covered = {True: "yes", False: "no", None: "-"}[point["covered"]]
        rows.append([point["role"], point["log"], format_size(point["size_bytes"]), f"{busbw_GBps(point, per_node):.4g}",
                     f"{busbw_GBps(point, per_node, point['predicted_s']):.4g}", interval, _pct(point["error"], signed=True), covered])  # fmt: skip
    return rows


def markdown(document: dict) -> str:
    lines = [f"# collsim validate nccl-tests: {document['hardware']}", "", f"`{document.get('command', '')}`", "", HOW_TO_READ, ""]
    notes = [entry["note"] for entry in document.get("not_predicted", [])] + release_notes(document)
    lines += [f"- {note}" for note in notes] + ([""] if notes else [])
    for title, sentence, headers, rows in sections(document):
        lines += [f"## {title}", "", sentence, "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows] + [""]
    lines += ["## Interval", "", document["interval"]["method"] + f"; s here = {document['interval']['residual_spread']:.4f}.", ""]
    return "\n".join(lines)


def html_report(document: dict, plotlyjs: str = "inline") -> str:
    parts = [f"<h1>collsim validate nccl-tests: {html.escape(document['hardware'])}</h1>",
             f"<p><code>{html.escape(document.get('command', ''))}</code></p><p>{html.escape(HOW_TO_READ)}</p>"]  # fmt: skip
    notes = [entry["note"] for entry in document.get("not_predicted", [])] + release_notes(document)
    parts += [f"<p>{html.escape(note)}</p>" for note in notes]
    parts.append(figure_html(document, plotlyjs))
    for title, sentence, headers, rows in sections(document):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
        parts.append(f"<h2>{html.escape(title)}</h2><p>{html.escape(sentence)}</p><table><tr>{head}</tr>{body}</table>")
    parts.append(f"<h2>Interval</h2><p>{html.escape(document['interval']['method'])}</p>")
    style = "<style>body{font-family:sans-serif;max-width:80em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
    return f"<!doctype html><html><head><meta charset='utf-8'><title>collsim validate nccl-tests</title>{style}</head><body>{''.join(parts)}</body></html>"


def figure_html(document: dict, plotlyjs: str) -> str:
    """Measured busbw by size per log, the DES line, and the 80 % band of the predicted logs."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        return "<p>(no figure: plotly is not installed; pip install 'collsim[webapp]')</p>"
    figure, per_node = go.Figure(), document["gpus_per_node"]
    for log in sorted({p["log"] for p in document["points"]}):
        members = sorted((p for p in document["points"] if p["log"] == log), key=lambda p: p["size_bytes"])
        sizes, role = [p["size_bytes"] for p in members], members[0]["role"]
        figure.add_scatter(x=sizes, y=[busbw_GBps(p, per_node) for p in members], mode="markers", name=f"{log} measured")
        figure.add_scatter(
            x=sizes, y=[busbw_GBps(p, per_node, p["predicted_s"]) for p in members], mode="lines", name=f"{log} DES ({role})"
        )
        if role == "predicted":
            band = [busbw_GBps(p, per_node, p["high_s"]) for p in members] + [busbw_GBps(p, per_node, p["low_s"]) for p in members][::-1]
            figure.add_scatter(x=sizes + sizes[::-1], y=band, fill="toself", opacity=0.2, line={"width": 0}, name=f"{log} 80 % interval")
    figure.update_layout(xaxis={"type": "log", "title": "size (bytes)"}, yaxis={"title": "busbw (GB/s)"}, height=480)
    return figure.to_html(full_html=False, include_plotlyjs=True if plotlyjs == "inline" else "cdn")


def check_out(out: Path) -> None:
    """--out made and writable before any simulation."""
    if out.exists() and not out.is_dir():
        raise CollsimError(f"--out {str(out)!r} is a file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".collsim-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise CollsimError(f"--out: cannot write in {str(out)!r}: {error.strerror or error}") from None


def write_outputs(document: dict, out: Path, plotlyjs: str = "inline") -> dict[str, Path]:
    paths = {"summary": out / "summary.json", "markdown": out / "report.md", "html": out / "report.html"}
    paths["summary"].write_text(json.dumps(document, indent=1, default=str))
    paths["markdown"].write_text(markdown(document))
    paths["html"].write_text(html_report(document, plotlyjs))
    return paths


def format_text(document: dict, paths: dict[str, Path]) -> str:
    split = document["split"]
    named = {
        role: ", ".join(f"{row['log']} ({row['nodes']} node{'s' if row['nodes'] > 1 else ''})" for row in split[role]) for role in split
    }
    lines = [f"# fitted on {named['fitted']}", f"# predicted {named['predicted']}"]
    lines += [f"# {entry['note']}" for entry in document.get("not_predicted", [])] + [f"# {note}" for note in release_notes(document)]
    for role in ("predicted", "fitted"):
        for row in document["regimes"][role]:
            covered = (f", 80 % interval covered {row['covered']}/{row['points']} (median x/÷ {row['median_width']:.2f})"
                       if row["coverage"] is not None else " (in-sample)")  # fmt: skip
            lines.append(f"# {role:9s} {row['regime']:10s}: {row['points']:3d} points, median |busbw error| {_pct(row['median_abs_error'])}, "
                         f"worst {_pct(row['worst_error'], signed=True)}{covered}")  # fmt: skip
    return "\n".join(lines + [f"# wrote {path}" for path in paths.values()])


@click.command("nccl-tests")
@click.argument("logs", nargs=-1, metavar="LOG...")
@click.option("--hardware", required=True, help="the preset the logs ran on (collsim hardware list)")
@click.option("--nodes", default=None, help="nodes of each log, comma list (default: from its rank count)")
@click.option("--fit-on", "fit_on", default=None,
              help="the logs to fit on, comma list of nodes=N and log file names (default: the smallest node count of each op); the others are predicted")  # fmt: skip
@click.option("--nccl-proto", default=None, help="NCCL_PROTO the runs had (e.g. Simple), if set")
@click.option("--nccl-algo", default=None, help="NCCL_ALGO the runs had (e.g. Ring), if set or known")
@click.option("--nccl-version", default=None,
              help="NCCL release of logs that name none, one for all or a comma list per log (default: the log's own, else 2.27)")  # fmt: skip
@click.option("--stride", default=1, type=int, show_default=True, help="use every Nth size of each log (faster)")
@click.option(
    "--out", "out_dir", default="validate-nccl-tests", show_default=True, help="directory for report.md, report.html, summary.json"
)
@click.option(
    "--plotlyjs", default="inline", show_default=True, type=click.Choice(["inline", "cdn"]), help="how report.html loads plotly.js"
)
def nccl_tests_command(logs: tuple[str, ...], hardware: str, nodes: str | None, fit_on: str | None, nccl_proto: str | None,
                       nccl_algo: str | None, nccl_version: str | None, stride: int, out_dir: str, plotlyjs: str) -> None:  # fmt: skip
    """Fit a preset on some of your nccl-tests logs, predict the others: per size regime the error
    and how often the 80 % interval held the measurement (held-out, not in-sample). Logs of
    all_reduce, all_gather, reduce_scatter, alltoall, broadcast and reduce, fitted or predicted,
    each picked with the tuning of the NCCL release it names (else --nccl-version, else 2.27.7-1)."""
    import sys

    from real.validate_nccl import check_runs, choose_fit_on, read_logs, validate

    if stride < 1:
        raise CollsimError(f"--stride: must be >= 1, got {stride}")
    read = read_logs(logs, hardware, nodes, nccl_proto, nccl_algo, nccl_version)
    choose_fit_on(read, fit_on)  # the split, NCCL_ALGO / NCCL_PROTO and --out refused before the work
    check_runs(read, hardware)
    out = Path(out_dir)
    check_out(out)
    document = validate(read, hardware, fit_on, stride, progress=lambda message: click.echo(f"  {message}", err=True))
    document["command"] = "collsim validate " + " ".join(sys.argv[2:])
    click.echo(format_text(document, write_outputs(document, out, plotlyjs)))


__all__ = ["HOW_TO_READ", "busbw_GBps", "release_notes", "sections", "markdown", "html_report", "figure_html", "check_out", "write_outputs", "format_text",
           "nccl_tests_command"]  # fmt: skip
