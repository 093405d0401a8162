"""DCR, divide-conquer reasoning (Cui et al. 2024), against the reference.

DCE: the judge splits the MT into sentences and says for each, with a reason, whether it agrees with the
whole reference. AMC: a second call turns the reasons into marks z_i = +1 / -1, and the score is
((sum z + alpha) / (k + beta) + 1) / 2, in [0, 1] (alpha = beta = 0 by default).

The score is the authors' ``auto_metric_converter`` (``(sum z / k + 1) / 2``; checked against it in
``test_judge_references.py``); alpha and beta are the paper's Eq. 3 terms, 0 by default, which is theirs.

Two DCE instructions, both named in the signature (``variant``):
- ``paper``: the paper's criterion, where information the candidate leaves out is acceptable. For
  translation this is blind to Omission: an MT that drops words but adds nothing scores 1.
- ``mt`` (default, ours, not the authors'): omissions and additions count as inconsistencies; reference
  content that no MT sentence conveys becomes one more inconsistent entry. The default for MT because
  XQ-MEval's Omission errors must cost something; ``variant=paper`` is the authors' reading.

RAI (the improved translation from the reasons) is its own command: ``python -m scoring rai``. As the
paper's Algorithm 1 and the authors' example do, it rewrites the candidates whose AMC score is below 1
(``rai_select`` = ``dce``: those with a sentence DCE flags inconsistent, our earlier rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.judges.base import JudgeScorer
from scoring.judges.engine import Call, Ledger
from scoring.judges.parsing import array_schema, extract_json, json_list
from scoring.registry import BatchResult, MetricError, Segment, register_judge

VARIANTS = {"paper": "dcr-dce-paper", "mt": "dcr-dce-mt"}
DCE_SCHEMA = array_schema(
    "dce",
    {
        "type": "object",
        "properties": {"sentence": {"type": "string"}, "reason": {"type": "string"}, "consistent": {"type": "boolean"}},
        "required": ["sentence", "reason", "consistent"],
        "additionalProperties": False,
    },
)
# under "answer", the key the authors' reader takes from their prompt's {"reason": …, "answer": […]}
AMC_SCHEMA = array_schema("amc", {"type": "integer", "enum": [-1, 1]}, key="answer")


def amc_score(marks: list[int], alpha: float = 0.0, beta: float = 0.0) -> float:
    """Eq. 3 of the paper: Z = (sum z + alpha) / (k + beta), rescaled to (Z + 1) / 2."""
    k = len(marks)
    if k + beta == 0:
        raise ValueError("AMC needs at least one mark (k + beta must not be 0)")
    z = (sum(marks) + alpha) / (k + beta)
    return (z + 1) / 2


def read_dce(text: str | None) -> list[dict] | None:
    out = []
    for item in json_list(text) or ():
        if isinstance(item, dict) and "reason" in item:
            out.append(
                {
                    "sentence": str(item.get("sentence", "")),
                    "reason": str(item["reason"]),
                    "consistent": item.get("consistent"),
                }
            )
    return out or None


AMC_READINGS = ("authors", "strict")


def read_marks(text: str | None, k: int, reading: str = "authors") -> list[int | float] | None:
    """The AMC answer's marks. ``authors`` (default), as their ``auto_metric_converter``: "+1" read as 1, the
    object's ``answer`` list (beside their prompt's ``reason``), its values as given, whatever its length (a
    list of non-numbers or an empty one is their error score: None here). A bare array, the form this
    project's prompt asks for, is read as that list. ``strict`` (our earlier reading): one mark per reason
    (``k``), any single list of an object, each value's sign mapped to +1 / -1 (0 to -1)."""
    if reading == "authors":
        return _authors_marks(text)
    value = json_list(text)
    if value is None:
        return None
    marks = []
    for v in value:
        try:
            marks.append(1 if float(v) > 0 else -1)
        except (TypeError, ValueError):
            return None
    return marks if len(marks) == k else None


def _authors_marks(text: str | None) -> list[int | float] | None:
    value = extract_json(None if text is None else text.replace("+1", "1"))
    if isinstance(value, dict):
        value = value.get("answer")
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(v, (int, float)) for v in value):  # a bool is a number to their sum(), as here
        return None
    return [int(v) if isinstance(v, bool) else v for v in value]


def numbered(entries: list[dict]) -> str:
    return "\n".join(f"{n}. {e['reason']}" for n, e in enumerate(entries, 1))


class DCRScorer(JudgeScorer):
    name = "dcr"
    prompts = ("dcr-dce-paper", "dcr-dce-mt", "dcr-amc")
    default_max_tokens = 1024
    options = {"variant": "mt", "alpha": 0.0, "beta": 0.0, "amc_reading": "authors"}

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.opts["variant"] not in VARIANTS:
            raise MetricError(f"dcr: variant {self.opts['variant']!r} unknown; choose from {', '.join(VARIANTS)}")
        if self.opts["amc_reading"] not in AMC_READINGS:
            raise MetricError(
                f"dcr: amc_reading {self.opts['amc_reading']!r} unknown; choose from {', '.join(AMC_READINGS)}"
            )

    def marks(self, text: str | None, k: int) -> list[int | float] | None:
        return read_marks(text, k, self.opts["amc_reading"])

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        sig = super().signature(target_lang)
        used = (VARIANTS[self.opts["variant"]], "dcr-amc")
        sig["prompts"] = {k: v for k, v in sig["prompts"].items() if k in used}
        sig["variant"] = self.opts["variant"]
        return sig

    def dce(self, segments: Sequence[Segment], ledger: Ledger) -> list[list[dict] | None]:
        t = self.prompt_set[VARIANTS[self.opts["variant"]]]
        d = self.decoding
        calls = [
            Call(
                t,
                t.messages(d.structured, language=self.languages(s)[1], reference=s.ref, candidate=s.mt),
                d,
                DCE_SCHEMA,
                owners=(i,),
            )
            for i, s in enumerate(segments)
        ]
        _, parsed = self.ask(calls, lambda i, text: read_dce(text), "dce", ledger)
        return parsed

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        n = len(segments)
        ledger = Ledger(n)
        entries = self.dce(segments, ledger)
        t = self.prompt_set["dcr-amc"]
        d = self.decoding
        idx = [i for i in range(n) if entries[i]]
        calls = [
            Call(t, t.messages(d.structured, reasons=numbered(entries[i])), d, AMC_SCHEMA, owners=(i,)) for i in idx
        ]
        _, parsed = self.ask(calls, lambda j, text: self.marks(text, len(entries[idx[j]])), "amc", ledger)
        marks: dict[int, list[int] | None] = dict(zip(idx, parsed))
        scores, extras = [], {"dce": [], "marks": [], "k": [], "n_inconsistent": [], "note": []}
        for i in range(n):
            m = marks.get(i)
            note = ""
            if entries[i] is None:
                note = "" if ledger.errors[i] else "DCE answer unreadable"
            elif m is None:
                note = "" if ledger.errors[i] else "AMC marks unreadable"
            scores.append(amc_score(m, float(self.opts["alpha"]), float(self.opts["beta"])) if m else None)
            extras["dce"].append(entries[i] or [])
            extras["marks"].append(m or [])
            extras["k"].append(len(m) if m else 0)
            extras["n_inconsistent"].append(sum(1 for x in m if x < 0) if m else 0)
            extras["note"].append(note)
        return self.result(scores, ledger, extras)


RAI_SELECT = ("amc", "dce")


class RAI(DCRScorer):
    """Reason-assisted improver: DCE (shared with the metric through the cache), then a rewrite of the
    candidates that need one: AMC score below 1 (the paper's Algorithm 1, the authors' example), or with
    ``rai_select`` = dce, a sentence DCE flags inconsistent."""

    prompts = ("dcr-dce-paper", "dcr-dce-mt", "dcr-amc", "dcr-rai")
    options = {**DCRScorer.options, "rai_select": "amc"}

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.opts["rai_select"] not in RAI_SELECT:
            raise MetricError(
                f"rai: rai_select {self.opts['rai_select']!r} unknown; choose from {', '.join(RAI_SELECT)}"
            )

    def needs_rewrite(
        self, segments: Sequence[Segment], entries: list[list[dict] | None], ledger: Ledger
    ) -> list[bool]:
        if self.opts["rai_select"] == "dce":
            return [bool(e) and not all(x.get("consistent") is True for x in e) for e in entries]
        t = self.prompt_set["dcr-amc"]
        d = self.decoding
        idx = [i for i in range(len(segments)) if entries[i]]
        calls = [
            Call(t, t.messages(d.structured, reasons=numbered(entries[i])), d, AMC_SCHEMA, owners=(i,)) for i in idx
        ]
        _, parsed = self.ask(calls, lambda j, text: self.marks(text, len(entries[idx[j]])), "amc", ledger)
        below = [False] * len(segments)
        for i, m in zip(idx, parsed):
            below[i] = bool(m) and amc_score(m, float(self.opts["alpha"]), float(self.opts["beta"])) < 1
        return below

    def improve(self, segments: Sequence[Segment]) -> tuple[list[str | None], list[list[dict] | None], Ledger]:
        ledger = Ledger(len(segments))
        entries = self.dce(segments, ledger)
        t = self.prompt_set["dcr-rai"]
        d = self.decoding.replace(structured=False)
        rewrite = self.needs_rewrite(segments, entries, ledger)
        idx = [i for i, e in enumerate(entries) if e and rewrite[i]]
        calls = [
            Call(
                t,
                t.messages(
                    False,
                    language=self.languages(segments[i])[1],
                    reference=segments[i].ref,
                    candidate=segments[i].mt,
                    reasons=numbered(entries[i]),
                ),
                d,
                None,
                owners=(i,),
            )
            for i in idx
        ]
        answers = self.judge.run(calls, stage="rai")
        ledger.add(calls, answers)
        improved: list[str | None] = [None] * len(segments)
        for i, e in enumerate(entries):
            if e and not rewrite[i]:
                improved[i] = segments[i].mt  # nothing to improve (unless its AMC marks stayed unreadable)
        for i, a in zip(idx, answers):
            if improved[i] is None and a.ok:
                improved[i] = a.text.strip()
        return improved, entries, ledger


register_judge(
    DCRScorer,
    needs_source=False,
    needs_reference=True,
    score_range=(0.0, 1.0),
    description="DCR: DCE sentence-level reasons vs the reference, AMC marks -> ((sum z+a)/(k+b)+1)/2; variant=mt|paper",
)
