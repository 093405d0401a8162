"""Plots kept as the SVG they rendered, keyed by what they were drawn from.

Drawing a plot with matplotlib costs 0.3–0.7 s of CPU per view (the score trend, the benchmark's level
counts, each of the agreement dashboard's plots), while what it is drawn from comes from kept figures in
milliseconds. The SVG is deterministic (``core.domain.plotting`` fixes its element ids), so the digest of
the inputs is a key that is never stale: other figures, another key.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable

from django.core.cache import cache

SVG_CACHE_SECONDS = 7 * 24 * 3600


def cached_svg(kind: str, draw: Callable[..., str], *inputs) -> str:
    """``draw(*inputs)``, from the cache when these inputs were drawn before."""
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    key = f"svg:{kind}:{digest}"
    svg = cache.get(key)
    if svg is None:
        svg = draw(*inputs)
        cache.set(key, svg, timeout=SVG_CACHE_SECONDS)
    return svg
