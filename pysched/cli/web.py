"""``pysched web``: serve the dashboard of a durable store (the ``web`` extra).

Binds 127.0.0.1 by default; any address other machines can reach needs
``--token``. docs/operations.md describes the pages and the security model.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import ExitCode, UsageError, add_store_arguments, fail, first_line, public_target

__all__ = ["add_parser", "build", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``web`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "web", help="serve a dashboard of the schedule in a browser",
        description="Serve a web dashboard of a durable schedule: an overview, tasks, failed"
                    " tasks and series, with cancel, retry, pause, resume and trigger."
                    " Needs the web extra (pip install 'pysched[web]').")
    add_store_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default: %(default)s); any but a"
                             " loopback address needs --token")
    parser.add_argument("--port", type=_port, default=8321,
                        help="the port to listen on (default: %(default)s)")
    parser.add_argument("--read-only", action="store_true",
                        help="show the schedule without the actions")
    parser.add_argument("--token", metavar="TOKEN",
                        help="ask every browser for this token first (at least 16 characters)")
    parser.set_defaults(run=run)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, got {value}")
    return value


def build(args: argparse.Namespace) -> Any:
    """The app ``run`` serves, after the bind and the token are checked (UsageError)."""
    try:
        import uvicorn  # noqa: F401 - checked here: run() serves with it

        from ..web import create_app
        from ..web.security import LOOPBACK_HOSTS, check_bind, check_token, is_loopback
    except ImportError as exc:
        raise UsageError(f"the dashboard needs the web extra: pip install 'pysched[web]'"
                         f" ({exc})") from exc
    try:
        token = check_token(args.token)
    except ValueError as exc:
        raise UsageError(f"argument --token: {exc}") from exc
    try:
        check_bind(args.host, token)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    # Bound to loopback, only loopback host names are served: a page elsewhere cannot
    # reach the dashboard through a DNS name it rebinds to this address.
    hosts = [*LOOPBACK_HOSTS, args.host] if is_loopback(args.host) else None
    return create_app(args.store, table=args.table, read_only=args.read_only, token=token,
                      allowed_hosts=hosts)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit status (see ``ExitCode``)."""
    app = _app_or_failure(args)
    if isinstance(app, int):
        return app
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port, log_level="info", server_header=False)
    return ExitCode.OK


def _app_or_failure(args: argparse.Namespace) -> Any:
    where = public_target(args.store)
    try:
        app = build(args)
        app.state.dashboard.listing.check()
    except UsageError:
        raise
    except LookupError as exc:
        return fail("web", f"{where}: {exc.args[0] if exc.args else exc}")
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        return fail("web", f"cannot read the store {where}: {first_line(exc)}")
    return app
