"""The bytes a worker moves: files read in chunks, a streamed answer split into lines, a file's sha256,
a file replaced in one step."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

CHUNK = 1024 * 1024


def read_chunks(fh, size: int = CHUNK) -> Iterator[bytes]:
    while chunk := fh.read(size):
        yield chunk


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in read_chunks(fh):
            h.update(chunk)
    return h.hexdigest()


def iter_lines_bytes(response, size: int = CHUNK) -> Iterator[bytes]:
    """Lines of a streamed response as bytes, each with its newline (httpx decodes gzip)."""
    pending = b""
    for chunk in response.iter_bytes(size):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if pending:
        yield pending


def write_atomic(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole or keeps what it held: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
