"""Handing a record's fields on: the keyword arguments of a constructor or function that names them as the
record does (a checked span to its model row, a scored row to its stored score, an edit task to the rule
that performs it)."""

from __future__ import annotations

from dataclasses import fields


def fields_of(record, *names: str) -> dict[str, object]:
    """``{name: record.name}`` for each of ``names``, or for every field of the dataclass ``record`` when none
    is named. Shallow, unlike ``dataclasses.asdict``: the values are passed on, not copied."""
    return {name: getattr(record, name) for name in names or (f.name for f in fields(record))}
