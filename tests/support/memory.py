"""The process's memory as the operating system sees it."""

from __future__ import annotations

import os


def rss() -> int | None:
    """Resident set size in bytes, or None where it means nothing.

    None where /proc is absent, and under AddressSanitizer (scripts/sanitize.sh),
    whose quarantine holds freed memory back by design: there RSS only grows.
    """
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return None
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None
