"""``collsim ui``: serve the explorer on 127.0.0.1 (threaded, so a long request blocks no one)."""

from __future__ import annotations

import click

from sim.errors import CollsimError


def _check_port(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if not 0 <= value <= 65535:
        raise CollsimError(f"--port: must be between 0 and 65535, got {value}")
    return value


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to bind; 0.0.0.0 exposes the app to your network")
@click.option("--port", default=8050, show_default=True, type=int, callback=_check_port, help="TCP port (0: any free port)")
@click.option(
    "--db",
    "db_path",
    default=None,
    help="results store (SQLite, or a `collsim validate` output folder) for the sim-vs-measured page; default: bundled sample data",
)
@click.option("--debug", is_flag=True, help="Dash debug mode: hot reload and the error overlay")
def ui(host: str, port: int, debug: bool, db_path: str | None) -> None:
    """Serve the browser what-if explorer (Dash) on 127.0.0.1:8050."""
    from werkzeug.serving import make_server

    from webapp.app import create_app

    if db_path is not None:
        from pathlib import Path

        if Path(db_path).is_dir() and (Path(db_path) / "results.sqlite").is_file():
            db_path = str(Path(db_path) / "results.sqlite")  # a `collsim validate --out DIR` folder
        if not Path(db_path).is_file():
            raise CollsimError(f"--db: results store {db_path!r} not found (give a SQLite store or a `collsim validate` output folder)")
    app = create_app(db_path)
    _exit_cleanly_on_sigterm()
    if debug:
        app.run(host=host, port=port, debug=True)
        return
    try:
        server = make_server(host, port, app.server, threaded=True)
    except OSError as error:
        raise CollsimError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    click.echo(f"collsim explorer on http://{host}:{server.server_port}/  (Ctrl+C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _exit_cleanly_on_sigterm() -> None:
    """SIGTERM (a service manager, ``kill``) exits like Ctrl+C, so exit handlers run (they
    remove the app's background-job cache directory)."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
