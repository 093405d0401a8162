"""The product code the house tests read from the source: the platform, the scoring package and the client
packages, without tests, migrations, ``perf/`` or the ``reference/`` fixture generators."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("xqmeval", "core", "injection", "annotation", "exports", "scoring", "llm_client", "worker_client")
NOT_PRODUCT = {"tests", "migrations", "perf", "reference"}


def product_sources() -> Iterator[tuple[str, str]]:
    """(path relative to the repository, its text) of every product-code module, in path order."""
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO)
            if not NOT_PRODUCT & set(relative.parts[:-1]):
                yield relative.as_posix(), path.read_text(encoding="utf-8")
