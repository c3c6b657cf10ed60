"""Describe the machine and software a run was measured on."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from typing import Any

import pysched


def cpu_model() -> str:
    """The CPU's marketing name, or the best the platform offers."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


def describe() -> dict[str, Any]:
    """Platform, CPU, cores, Python, pysched and the date, for the report and the JSON."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "pysched": pysched.__version__,
        "pysched_implementation": pysched.IMPLEMENTATION,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
