"""Processes of this host, as the sweeps of temporary files see them (an upload's file, an import's spool are
named by the process that owns them). Django-free: pure domain modules sweep too."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (signal 0 tests it and delivers nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
