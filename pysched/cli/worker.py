"""``pysched worker``: run the due tasks of a durable schedule until signalled, then stop cleanly.

Life cycle: import the task modules -> open the store -> serve -> drain -> exit.

- open the store: a store with no schedule (no such SQLite file, or no such
  table) is a usage error unless ``--create`` is given, as it is most often
  a typo that would leave the worker waiting on an empty new schedule.
- serve: a ``DurableScheduler`` claims due rows and runs them on a pool of
  ``--max-workers`` threads that this module owns, so that the drain can
  reach the running tasks' cancel tokens.
- drain, on the first SIGTERM or SIGINT: no new claims; claimed versions
  that have not started go back to the store at once (pending again, for
  any worker); running ones finish and their outcomes are stored, within
  ``--grace`` seconds. A second signal sets the running tasks' cancel
  tokens and cuts what is left of the grace to ``--cancel-grace``; a third
  exits at once. A signal less than ``REPEAT_WINDOW`` seconds after the
  worker acted on the last one counted is the same request, not the next
  one: GNU ``timeout``
  and some supervisors signal both the process and its group, so a single
  stop can arrive twice, milliseconds apart.
- exit 0 once the scheduler is closed (nothing of ours left running or
  leased); exit 3 when the grace runs out first: the tasks still running
  are abandoned as in a crash, and their leases, renewed until the exit,
  expire after ``--lease`` seconds (sooner when a worker starts with the
  same ``--owner``: once two heartbeats have passed since the exit), so they run
  again: at-least-once, never lost, never two runs of one version under
  live leases.

Signals reach the main thread only, through a handler that puts the signal
number on a ``queue.SimpleQueue`` (whose ``put`` is safe in a signal
handler); the main thread waits on that queue for signals and for the end
of the drain, so nothing else runs inside a handler. It waits in slices of
``SIGNAL_CHECK`` seconds: the kernel may hand a signal to any thread, and
Python runs its handler only once the main thread runs again.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..durable import REGISTRY, DurableScheduler, TaskRegistry, open_store
from ..durable.store import Store, check_key
from ..threadpool import ThreadPoolScheduler
from ._common import (
    ExitCode,
    UsageError,
    add_store_arguments,
    count,
    fail,
    first_line,
    positive_int,
    public_target,
)
from .status import NoSchedule, check_schedule

log = logging.getLogger("pysched.worker")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_DRAINED = "drained"  # put on the inbox by the closer thread once the scheduler is closed
SIGNAL_CHECK = 0.05  # seconds at most between the main thread's looks for a signal's handler
PROGRESS_EVERY = 10.0  # seconds between "still waiting" lines during a drain
STORE_WAIT = 10.0  # seconds to store the last outcomes once no task runs
REPEAT_WINDOW = 1.0  # seconds after a counted stop signal within which another is the same stop

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``worker`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "worker", help="run due tasks until SIGTERM or SIGINT",
        description="Claim and run the due tasks of a durable schedule. On SIGTERM or SIGINT:"
                    " stop claiming, hand unstarted claims back, let running tasks finish"
                    " within --grace seconds and exit 0. A second signal, at least"
                    f" {_num(REPEAT_WINDOW)} s after the first, sets the running tasks' cancel"
                    " tokens and shortens the wait to --cancel-grace.")
    add_store_arguments(parser)
    parser.add_argument("--import", dest="modules", action="append", required=True,
                        metavar="MODULE", help="a module that registers tasks (repeatable);"
                        " the current directory is on the import path")
    parser.add_argument("--registry", metavar="MODULE:NAME",
                        help="the TaskRegistry to run from (default: pysched.durable.REGISTRY,"
                        " where @pysched.durable.task registers)")
    parser.add_argument("--queue", dest="queues", action="append", type=_queue_name,
                        metavar="NAME", help="a queue to claim from (repeatable; default: every"
                        " queue)")
    parser.add_argument("--max-workers", type=positive_int, default=4, metavar="N",
                        help="tasks run at once (default: %(default)s)")
    parser.add_argument("--prefetch", type=count, default=None, metavar="N",
                        help="tasks claimed ahead of a free worker (default: --max-workers,"
                        " grown while short tasks finish fast); a claim takes up to"
                        " max-workers + prefetch rows in one commit")
    parser.add_argument("--grace", type=_seconds, default=25.0, metavar="SECONDS",
                        help="how long running tasks may take to finish after the first"
                        " signal (default: %(default)s)")
    parser.add_argument("--cancel-grace", type=_seconds, default=5.0, metavar="SECONDS",
                        help="the wait left after a second signal (default: %(default)s)")
    parser.add_argument("--lease", type=_lease_seconds, default=30.0, metavar="SECONDS",
                        help="how long a claim outlives this process if it dies (default:"
                        " %(default)s)")
    parser.add_argument("--owner", metavar="NAME", type=_owner_name,
                        help="this worker's name in leases; a restart under the same name"
                        " releases at once what it held, once unrenewed for two heartbeats."
                        " Never give two live workers the same name: the second warns that"
                        " the owner is in use and leaves the leases the first still renews"
                        " (default: host:pid:random)")
    parser.add_argument("--create", action="store_true",
                        help="start a new schedule if the store has none: create the SQLite"
                        " file and the table (without it, a missing file or table is refused,"
                        " as most often a typo)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until signalled; return the exit status (see ``ExitCode``)."""
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    inbox = _Inbox()
    restore = inbox.install()
    try:
        return _run(args, inbox)
    finally:
        restore()


def _run(args: argparse.Namespace, inbox: _Inbox) -> int:
    try:
        registry = _load(args.modules, args.registry)
    except _StartError as exc:
        return fail("worker", str(exc))
    where = public_target(args.store)
    try:
        if not args.create:
            check_schedule(args.store, args.table)
        store = open_store(args.store, table=args.table)
    except NoSchedule as exc:
        raise UsageError(f"argument {exc.option}: {where}: {exc} (give --create to start a"
                         " new schedule there)") from exc
    except (TypeError, ValueError) as exc:  # a malformed target or table name
        raise UsageError(f"argument --store/--table: {first_line(exc)}") from exc
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        return fail("worker", f"cannot open the store {where}: {first_line(exc)}")
    pool = ThreadPoolScheduler(args.max_workers, thread_name_prefix="pysched-worker")
    try:
        sched = DurableScheduler(store, max_workers=args.max_workers, prefetch=args.prefetch,
                                 owner=args.owner, lease=args.lease, queues=args.queues,
                                 registry=registry, executor=pool)
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        pool.close()
        store.close()
        return fail("worker", f"cannot start on the store {where}: {first_line(exc)}")
    log.info("worker %s serving %s (table %s), %s: %s, %d at once, %s; on SIGTERM or SIGINT"
             " running tasks get %s s to finish", sched.owner, where, args.table,
             "every queue" if args.queues is None else "queues " + ", ".join(args.queues),
             _served(registry), args.max_workers, _series_held(store), _num(args.grace))
    first = inbox.next(None)
    assert isinstance(first, _Signal)  # only the drain's closer puts anything else
    status = _drain(sched, pool, inbox, first, args)
    if status is ExitCode.ABANDONED:
        # Running tasks are left as in a crash: no outcome is written for them,
        # and their threads must not hold the interpreter's exit open.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    store.close()
    return status


def _series_held(store: Store) -> str:
    """The recurring series the store holds, active and paused, as words for the log."""
    try:
        states = [row.state for row in store.series_table().rows()]
    except Exception as exc:  # noqa: BLE001 - the summary line must not stop the worker
        return f"recurring series not readable ({first_line(exc)})"
    active, paused = states.count("active"), states.count("paused")
    return f"{active + paused} recurring series ({paused} paused)"


def _drain(sched: DurableScheduler, pool: ThreadPoolScheduler, inbox: _Inbox, first: _Signal,
           args: argparse.Namespace) -> ExitCode:
    """Stop claiming, hand back what has not started, wait for what runs; the exit status."""
    sched.close(wait=False)
    pool.close(wait=False)  # cancels unstarted runs: the scheduler hands their claims back
    threading.Thread(target=_close_and_tell, args=(sched, inbox), daemon=True,
                     name="pysched-worker-drain").start()
    deadline = time.monotonic() + args.grace
    # The window runs from when the worker has acted on the last counted signal
    # (and said so): a handler runs on the main thread, so a repeat that arrived
    # while it acted is timed late, and is still the same request.
    signals, counted, storing = 1, time.monotonic(), False
    log.info("received %s: claiming no more; unstarted claims go back to the store; waiting up"
             " to %s s for %d running tasks (send SIGTERM or SIGINT again to cancel them)",
             first.name, _num(args.grace), pool.stats()["running"])
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            if storing or pool.stats()["running"]:
                break
            # Every run has returned: the grace was theirs. Storing their
            # outcomes and closing the store get a bound of their own.
            storing, deadline = True, time.monotonic() + STORE_WAIT
            log.info("no task running; waiting up to %s s for the last outcomes to be stored",
                     _num(STORE_WAIT))
            continue
        event = inbox.next(min(left, PROGRESS_EVERY))
        if event is None:
            if (left := deadline - time.monotonic()) > 0 and not storing:
                log.info("still waiting for %d running tasks (%s s left)",
                         pool.stats()["running"], _num(left))
            continue
        if not isinstance(event, _Signal):  # _DRAINED
            pool.close(wait=True)  # every run has returned: its threads only exit
            stats = sched.stats()
            failed = stats["failed"] + stats["errors"]
            stopped = stats["stopped_by_close"]
            log.info("stopped after running %d tasks (%d failed) and %d series fire times"
                     " (%d failed); %d unstarted claims and %d stopped runs handed back; no"
                     " lease left", stats["completed"] + failed, failed,
                     stats["series_fires"], stats["series_failed"],
                     stats["handed_back"] - stopped, stopped)
            return ExitCode.OK
        if event.at - counted < REPEAT_WINDOW:
            log.info("received %s within %s s of acting on the last one: the same stop request"
                     " (send one %s s or more apart to go further)", event.name,
                     _num(REPEAT_WINDOW), _num(REPEAT_WINDOW))
            continue
        signals += 1
        if signals > 2:
            log.warning("received %s a third time: exiting now", event.name)
            break
        deadline = min(deadline, time.monotonic() + args.cancel_grace)
        pool.close(wait=False, cancel_running=True)
        counted = time.monotonic()
        log.warning("received %s again: cancel tokens set on %d running tasks; waiting %s s"
                    " more", event.name, pool.stats()["running"],
                    _num(max(0.0, deadline - time.monotonic())))
    running = pool.stats()["running"]
    if running:
        log.error("exiting with %d tasks still running: their runs are abandoned and they run"
                  " again once %s", running, _leases_end(args.lease, sched.owner))
    else:
        log.error("exiting before the last outcomes were stored: those tasks run again once"
                  " %s", _leases_end(args.lease, sched.owner))
    return ExitCode.ABANDONED


def _leases_end(lease: float, owner: str) -> str:
    """When the leases renewed until this exit are free for another worker: a restart under
    the same owner releases only those not renewed for two heartbeats (the scheduler's
    default heartbeat, a third of the lease), as a live process's might be renewed since."""
    return (f"their leases expire, in {_num(lease)} s; a worker started with --owner {owner}"
            f" releases them sooner, once {_num(2 * lease / 3)} s (two heartbeats) have passed"
            " since this exit")


def _close_and_tell(sched: DurableScheduler, inbox: _Inbox) -> None:
    sched.close(wait=True)  # returns once every outcome is stored and the threads are gone
    inbox.put(_DRAINED)


class _Signal(NamedTuple):
    """A stop signal as the handler saw it: its number and when (``time.monotonic()``)."""

    number: int
    at: float

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.number).name
        except ValueError:
            return str(self.number)


class _Inbox:
    """Stop signals and the end of the drain, in arrival order, for the main thread."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Signal | str] = queue.SimpleQueue()

    def install(self) -> Callable[[], None]:
        """Route SIGTERM and SIGINT here; return what puts the previous handlers back."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in STOP_SIGNALS}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore

    def _on_signal(self, signum: int, frame: object) -> None:
        # Timed here, not when read: the main thread may read two at once.
        # SimpleQueue.put is reentrant: safe in a signal handler.
        self._queue.put(_Signal(signum, time.monotonic()))

    def put(self, event: str) -> None:
        self._queue.put(event)

    def next(self, timeout: float | None) -> _Signal | str | None:
        """The next event, or None after ``timeout`` seconds (None: wait for one)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # In slices: the kernel may hand a signal to any thread, and its
            # handler runs only once the main thread runs again.
            left = SIGNAL_CHECK if deadline is None else min(SIGNAL_CHECK,
                                                            deadline - time.monotonic())
            try:
                return self._queue.get(timeout=max(0.0, left))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    return None


class _StartError(Exception):
    """What stops the worker from starting, as one line for the operator."""


def _load(modules: Sequence[str], registry_ref: str | None) -> TaskRegistry:
    """Import the task modules (from the current directory too); the registry to run from."""
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as ``python -m`` does
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - the operator gets one line
            raise _StartError(f"cannot import {name}: {type(exc).__name__}: {first_line(exc)}"
                              ) from exc
    if registry_ref is None:
        return REGISTRY
    module_name, _, attr = registry_ref.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except Exception as exc:  # noqa: BLE001 - the operator gets one line
        raise _StartError(f"cannot find --registry {registry_ref}: {type(exc).__name__}:"
                          f" {first_line(exc)}") from exc
    if not isinstance(found, TaskRegistry):
        raise _StartError(f"--registry {registry_ref} is a {type(found).__name__},"
                          " not a pysched.durable.TaskRegistry")
    return found


def _served(registry: TaskRegistry) -> str:
    """The task names a worker with ``registry`` claims, for its start-up line."""
    serves = registry.serves()
    names = sorted(serves.names)
    text = f"tasks {', '.join(names)}" if names else "no registered tasks"
    modules = sorted({p.rstrip(":.") for p in serves.prefixes})
    return text + (f" and functions of {', '.join(modules)}" if modules else "")


def _key_name(text: str, what: str) -> str:
    """``text`` if a store can keep it as the ``what`` of a row or lease."""
    try:
        name = check_key(text, what)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not name:
        raise argparse.ArgumentTypeError(f"a {what} name cannot be empty")
    return name


def _queue_name(text: str) -> str:
    return _key_name(text, "queue")


def _owner_name(text: str) -> str:
    return _key_name(text, "owner")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _lease_seconds(text: str) -> float:
    """A lease: > 0, and short enough for the heartbeat's waits on a lock (a third of it)."""
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    if value > threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be <= {threading.TIMEOUT_MAX:.0f}, got {text}")
    return value


def _num(seconds: float) -> str:
    return f"{seconds:g}" if seconds == int(seconds) else f"{seconds:.1f}"
