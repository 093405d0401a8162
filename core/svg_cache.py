"""Plots kept as the SVG they rendered, keyed by what they were drawn from.

Drawing a plot with matplotlib costs 0.3–0.7 s of CPU per view (the score trend, the benchmark's level
counts, each of the agreement dashboard's plots), while what it is drawn from comes from kept figures in
milliseconds. The SVG is deterministic (``core.domain.plotting`` fixes its element ids), so the digest of
the inputs is a key that is never stale: other figures, another key. The key also holds the drawing
code's version, so a deploy that changes how a plot looks does not serve the old drawing for a week.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from django.core.cache import cache

SVG_CACHE_SECONDS = 7 * 24 * 3600


@functools.cache
def code_version(module_name: str) -> str:
    """A digest of the module that draws, the shared plotting helpers and matplotlib's version (once per
    process: code changes with a deploy, which starts new processes)."""
    digest = hashlib.sha256(version("matplotlib").encode())
    for name in (module_name, "core.domain.plotting"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def cached_svg(kind: str, draw: Callable[..., str], *inputs) -> str:
    """``draw(*inputs)``, from the cache when the same code drew these inputs before."""
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    key = f"svg:{kind}:{code_version(draw.__module__)}:{digest}"
    svg = cache.get(key)
    if svg is None:
        svg = draw(*inputs)
        cache.set(key, svg, timeout=SVG_CACHE_SECONDS)
    return svg
