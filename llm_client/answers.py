"""Bounds on what an endpoint sends back (#48.2): an answer is read in chunks and dropped once past
``MAX_ANSWER_BYTES``, JSON in an answer is parsed only when it nests at most ``MAX_JSON_NESTING`` deep, and
the raw answer kept for diagnosis is cut to ``MAX_RAW_OUTPUT_CHARS``. Pure Python.

A chat answer for one sentence (``max_tokens`` 1,024 by default) is a few kilobytes; the caps are far
above that, and an answer past them fails its item with the reason instead of filling pages and the
database.
"""

from __future__ import annotations

import json

MAX_ANSWER_BYTES = 1024 * 1024  # one HTTP response body (or one Batch API result's text)
MAX_JSON_NESTING = 32  # the corpus import's JSON limit (CORPUS_MAX_NESTING)
MAX_RAW_OUTPUT_CHARS = 20_000  # the raw answer stored beside a candidate or a failed item


class AnswerTooLarge(Exception):
    """An answer past ``MAX_ANSWER_BYTES``. Not transient: asking again gets the same answer."""

    def __init__(self, limit: int, size: int | None = None):
        self.limit = limit
        said = f"{size:,} bytes, " if size is not None else ""
        super().__init__(f"answer too large: {said}more than the {limit:,} bytes allowed")


class NestedTooDeep(ValueError):
    """JSON nested past ``MAX_JSON_NESTING``; the parser (which recurses) is never called on it."""

    def __init__(self, depth: int, limit: int):
        super().__init__(f"JSON nested {depth:,} deep, more than the {limit} allowed")


def nesting_depth(text: str) -> int:
    """How deep JSON brackets nest in ``text``, brackets inside strings not counted: one linear pass."""
    depth = deepest = 0
    in_string = escaped = False
    for character in text:
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif character in "]}":
            depth -= 1
    return deepest


def loads_bounded(text: str | bytes, nesting: int = MAX_JSON_NESTING):
    """``json.loads`` for text an endpoint sent: ``NestedTooDeep`` instead of a ``RecursionError``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if text.count("[") + text.count("{") > nesting:  # fewer brackets cannot nest deeper: no scan (most answers)
        depth = nesting_depth(text)
        if depth > nesting:
            raise NestedTooDeep(depth, nesting)
    return json.loads(text)


async def read_capped(response, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The body of an unread (streamed) HTTP response, chunk by chunk; ``AnswerTooLarge`` as soon as it
    passes ``limit`` (or at once when its Content-Length says it will). The response is closed either way."""
    try:
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise AnswerTooLarge(limit, int(declared))
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(limit)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        await response.aclose()


def clip_raw(text: str | None, limit: int = MAX_RAW_OUTPUT_CHARS) -> str:
    """A raw answer as stored: whole up to ``limit`` characters, else its start and how much was cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit:,} more characters not kept]"
