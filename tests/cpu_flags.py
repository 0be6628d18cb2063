"""The CPU's feature flags as Linux lists them; no NumPy import (conftest reads them before NumPy loads)."""

from __future__ import annotations


def cpu_flags() -> set[str] | None:
    """The ``flags`` of the first CPU in /proc/cpuinfo ("pni" is SSE3); None without /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return set(next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []))
    except OSError:
        return None
