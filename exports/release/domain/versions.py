"""Release versions are semantic versions (semver.org 2.0.0): MAJOR.MINOR.PATCH, an optional pre-release
after '-' and build metadata after '+'. Pure Python (no Django)."""

from __future__ import annotations

import re

# semver.org's own regular expression (its FAQ), written with \d spelled out so it matches ASCII digits only
_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    rf"(?:-{_IDENT}(?:\.{_IDENT})*)?"
    r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$"
)
MAX_LENGTH = 40  # a directory name and a Hub tag


def version_problem(version: str) -> str:
    """Why ``version`` cannot name a new release, in words naming the field; empty when it can."""
    if not version:
        return "version: give one, a semantic version such as 1.0.0"
    if len(version) > MAX_LENGTH:
        return f"version: at most {MAX_LENGTH} characters (this one has {len(version)})"
    if not SEMVER_RE.match(version):
        hint = " (without the leading v)" if version[:1] in "vV" and SEMVER_RE.match(version[1:]) else ""
        return f"version {version!r}: use a semantic version MAJOR.MINOR.PATCH, such as 1.0.0 or 2.1.0-rc.1{hint}"
    return ""
