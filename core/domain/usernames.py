"""Usernames people cannot mistake for one another (#36.10).

A username is NFKC-normalised (full-width ``ａdmin`` becomes ``admin``, so it meets the existing user) and
refused when it mixes scripts with letters that look alike (``аdmin`` with a Cyrillic а), the check of
Unicode TR39 as the maintained ``confusable_homoglyphs`` package implements it. One script throughout
(``müller``, ``张伟``, ``иван``) stays allowed: annotators write their names in their own script.
"""

from __future__ import annotations

import unicodedata

from confusable_homoglyphs import confusables


def normalize_username(name: str) -> str:
    return unicodedata.normalize("NFKC", name or "").strip()


def username_problem(name: str) -> str:
    """Why ``name`` (already normalised) may not be a username, or an empty string."""
    dangerous = confusables.is_confusable(name, greedy=True, preferred_aliases=[])
    if not dangerous or not confusables.is_mixed_script(name):
        return ""
    by_script: dict[str, list[str]] = {}
    for found in dangerous:
        if found["alias"] != "COMMON":
            by_script.setdefault(found["alias"].title(), []).append(found["character"])
    scripts = sorted(by_script, key=lambda script: (-len(by_script[script]), script))
    odd = [character for script in scripts[1:] for character in by_script[script]]
    return f"mixes {' and '.join(scripts)} letters that look alike ({', '.join(odd[:5])}): write it in one script"
