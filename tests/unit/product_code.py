"""The product code the house tests read from the source: the platform, the scoring package and the client
packages, without tests, migrations, ``perf/`` or the ``reference/`` fixture generators."""

from __future__ import annotations

import os
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


def repository_modules(skip: tuple[str, ...] = ()) -> list[Path]:
    """Every ``.py`` file of the repository, sorted, without descending into hidden folders (the virtualenvs,
    ``.git``: a plain ``rglob`` walked their hundreds of thousands of files in every test process), ``site``,
    ``node_modules`` or the top-level folders named in ``skip``."""
    found = []
    for folder, dirs, files in os.walk(REPO):
        top = Path(folder) == REPO
        dirs[:] = [
            d for d in dirs if not d.startswith(".") and d not in ("site", "node_modules") and not (top and d in skip)
        ]
        found.extend(Path(folder) / f for f in files if f.endswith(".py"))
    return sorted(found)
