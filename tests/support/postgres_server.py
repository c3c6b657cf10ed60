"""A private PostgreSQL server for the test run, started on first use where PostgreSQL is
installed.

Each test process (each pytest-xdist worker) starts its own, in a temporary
folder on a free loopback port: the tests that restart the server or cut a
role off affect no other process's tests. As root the server runs as the
``postgres`` user (initdb refuses root), as ``.ci/run`` used to do. Durability
is off (fsync, synchronous commit): the tests kill worker processes, never the
server or the machine. ``stop()`` (pytest_sessionfinish) removes it all.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass

# Where the binaries of PostgreSQL's server may be, best first: PYSCHED_TEST_POSTGRES_BIN,
# pg_config's (a source build), Debian's and Ubuntu's newest, then PATH.
BIN_ENV = "PYSCHED_TEST_POSTGRES_BIN"
START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
PORT_ATTEMPTS = 3  # a free port may be taken between finding it and binding it
# Every skip for want of PostgreSQL starts so; the run's summary counts them in one line.
SKIP_PREFIX = "PostgreSQL: "


class Unavailable(Exception):
    """No server can be started here; the message says why (a skip reason)."""


@dataclass
class Server:
    folder: str
    bin_dir: str
    run_as: list[str]
    url: str

    def pg_ctl(self, *args: str) -> list[str]:
        return [*self.run_as, os.path.join(self.bin_dir, "pg_ctl"), "-D", self.data, *args]

    @property
    def data(self) -> str:
        return os.path.join(self.folder, "data")

    @property
    def restart_command(self) -> str:
        """A shell command that restarts this server, for PYSCHED_TEST_POSTGRES_RESTART."""
        return shlex.join(self.pg_ctl("-l", os.path.join(self.folder, "log"), "-w", "-t",
                                      str(START_TIMEOUT), "-m", "fast", "restart"))


_server: Server | None = None
_failure: str | None = None


def bin_dir() -> str | None:
    """The folder holding initdb and pg_ctl, or None where PostgreSQL is not installed."""
    candidates = [os.environ.get(BIN_ENV, "")]
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        candidates.append(found.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_major, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(os.path.dirname(os.path.realpath(on_path)))
    for folder in candidates:
        if folder and all(os.access(os.path.join(folder, tool), os.X_OK)
                          for tool in ("initdb", "pg_ctl")):
            return folder
    return None


def url() -> str:
    """This process's server's URL, starting it on the first call; Unavailable if it cannot."""
    global _server, _failure
    if _server is not None:
        return _server.url
    if _failure is not None:  # one attempt per process: every later test skips at once
        raise Unavailable(_failure)
    try:
        _server = _start()
    except Unavailable as exc:
        _failure = str(exc)
        raise
    return _server.url


def restart_command() -> str | None:
    return None if _server is None else _server.restart_command


def stop() -> None:
    """Stop this process's server, if it started one, and remove its folder."""
    global _server
    server, _server = _server, None
    if server is None:
        return
    subprocess.run(server.pg_ctl("-m", "immediate", "-w", "stop"), capture_output=True)
    shutil.rmtree(server.folder, ignore_errors=True)


def _start() -> Server:
    folder_bin = bin_dir()
    if folder_bin is None:
        raise Unavailable("PostgreSQL is not installed (no initdb and pg_ctl found; "
                          f"{BIN_ENV} names their folder)")
    run_as: list[str] = []
    folder = tempfile.mkdtemp(prefix="pysched-pg-")
    try:
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # initdb refuses to run as root
            try:
                import pwd

                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root, and there is no postgres user to run "
                                  "PostgreSQL as") from None
            os.chown(folder, owner.pw_uid, owner.pw_gid)
            run_as = ["runuser", "-u", "postgres", "--"]
        _run([*run_as, os.path.join(folder_bin, "initdb"), "-D", os.path.join(folder, "data"),
              "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"], "initdb")
        for _ in range(PORT_ATTEMPTS):
            port = _free_port()
            server = Server(folder, folder_bin, run_as,
                            f"postgresql://postgres@127.0.0.1:{port}/postgres")
            options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
                       " -c synchronous_commit=off -c full_page_writes=off")
            started = subprocess.run(
                server.pg_ctl("-l", os.path.join(folder, "log"), "-w", "-t", str(START_TIMEOUT),
                              "-o", options, "start"), capture_output=True, text=True)
            if started.returncode == 0:
                return server
        raise Unavailable(f"pg_ctl start failed: {_log_tail(folder) or started.stderr.strip()}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise Unavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-500:]}")


def _major(debian_bin_dir: str) -> int:
    """15 for /usr/lib/postgresql/15/bin."""
    name = os.path.basename(os.path.dirname(debian_bin_dir))
    return int(name) if name.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _log_tail(folder: str) -> str:
    try:
        with open(os.path.join(folder, "log")) as log:
            return log.read().strip()[-500:]
    except OSError:
        return ""
