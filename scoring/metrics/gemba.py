"""GEMBA-MQM (Kocmi & Federmann 2023): the judge lists MQM errors by severity for (source, MT); the score
is the authors' weighting (scoring.judges.mqm), -25 … 0, higher is better.

The packaged prompt is three-shot, as the method is (three language pairs with annotated errors; our own
examples); ``--prompt-file gemba-mqm=PATH`` loads any other, the authors' own included.

As the authors' client does, an answer cut off at the token limit is asked again with twice the tokens
(from 500 up to 4000); one still cut off at 4000 scores 0, as theirs gives no answer to parse. An answer
without MQM headers scores what the authors' parser gives it: 0 (no error found), noted
"no MQM headers"; their parser never rejects an answer, so their re-ask on unreadable answers never runs
for MQM. ``reask`` = true (ours, off by default) asks such an answer again at a temperature 0.1 higher (up
to 1.0, at most ``max_reasks`` times) before scoring it so. Extras: the errors with their spans located in
the MT (start, end, found), counts per severity, the raw answer, the number of re-asks.
"""

from __future__ import annotations

from collections.abc import Sequence

from scoring.judges.base import JudgeScorer
from scoring.judges.engine import Call, Ledger
from scoring.judges.mqm import SCHEMA, Parsed, locate, parse_answer
from scoring.registry import BatchResult, MetricError, Segment, register_judge

MAX_TOKENS_LIMIT = 4000
TEMPERATURE_LIMIT = 1.0


class GembaMQMScorer(JudgeScorer):
    name = "gemba-mqm"
    prompts = ("gemba-mqm",)
    default_max_tokens = 500
    options = {"reask": False, "max_reasks": 10}

    def __init__(self, **kw):
        super().__init__(**kw)
        flag = self.opts["reask"]
        if not isinstance(flag, bool):
            if str(flag).lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise MetricError(f"gemba-mqm: reask={flag!r}: true or false")
            self.opts["reask"] = str(flag).lower() in ("true", "1", "yes")

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        ledger = Ledger(len(segments))
        final, reasks, used = self._ask(segments, ledger)
        scores, errors, counts, raw, notes = [], [], {"n_critical": [], "n_major": [], "n_minor": []}, [], []
        for i, (answer, parsed) in enumerate(final):
            raw.append(answer.text)
            if parsed is None:  # a transport failure: no answer
                scores.append(None)
                errors.append([])
                for k in counts:
                    counts[k].append(None)
                notes.append("")
                continue
            if answer.truncated:
                # cut off even at the token limit: the authors' client returns no answer, scored 0
                parsed = Parsed(errors=[], parsable=False)
                notes.append("truncated at the token limit (scored 0)")
            elif not parsed.parsable:
                notes.append("no MQM headers (scored as the authors' parser does)")
            else:
                notes.append("")
            scores.append(parsed.score)
            errors.append(_located(parsed, segments[i].mt))
            c = parsed.counts()
            for s in ("critical", "major", "minor"):
                counts[f"n_{s}"].append(c[s])
        extras = {"errors": errors, **counts, "raw_answer": raw, "reasks": reasks, "decoding": used, "note": notes}
        return self.result(scores, ledger, extras)

    def _ask(self, segments: Sequence[Segment], ledger: Ledger) -> tuple[list, list, list]:
        """(answer, parsed) per segment (parsed None: no answer), its re-asks, and the decoding of the answer it
        comes from: a truncated answer is asked again with twice the tokens, an unreadable one (``reask``) a
        little warmer, in rounds, until each has its last answer."""
        n = len(segments)
        template = self.prompt_set["gemba-mqm"]
        final: list = [None] * n
        reasks = [0] * n
        used: list = [None] * n  # the decoding of the answer each score comes from (re-asks change it)
        pending = {i: self.decoding for i in range(n)}
        round_no = 0
        while pending:
            order = list(pending)
            calls = []
            for i in order:
                seg = segments[i]
                src_lang, tgt_lang = self.languages(seg)
                d = pending[i]
                calls.append(
                    Call(
                        template,
                        template.messages(
                            d.structured, source_lang=src_lang, target_lang=tgt_lang, source=seg.src, translation=seg.mt
                        ),
                        d,
                        SCHEMA,
                        owners=(i,),
                    )
                )
            answers = self.judge.run(calls, stage="mqm" if round_no == 0 else "mqm-reask")
            ledger.add(calls, answers)
            pending = {}
            for i, call, answer in zip(order, calls, answers):
                d = call.decoding
                used[i] = d.as_dict()
                if not answer.ok:
                    final[i] = (answer, None)
                    continue
                if answer.truncated and d.max_tokens * 2 <= MAX_TOKENS_LIMIT:
                    pending[i] = d.replace(max_tokens=d.max_tokens * 2)
                    reasks[i] += 1
                    continue
                parsed = parse_answer(answer.text, structured=answer.structured)
                if not parsed.parsable and self._may_reask(d, reasks[i]):
                    pending[i] = d.replace(temperature=round(d.temperature + 0.1, 2))
                    reasks[i] += 1
                    continue
                final[i] = (answer, parsed)
            round_no += 1
        return final, reasks, used

    def _may_reask(self, decoding, reasks: int) -> bool:
        """An unreadable answer is asked again, a little warmer, while re-asks and temperature allow."""
        return (
            bool(self.opts["reask"])
            and reasks < int(self.opts["max_reasks"])
            and round(decoding.temperature + 0.1, 2) <= TEMPERATURE_LIMIT
        )


def _located(parsed: Parsed, mt: str) -> list[dict]:
    """The answer's errors, each with where its span is in the translation."""
    located = []
    for e in parsed.errors:
        start, end, found = locate(e.span, mt)
        located.append(
            {"severity": e.severity, "category": e.category, "span": e.span, "start": start, "end": end, "found": found}
        )
    return located


register_judge(
    GembaMQMScorer,
    score_range=(-25.0, 0.0),
    description="GEMBA-MQM: an LLM judge marks MQM errors (critical/major/minor); authors' weighting, -25..0",
)
