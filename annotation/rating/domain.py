"""Rating rules as data: the Likert dimensions with their anchors (OmniScore Appendix D.1, SPEC §4), a
registry keyed by name so a new dimension is one entry, not a branch. Pure Python (no Django), unit-tested
directly."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dimension:
    name: str
    question: str
    anchors: tuple[str, str, str, str, str]  # 1 … 5


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "informativeness",
        "Does the text give relevant, complete, correct and useful information for the context?",
        (
            "Not informative: lacks relevant content, major errors or omissions",
            "Slightly informative: minimal information, many important details missing or inaccurate",
            "Moderately informative: some relevant details, lacks depth, accuracy or completeness",
            "Informative: addresses most key points clearly, correctly and thoroughly",
            "Very informative: accurate, complete, fully addresses the context",
        ),
    ),
    Dimension(
        "clarity",
        "Is the text fluent, well structured, concise and easy to understand?",
        (
            "Very unclear: hard or impossible to understand, major grammatical problems",
            "Somewhat unclear: partly understandable, substantial ambiguity or awkwardness",
            "Neutral: understandable with effort, minor issues",
            "Clear: easy to read, minimal ambiguity, good structure",
            "Very clear: precise, concise, effortless to understand",
        ),
    ),
    Dimension(
        "plausibility",
        "Is the text coherent, logical and sensible in the context?",
        (
            "Not plausible at all: illogical, unrelated or clearly wrong",
            "Weakly plausible: major logical flaws, inaccuracies or inconsistencies",
            "Moderately plausible: partly logical, some questionable content",
            "Plausible: reasonable, sensible, mostly consistent with the context",
            "Highly plausible: fully logical, coherent and consistent",
        ),
    ),
    Dimension(
        "faithfulness",
        "Does the text reflect the source without unsupported, omitted or distorted content?",
        (
            "Not faithful at all: unrelated to or misrepresents the source, adds incorrect content",
            "Weakly faithful: much of the content misleading, incomplete or missing",
            "Moderately faithful: some correct elements, errors or omissions",
            "Faithful: main points and intent preserved, no major errors or omissions",
            "Highly faithful: meaning fully preserved, nothing added, omitted or distorted",
        ),
    ),
)
DIMENSION_NAMES = tuple(d.name for d in DIMENSIONS)


def missing_dimensions(scores: dict) -> list[str]:
    """Dimensions without a valid 1–5 score, in display order (the rating screen names them)."""
    missing = []
    for name in DIMENSION_NAMES:
        value = scores.get(name)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 5:
            missing.append(name)
    return missing
