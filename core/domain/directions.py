"""The progress a build or a release keeps per direction (``directions``: code -> entry with ``status`` and
``error``), written by workers that each finish one direction."""

from __future__ import annotations


def with_entry(directions: dict | None, code: str, fields: dict) -> dict:
    """``directions`` with ``code``'s entry updated by ``fields`` (other directions and keys kept)."""
    directions = directions or {}
    return {**directions, code: {**directions.get(code, {}), **fields}}


def first_failure(directions: dict) -> str:
    """'code: error' of the first direction that failed for good, or '' while none has."""
    return next(
        (f"{code}: {entry.get('error', '')}" for code, entry in directions.items() if entry.get("status") == "failed"),
        "",
    )
