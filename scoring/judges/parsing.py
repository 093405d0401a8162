"""Reading judge answers: JSON where a metric asks for it (tolerating code fences and prose around it)."""

from __future__ import annotations

import json
import re

from llm_client.answers import MAX_JSON_NESTING, nesting_depth

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str | None):
    """The first JSON array or object in ``text`` (or None)."""
    if text is None:
        return None
    text = text.strip()
    if nesting_depth(text) > MAX_JSON_NESTING:  # unreadable, before the parser recurses into it (#48.2)
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    fenced = _FENCE.search(text)
    if fenced:
        try:
            return json.loads(fenced.group(1))
        except json.JSONDecodeError:
            pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "[{":
            try:
                return decoder.raw_decode(text[i:])[0]
            except json.JSONDecodeError:
                continue
    return None


def json_list(text: str | None) -> list | None:
    """The first JSON array in ``text``, or the one array of the first JSON object (servers that answer in a
    schema want an object at the top); None otherwise."""
    value = extract_json(text)
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else None
    return value if isinstance(value, list) else None


def string_list(text: str | None, n: int | None = None) -> list[str] | None:
    """A JSON array of strings (an object holding one such array is accepted too), or None.

    Every element keeps its place: an empty string stays an empty answer, so answer k always belongs to
    question k. A list holding a non-text element (a number, null, a list) is unreadable (None), and so,
    with ``n``, is a list of any other length: the caller asks again, then records it unreadable; it is never
    padded or cut to fit.
    """
    value = json_list(text)
    if value is None:
        return None
    if any(not isinstance(v, str) for v in value):  # a number or null is not an answer: asked again
        return None
    if n is not None and len(value) != n:
        return None
    return [v.strip() for v in value]


def array_schema(name: str, items: dict, key: str = "items") -> dict:
    """A strict JSON schema for an object holding one array (servers want an object at the top)."""
    return {
        "name": name,
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {key: {"type": "array", "items": items}},
            "required": [key],
            "additionalProperties": False,
        },
    }
