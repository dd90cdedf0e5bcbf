"""Run the console under uvicorn on a socket bound before the URL is printed.

    serve(settings, host="127.0.0.1", port=0, token=None, on_ready=print)

Port 0 picks a free port. The socket is bound and listening before `on_ready` gets the URL,
so whoever reads it can connect at once. Blocks until interrupted (Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from agent.app.console.app import create_app
from agent.app.console.changes import ChangeLog
from agent.app.console.data import ConsoleData
from agent.app.console.security import check_bind
from agent.app.session import open_memory
from agent.app.settings import Settings
from agent.errors import ConfigurationError


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0: a free port); `ConfigurationError` if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The http URL of a bound socket."""
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    token: str | None,
    results_dir: Path,
    on_ready: Callable[[str], None],
) -> None:
    """Open the configured store and serve the console until interrupted."""
    check_bind(host, token)
    memory = open_memory(settings, existing=True)
    try:
        data = ConsoleData(
            memory,
            runs_dir=settings.runs_dir,
            results_dir=results_dir,
            changes=ChangeLog(settings.home / "console" / "changes.jsonl"),
        )
        app = create_app(data, token=token)
        sock = bind(host, port)
        try:
            url = url_of(sock, host)
            on_ready(url + (f"?token={token}" if token else ""))
            config = uvicorn.Config(app, log_level="warning", access_log=False)
            # uvicorn re-raises the Ctrl-C it shut down on: for us that is a normal stop.
            with contextlib.suppress(KeyboardInterrupt):
                uvicorn.Server(config).run(sockets=[sock])
        finally:
            sock.close()
    finally:
        memory.close()
