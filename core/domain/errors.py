"""Errors of bad input: every problem is collected (with its file, line or field) before anything is written."""

from __future__ import annotations

SHOWN = 50


class InputErrors(ValueError):
    """Input that cannot be used; ``errors`` lists each problem with its location. Nothing was written."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:SHOWN])
        more = f"\n  … and {len(errors) - SHOWN} more" if len(errors) > SHOWN else ""
        prefix = f"{source}: " if source else ""
        super().__init__(f"{prefix}{len(errors)} problem(s), nothing imported:\n{shown}{more}")
