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
@click.option(
    "--files",
    "folders",
    multiple=True,
    help="a folder whose files (GraphML/JSON topologies, placement files, preset YAML) the explorer's fields may name, "
    "by their name in it; repeatable. Without it no field opens a file on the server",
)
@click.option("--debug", is_flag=True, help="Dash debug mode: hot reload and the error overlay")
def ui(host: str, port: int, debug: bool, db_path: str | None, folders: tuple[str, ...]) -> None:
    """Serve the browser what-if explorer (Dash) on 127.0.0.1:8050."""
    from werkzeug.serving import make_server

    from sim.files import allow_folders
    from webapp.app import create_app

    allow_folders(folders)
    if db_path is not None:
        from pathlib import Path

        if Path(db_path).is_dir() and (Path(db_path) / "results.sqlite").is_file():
            db_path = str(Path(db_path) / "results.sqlite")  # a `collsim validate --out DIR` folder
        if not Path(db_path).is_file():
            raise CollsimError(f"--db: results store {db_path!r} not found (give a SQLite store or a `collsim validate` output folder)")
    _check_host(host, port)
    app = create_app(db_path)
    if debug:
        _stop_on_signals(None)
        app.run(host=host, port=port, debug=True)
        return
    try:
        server = make_server(host, port, app.server, threaded=True)
    except OSError as error:
        raise CollsimError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    server.daemon_threads = True  # a request still computing does not hold the exit
    server.block_on_close = False
    _stop_on_signals(server)
    click.echo(f"collsim explorer on http://{host}:{server.server_port}/  (Ctrl+C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _check_host(host: str, port: int) -> None:
    """An address that does not resolve is one error line naming --host (it printed a bare
    resolver message and exited 1)."""
    import socket

    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise CollsimError(
            f"--host: cannot use {host!r} ({reason}); give an address of this machine such as 127.0.0.1 or 0.0.0.0"
        ) from None


STOP_WITHIN_S = 4.0  # SIGTERM / SIGINT: the process is gone within this, whatever it is doing


def _stop_on_signals(server: object | None) -> None:
    """SIGTERM (a service manager, ``kill``) and SIGINT (Ctrl+C) stop the server within
    :data:`STOP_WITHIN_S` whatever it is doing: its child processes (background jobs, the
    crossover helper) are ended, exit handlers run (they remove the background-job cache
    directory), and a watchdog ends the process should anything still hold it."""
    import atexit
    import os
    import signal
    import threading

    def stop(signum: int, frame: object) -> None:
        code = 0 if signum == signal.SIGTERM else 130
        watchdog = threading.Timer(STOP_WITHIN_S, os._exit, (code,))
        watchdog.daemon = True
        watchdog.start()
        _end_children()
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()  # serve_forever returns
        atexit._run_exitfuncs()
        os._exit(code)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def _end_children() -> None:
    """Terminate this process's children (background jobs, the crossover helper); kill any
    still there a second later."""
    try:
        import psutil
    except ImportError:
        return
    children = [child for child in psutil.Process().children(recursive=True) if not _resource_tracker(child)]
    for child in children:
        try:
            child.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(children, timeout=1.0)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass


def _resource_tracker(process: object) -> bool:
    """multiprocessing's resource tracker ignores Ctrl+C and ends with the server by itself; ended
    first, it is relaunched by the exit handlers and prints a traceback for each semaphore."""
    try:
        return "resource_tracker" in " ".join(process.cmdline())
    except Exception:  # psutil.Error: gone already, or not ours to read
        return False
