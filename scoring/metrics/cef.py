"""CEF, the cross-examination framework (reference-free mode): the source D and the MT T are two knowledge
bases. Closed questions are generated from each (Q_D once per source, Q_T per triplet); each question is
answered YES / NO / IDK on the other text (the prediction) and on its own text (the gold answer). As the
authors' ``calculate_scores`` (``QAG.py``) does, a question whose gold answer is not YES or NO is dropped,
and then, in percent of the kept questions:

- Coverage    = 100 - %(Q_D on T predicted IDK)                      (content of the source kept)
- Conformity  = 100 - %(Q_D on T predicted neither IDK nor the gold)  (no contradiction of the source)
- Consistency = 100 - %(Q_T on D predicted other than the gold)       (no hallucinated content)

A side with no kept question scores 0 on its dimensions, as the authors' code leaves it (``formula`` =
``paper-text``: the paper's §3 text, 100 - %IDK, 100 - %NO, 100 - %IDK, None without questions). score =
mean of the three (each an extra). Each question is its own call, as the authors ask (``batch_answers``
= true: one call per text with all its questions, our cheaper variant).

Judge reliability (``judges`` = m1,m2,…): every judge writes questions from each source of the direction;
every other judge answers them on the source, and the author's own answer is taken as YES (the
questions are written to be answered YES), as in the authors' ``robestness_scores.py``. ADR and ADS per
judge, as fractions, beside the scores (``cef.reliability.parquet`` and summary.json).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from scoring.judges.base import JudgeScorer
from scoring.judges.engine import Call, Judge, Ledger
from scoring.judges.parsing import array_schema, extract_json, string_list
from scoring.registry import BatchResult, MetricError, Segment, register_judge

LABELS = ("YES", "NO", "IDK")
QUESTIONS_SCHEMA = array_schema("questions", {"type": "string"})
ANSWERS_SCHEMA = array_schema("answers", {"type": "string", "enum": list(LABELS)})
ANSWER_SCHEMA = {
    "name": "answer",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LABELS)}},
        "required": ["answer"],
        "additionalProperties": False,
    },
}
FORMULAS = ("authors", "paper-text")


def normalize_label(value: str) -> str:
    v = str(value).strip().upper().strip(".")
    if v.startswith("YES"):
        return "YES"
    if v.startswith("NO"):
        return "NO"
    return "IDK"


def questions_of(text: str | None) -> list[str] | None:
    """Generated questions: blank entries are no question and are left out."""
    values = string_list(text)
    return None if values is None else [v for v in values if v]


def labels(text: str | None, n: int) -> list[str] | None:
    """One label per question, in place; a list of another length is unreadable (None), never padded."""
    values = string_list(text, n)
    return None if values is None else [normalize_label(v) for v in values]


def label(text: str | None) -> str | None:
    """The answer to one question: YES, NO or IDK as the first word (or a JSON {"answer": …}); else None
    (asked again). Not the authors' substring test, under which "I don't know" reads as NO."""
    if text is None:
        return None
    value = extract_json(text)
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        text = value["answer"]
    words = text.strip().strip("\"'`*").split()
    first = words[0].strip(".,:;!\"'`*").upper() if words else ""
    return first if first in LABELS else None


def dimensions(
    qd_on_t: list[str], qd_on_d: list[str], qt_on_d: list[str], qt_on_t: list[str], formula: str = "authors"
) -> dict[str, float | None]:
    """Coverage, Conformity, Consistency (percent) from the predicted (on the other text) and gold (on the
    question's own text) answers, after dropping questions whose gold answer is not YES or NO."""
    kept_d = [(p, g) for p, g in zip(qd_on_t, qd_on_d) if g in ("YES", "NO")]
    kept_t = [(p, g) for p, g in zip(qt_on_d, qt_on_t) if g in ("YES", "NO")]
    if formula == "authors":

        def pct(pairs, bad):  # the share of questions answered well; 0 with no question, as the authors leave it
            return 100.0 * (len(pairs) - sum(1 for p, g in pairs if bad(p, g))) / len(pairs) if pairs else 0.0

        coverage = pct(kept_d, lambda p, g: p == "IDK")
        conformity = pct(kept_d, lambda p, g: p != "IDK" and p != g)
        consistency = pct(kept_t, lambda p, g: p != g)
    else:
        pct = lambda pairs, bad: 100.0 - 100.0 * sum(1 for p, _ in pairs if p == bad) / len(pairs) if pairs else None  # noqa: E731
        coverage, conformity, consistency = pct(kept_d, "IDK"), pct(kept_d, "NO"), pct(kept_t, "IDK")
    return {
        "coverage": coverage,
        "conformity": conformity,
        "consistency": consistency,
        "n_questions_source": len(kept_d),
        "n_questions_mt": len(kept_t),
        "dropped": (len(qd_on_d) - len(kept_d)) + (len(qt_on_t) - len(kept_t)),
    }


def reliability(
    questions: list[tuple[str, int, str]], answers: dict[str, dict[int, str | None]], min_agreement: int | None = None
) -> dict[str, dict[str, float | None]]:
    """ADR and ADS per judge, as the authors' ``robestness_scores.py`` computes them.

    ``questions``: (author, group, text) in the judges' order, a group being one source text; ``answers[m][j]``:
    judge m's answer to question j (None: unreadable), for every judge but its author, whose answer is YES.
    ADR(i) = mean over i's questions of the share of the other judges' answers that are not YES (an
    unreadable answer is not YES). ADS(i): over the distinct questions of each group (the first
    author of a repeated text keeps it), the share where i's answer is not among the most frequent
    answers, counting only questions where that answer has at least ``min_agreement`` votes (the authors'
    4 of their 5 judges; default: all judges but one).
    """
    judges = list(answers)
    k = len(judges)
    need = k - 1 if min_agreement is None else int(min_agreement)

    def answer(m: str, j: int) -> str | None:
        return "YES" if questions[j][0] == m else answers[m].get(j)

    adr_rates: dict[str, list[float]] = {m: [] for m in judges}
    for j, (author, _, _) in enumerate(questions):
        given = [answers[m].get(j) for m in judges if m != author]
        if len(given) < 2:
            continue
        adr_rates[author].append(sum(1 for a in given if a != "YES") / len(given))
    distinct: dict[tuple[int, str], int] = {}
    for j, (_, group, text) in enumerate(questions):
        distinct.setdefault((group, text), j)
    deviations: dict[str, list[int]] = {m: [] for m in judges}
    for j in distinct.values():
        votes = {m: answer(m, j) for m in judges}
        counts = Counter(votes.values())
        top = max(counts.values())
        if top < need:
            continue
        majority = {a for a, c in counts.items() if c == top}
        for m in judges:
            deviations[m].append(0 if votes[m] in majority else 1)
    return {
        m: {
            "adr": statistics.fmean(adr_rates[m]) if adr_rates[m] else None,
            "ads": statistics.fmean(deviations[m]) if deviations[m] else None,
            "n_questions": sum(1 for q in questions if q[0] == m),
        }
        for m in judges
    }


DIMENSION_COLUMNS = ("coverage", "conformity", "consistency", "n_questions_source", "n_questions_mt", "dropped")
ANSWER_SIDES = ("source_q_on_mt", "source_q_on_source", "mt_q_on_source", "mt_q_on_mt")  # the order of the parts


class CEFScorer(JudgeScorer):
    name = "cef"
    prompts = ("cef-questions", "cef-answers", "cef-answer")
    default_max_tokens = 768
    options = {
        "n_questions": 10,
        "judges": None,
        "batch_answers": False,
        "formula": "authors",
        "ads_min_agreement": None,
    }

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.opts["formula"] not in FORMULAS:
            raise MetricError(f"cef: formula {self.opts['formula']!r} unknown; choose from {', '.join(FORMULAS)}")
        if isinstance(self.opts["batch_answers"], str):
            if self.opts["batch_answers"].lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise MetricError(f"cef: batch_answers={self.opts['batch_answers']!r}: true or false")
            self.opts["batch_answers"] = self.opts["batch_answers"].lower() in ("true", "1", "yes")

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        sig = super().signature(target_lang)
        used = ("cef-questions", "cef-answers" if self.opts["batch_answers"] else "cef-answer")
        sig["prompts"] = {k: v for k, v in sig["prompts"].items() if k in used}
        return sig

    def _qcall(self, text: str, language: str, owners) -> Call:
        t = self.prompt_set["cef-questions"]
        d = self.decoding
        return Call(
            t,
            t.messages(d.structured, n=int(self.opts["n_questions"]), language=language, text=text),
            d,
            QUESTIONS_SCHEMA,
            owners=tuple(owners),
        )

    def _acalls(self, text: str, language: str, questions: list[str], owners) -> list[Call]:
        """The calls that answer ``questions`` on ``text``: one per question, or one for all (batch_answers)."""
        d = self.decoding
        if self.opts["batch_answers"]:
            t = self.prompt_set["cef-answers"]
            return [
                Call(
                    t,
                    t.messages(
                        d.structured, language=language, text=text, questions=json.dumps(questions, ensure_ascii=False)
                    ),
                    d,
                    ANSWERS_SCHEMA,
                    owners=tuple(owners),
                )
            ]
        t = self.prompt_set["cef-answer"]
        return [
            Call(
                t,
                t.messages(d.structured, language=language, text=text, question=q),
                d,
                ANSWER_SCHEMA,
                owners=tuple(owners),
            )
            for q in questions
        ]

    def _answer(
        self,
        jobs: list[tuple[str, str, list[str], tuple]],
        stage: str,
        ledger: Ledger | None,
        judge: Judge | None = None,
    ) -> list[list[str] | None]:
        """Answers for each job (text, language, questions, owners): a label per question in place, or None
        when any of them stayed unreadable after re-asking."""
        calls, spans = [], []
        for text, language, qs, owners in jobs:
            made = self._acalls(text, language, qs, owners)
            spans.append((len(calls), len(made), len(qs)))
            calls += made
        sizes = {start: nq for start, _, nq in spans}  # a batched call's question count, by its index
        if judge is not None and judge is not self.judge:
            answers = judge.run(calls, stage=stage)
            parsed = [self._read(sizes, j, a.text) if a.ok else None for j, a in enumerate(answers)]
        else:
            _, parsed = self.ask(calls, lambda j, text: self._read(sizes, j, text), stage, ledger)
        out = []
        for start, count, _nq in spans:
            got = parsed[start : start + count]
            if any(g is None for g in got):
                out.append(None)
            else:
                out.append(got[0] if self.opts["batch_answers"] else list(got))
        return out

    def _read(self, sizes: dict[int, int], j: int, text: str):
        return labels(text, sizes[j]) if self.opts["batch_answers"] else label(text)

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        ledger = Ledger(len(segments))
        by_source: dict[str, list[int]] = {}
        for i, s in enumerate(segments):
            by_source.setdefault(s.src, []).append(i)
        langs = [self.languages(s) for s in segments]
        src_lang = langs[0][0] if segments else ""
        q_d, q_t = self._questions(segments, by_source, langs, src_lang, ledger)
        got = self._cross_examination(segments, by_source, langs, src_lang, q_d, q_t, ledger)
        scores = []
        extras: dict[str, list] = {k: [] for k in (*DIMENSION_COLUMNS, "questions_source", "questions_mt", "answers")}
        extras["note"] = []
        for i, s in enumerate(segments):
            # a side without questions has no answers to read: its lists are empty (the authors' [] for None)
            parts = [
                got.get(("qd_t", i), [] if q_d[s.src] == [] else None),
                got.get(("qd_d", s.src), [] if q_d[s.src] == [] else None),
                got.get(("qt_d", i), [] if q_t[i] == [] else None),
                got.get(("qt_t", i), [] if q_t[i] == [] else None),
            ]
            dims, note = self._dimensions(parts, q_d[s.src], q_t[i], failed=bool(ledger.errors[i]))
            values = [dims[k] for k in ("coverage", "conformity", "consistency") if dims[k] is not None]
            scores.append(statistics.fmean(values) if values else None)
            for k in DIMENSION_COLUMNS:
                extras[k].append(dims[k])
            extras["questions_source"].append(q_d[s.src] or [])
            extras["questions_mt"].append(q_t[i] or [])
            extras["answers"].append(dict(zip(ANSWER_SIDES, parts)))
            extras["note"].append(note)
        return self.result(scores, ledger, extras)

    def _questions(self, segments, by_source, langs, src_lang, ledger) -> tuple[dict, list]:
        """Questions per source (asked once per distinct source) and per translation, in one batch."""
        sources = list(by_source)
        calls = [self._qcall(src, src_lang, by_source[src]) for src in sources]
        calls += [self._qcall(s.mt, langs[i][1], [i]) for i, s in enumerate(segments)]
        _, parsed = self.ask(calls, lambda j, text: questions_of(text), "questions", ledger)
        return dict(zip(sources, parsed[: len(sources)])), parsed[len(sources) :]

    def _cross_examination(self, segments, by_source, langs, src_lang, q_d, q_t, ledger) -> dict:
        """Each side's questions answered on both texts: (slot, key) -> the answers."""
        jobs, slots = [], []
        for src in by_source:
            if q_d[src]:
                jobs.append((src, src_lang, q_d[src], by_source[src]))
                slots.append(("qd_d", src))
        for i, s in enumerate(segments):
            if q_d[s.src]:
                jobs.append((s.mt, langs[i][1], q_d[s.src], [i]))
                slots.append(("qd_t", i))
            if q_t[i]:
                jobs.append((s.src, src_lang, q_t[i], [i]))
                slots.append(("qt_d", i))
                jobs.append((s.mt, langs[i][1], q_t[i], [i]))
                slots.append(("qt_t", i))
        return dict(zip(slots, self._answer(jobs, "cross-examination", ledger)))

    def _dimensions(self, parts, questions_source, questions_mt, *, failed: bool) -> tuple[dict, str]:
        """A triplet's dimensions and its note: none when a side's questions or answers are unreadable."""
        if questions_source is None or questions_mt is None or any(p is None for p in parts):
            dims = dict.fromkeys(("coverage", "conformity", "consistency")) | dict.fromkeys(DIMENSION_COLUMNS[3:], 0)
            return dims, "" if failed else "questions or answers unreadable"
        dims = dimensions(*parts, formula=self.opts["formula"])
        if not dims["n_questions_source"] and not dims["n_questions_mt"]:
            return dims, "no grounded questions"
        return dims, ""

    # -- judge reliability ----------------------------------------------------------------------------------

    def judge_models(self) -> list[str]:
        value = self.opts["judges"]
        if not value:
            return []
        return [m.strip() for m in (value.split(",") if isinstance(value, str) else value) if m.strip()]

    def finalize(self, direction_code: str, columns: dict[str, list], data=None) -> dict[str, Any]:
        models = self.judge_models()
        if len(models) < 2 or data is None:
            return {}
        from dataclasses import replace

        src_lang = self.languages(
            Segment(src="", mt="", ref="", target_lang=data.target_lang, source_lang=direction_code.split("-")[0])
        )[0]
        sources = list(dict.fromkeys(data.src))
        judges = {m: (self.judge if m == self.config.model else Judge(replace(self.config, model=m))) for m in models}
        questions: list[tuple[str, int, str]] = []
        for m, judge in judges.items():
            calls = [self._qcall(src, src_lang, ()) for src in sources]
            for s_index, a in enumerate(judge.run(calls, stage="reliability-questions")):
                questions += [(m, s_index, q) for q in ((questions_of(a.text) or []) if a.ok else [])]
        answers: dict[str, dict[int, str | None]] = {m: {} for m in models}
        by_group: dict[int, list[int]] = {}
        for j, (_, g, _) in enumerate(questions):
            by_group.setdefault(g, []).append(j)
        for answerer, judge in judges.items():
            # every judge answers the others' questions; its own are YES by construction (not asked)
            jobs, keys = [], []
            for s_index, src in enumerate(sources):
                ids = [j for j in by_group.get(s_index, []) if questions[j][0] != answerer]
                if ids:
                    jobs.append((src, src_lang, [questions[j][2] for j in ids], ()))
                    keys.append(ids)
            for ids, got in zip(keys, self._answer(jobs, "reliability-answers", None, judge=judge)):
                for j, value in zip(ids, got or [None] * len(ids)):
                    answers[answerer][j] = value
        floor = self.opts["ads_min_agreement"]
        result = reliability(questions, answers, None if floor is None else int(floor))
        rows = [
            {
                "direction": direction_code,
                "judge": m,
                "adr": r["adr"],
                "ads": r["ads"],
                "n_questions": r["n_questions"],
                "n_sources": len(sources),
            }
            for m, r in result.items()
        ]
        for m, judge in judges.items():
            if judge is not self.judge:
                self.judge.stats.merge(judge.stats, stage_prefix=f"{m}:")  # their calls and cost count too
                judge.close()
        return {"reliability": rows, "tables": {"reliability": rows}}


register_judge(
    CEFScorer,
    score_range=(0.0, 100.0),
    description="CEF cross-examination: Coverage, Conformity, Consistency (mean); ADR/ADS judge reliability with judges=m1,m2",
)
