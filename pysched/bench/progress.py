"""A plain-text progress bar on stderr, so stdout holds only the report.

On a terminal the bar redraws in place; elsewhere (a log, a pipe) each step
gets a line of its own, since carriage returns make a mess of logs.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class Progress:
    """Counts steps: ``start(total)``, ``advance(label)`` before each, ``finish()``."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._enabled = enabled
        self._inline = enabled and self._stream.isatty()
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._width = 0  # length of the last inline line, to blank it out

    def start(self, total: int) -> None:
        self._total, self._done, self._started = total, 0, time.monotonic()

    def line(self, label: str) -> str:
        """The bar as it reads while step ``self._done`` (counting from 1) runs."""
        filled = WIDTH * (self._done - 1) // max(self._total, 1)
        elapsed = time.monotonic() - self._started
        return (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self._done}/{self._total}"
                f" {elapsed:5.0f}s  {label}")

    def advance(self, label: str) -> None:
        self._done += 1
        if not self._enabled:
            return
        text = self.line(label)
        if self._inline:
            self._stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self._stream.write(text + "\n")
        self._stream.flush()

    def finish(self) -> None:
        if not self._enabled:
            return
        elapsed = time.monotonic() - self._started
        text = f"[{'#' * WIDTH}] {self._total}/{self._total} {elapsed:5.0f}s  done"
        self._stream.write(("\r" + text.ljust(self._width) if self._inline else text) + "\n")
        self._stream.flush()
