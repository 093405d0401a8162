"""What the HTTP benchmarks share: the web app served by gunicorn on a free loopback port, as in production."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn_serve(env: dict, *, workers: int = 2) -> tuple[subprocess.Popen, str]:
    """Start gunicorn (its own process group, so ``os.killpg`` stops it and its workers) and wait until
    ``/healthz`` answers: the process and the platform's base URL."""
    import httpx

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "xqmeval.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(f"{url}/healthz", timeout=2)
            break
        except httpx.TransportError:
            time.sleep(0.3)
    return server, url
