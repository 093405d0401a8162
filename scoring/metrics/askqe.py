"""AskQE (Ki & Carpuat 2025): question generation and answering QE with an accept/reject decision.

Per source sentence (once, shared by all its triplets): atomic facts (optionally kept only where a local
NLI model says the source entails them), questions from the source guided by the facts, answers on the
source. Per triplet: the MT back-translated into the source language (by the judge, or a release column
the user names with ``bt_column``), answers on the back-translation, similarity per question (token F1 by
default; ``similarity`` = em, chrf, bleu or sbert), segment score = mean over questions (0 … 1, higher is
better).

Decision (``finalize``): a two-component Gaussian mixture per direction on the segment scores
(scikit-learn, ``random_state`` 42 as in the authors' code); ``p_reject`` is the posterior of the
lower-mean component (as theirs), ``decision`` is reject when it reaches ``reject_threshold`` (0.5).
Segments without a score are left out of the fit (the authors' script counts them as 0). Answers
are read one per question, in place: a list of another length is unreadable, asked again and then
recorded as "answers unreadable" (score None), as the authors' script skips such rows. The fit is stored with the scores (parquet metadata and
summary.json).
"""
from __future__ import annotations

import json
import statistics
from typing import Any, Sequence

from scoring.judges.base import JudgeScorer
from scoring.judges.engine import Call, Ledger
from scoring.judges.parsing import array_schema, string_list
from scoring.judges.similarity import SIMILARITIES
from scoring.registry import BatchResult, Family, MetricError, MetricSpec, Segment, register

STRINGS = {"type": "string"}


def items(text: str | None) -> list[str] | None:
    """Facts or questions: a list of texts; blank entries are no fact or question and are left out."""
    values = string_list(text)
    return None if values is None else [v for v in values if v]


def gmm_decision(scores: list, seed: int = 0, threshold: float = 0.5) -> tuple[list, list, dict]:
    """(decision, p_reject, fit) for one direction's scores (None scores get None)."""
    values = [float(s) for s in scores if s is not None]
    fit: dict[str, Any] = {"method": "GaussianMixture", "n_components": 2, "random_state": seed, "threshold": threshold, "n": len(values)}
    if len(set(values)) < 2:
        fit["fitted"] = False
        fit["reason"] = "fewer than two distinct scores"
        return [None] * len(scores), [None] * len(scores), fit
    import numpy as np
    from sklearn.mixture import GaussianMixture

    x = np.asarray(values).reshape(-1, 1)
    gmm = GaussianMixture(n_components=2, random_state=seed).fit(x)
    means = gmm.means_.ravel()
    reject = int(np.argmin(means))
    proba = gmm.predict_proba(x)[:, reject]
    fit.update(
        fitted=True, converged=bool(gmm.converged_), reject_component=reject, means=[float(m) for m in means],
        variances=[float(v) for v in gmm.covariances_.ravel()], weights=[float(w) for w in gmm.weights_],
        n_reject=int((proba >= threshold).sum()),
    )
    it = iter(proba.tolist())
    p_reject, decision = [], []
    for s in scores:
        if s is None:
            p_reject.append(None)
            decision.append(None)
        else:
            p = float(next(it))
            p_reject.append(round(p, 6))
            decision.append("reject" if p >= threshold else "accept")
    return decision, p_reject, fit


class NliFilter:
    """Keeps the facts that a local NLI model (e.g. potsawee/deberta-v3-large-mnli copied locally) says
    the source entails. Loaded on first use."""

    def __init__(self, model: str):
        self.model_path = model
        self._pipe = None

    def keep(self, premise: str, facts: list[str]) -> list[str]:
        if not facts:
            return facts
        if self._pipe is None:
            from transformers import pipeline

            self._pipe = pipeline("text-classification", model=self.model_path, device=-1)
        out = self._pipe([{"text": premise, "text_pair": f} for f in facts])
        return [f for f, r in zip(facts, out) if "contradict" not in str(r["label"]).lower() and "not" not in str(r["label"]).lower()]


class AskQEScorer(JudgeScorer):
    name = "askqe"
    prompts = ("askqe-facts", "askqe-questions", "askqe-answers", "askqe-backtranslate")
    default_max_tokens = 512
    options = {"similarity": "f1", "bt_column": None, "nli_model": None, "gmm_seed": 42, "reject_threshold": 0.5}

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.opts["similarity"] not in SIMILARITIES:
            raise MetricError(f"askqe: similarity {self.opts['similarity']!r} unknown; choose from {', '.join(SIMILARITIES)}")
        self.nli = NliFilter(self.opts["nli_model"]) if self.opts["nli_model"] else None

    def wanted_columns(self) -> list[str]:
        return [self.opts["bt_column"]] if self.opts["bt_column"] else []

    def _call(self, name: str, owners, **fields) -> Call:
        t = self.prompt_set[name]
        d = self.decoding
        schema = array_schema(name.replace("-", "_"), STRINGS) if name != "askqe-backtranslate" else None
        return Call(t, t.messages(d.structured and schema is not None, **fields), d if schema else d.replace(structured=False), schema, owners=tuple(owners))

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        n = len(segments)
        ledger = Ledger(n)
        by_source: dict[str, list[int]] = {}
        for i, s in enumerate(segments):
            by_source.setdefault(s.src, []).append(i)
        sources = list(by_source)
        src_lang, _ = self.languages(segments[0]) if segments else ("", "")

        # stage 1: facts per source, and back-translations per triplet (independent: one batch)
        calls = [self._call("askqe-facts", by_source[src], source_lang=src_lang, source=src) for src in sources]
        bt: list[str | None] = [None] * n
        bt_index = []
        column = self.opts["bt_column"]
        for i, s in enumerate(segments):
            if column:
                value = (s.extra or {}).get(column)
                if not isinstance(value, str):
                    raise MetricError(f"askqe: release column {column!r} has no text for a triplet (row {i} of the chunk)")
                bt[i] = value
            else:
                sl, tl = self.languages(s)
                calls.append(self._call("askqe-backtranslate", [i], source_lang=sl, target_lang=tl, translation=s.mt))
                bt_index.append(i)
        n_src = len(sources)
        _, parsed = self.ask(calls, lambda j, text: items(text) if j < n_src else (text.strip() or None), "facts+backtranslation", ledger)
        facts = dict(zip(sources, parsed[:n_src]))
        for i, text in zip(bt_index, parsed[n_src:]):
            bt[i] = text
        if self.nli:
            facts = {src: (self.nli.keep(src, f) if f else f) for src, f in facts.items()}

        # stage 2: questions per source
        q_sources = [src for src in sources if facts[src]]
        calls = [self._call("askqe-questions", by_source[src], source_lang=src_lang, source=src, facts=json.dumps(facts[src], ensure_ascii=False)) for src in q_sources]
        _, parsed = self.ask(calls, lambda j, text: items(text), "questions", ledger)
        questions = dict(zip(q_sources, parsed))

        # stage 3: answers on the source (per source) and on the back-translation (per triplet)
        calls, slots = [], []

        def slot_source(j: int) -> str:
            kind, key = slots[j]
            return key if kind == "src" else segments[key].src

        for src in sources:
            if questions.get(src):
                calls.append(self._call("askqe-answers", by_source[src], source_lang=src_lang, context=src, questions=json.dumps(questions[src], ensure_ascii=False)))
                slots.append(("src", src))
        for i, s in enumerate(segments):
            if questions.get(s.src) and bt[i] is not None:
                calls.append(self._call("askqe-answers", [i], source_lang=src_lang, context=bt[i], questions=json.dumps(questions[s.src], ensure_ascii=False)))
                slots.append(("bt", i))
        # one answer per question, in place: a list of another length is unreadable (asked again, then
        # recorded so), never padded
        _, answers_parsed = self.ask(calls, lambda j, text: string_list(text, len(questions[slot_source(j)])), "answers", ledger)
        src_answers: dict[str, list[str]] = {}
        bt_answers: dict[int, list[str] | None] = {}
        for (kind, key), parsed in zip(slots, answers_parsed):
            if kind == "src":
                src_answers[key] = parsed
            else:
                bt_answers[key] = parsed

        sim = SIMILARITIES[self.opts["similarity"]]
        scores, extras = [], {"facts": [], "questions": [], "answers_src": [], "answers_bt": [], "similarities": [], "backtranslation": [], "note": []}
        for i, s in enumerate(segments):
            qs = questions.get(s.src) or []
            a_src = src_answers.get(s.src)
            a_bt = bt_answers.get(i)
            note = ""
            sims: list[float] = []
            if facts.get(s.src) == []:
                note = "no facts extracted"
            elif facts.get(s.src) is None:
                note = "" if ledger.errors[i] else "facts unreadable"
            elif bt[i] is None:
                note = "" if ledger.errors[i] else "back-translation empty"
            elif not qs:
                note = "no questions generated" if questions.get(s.src) == [] else ("" if ledger.errors[i] else "questions unreadable")
            elif a_src is None or a_bt is None:
                note = "answers unreadable" if not ledger.errors[i] else ""
            else:
                pairs = list(zip(a_bt, a_src))
                sims = sim.batch(pairs) if hasattr(sim, "batch") else [sim(p, g) for p, g in pairs]
            scores.append(statistics.fmean(sims) if sims else None)
            extras["facts"].append(facts.get(s.src) or [])
            extras["questions"].append(qs)
            extras["answers_src"].append(a_src or [])
            extras["answers_bt"].append(a_bt or [])
            extras["similarities"].append([round(x, 6) for x in sims])
            extras["backtranslation"].append(bt[i])
            extras["note"].append(note)
        return self.result(scores, ledger, extras)

    def finalize(self, direction: str, columns: dict[str, list], data=None) -> dict[str, Any]:
        decision, p_reject, fit = gmm_decision(columns["score"], seed=int(self.opts["gmm_seed"]), threshold=float(self.opts["reject_threshold"]))
        columns["decision"] = decision
        columns["p_reject"] = p_reject
        return {"gmm": fit}


register(
    MetricSpec(
        name="askqe",
        family=Family.LLM,
        needs_source=True,
        needs_reference=False,
        higher_is_better=True,
        score_range=(0.0, 1.0),
        default_model=None,
        device="judge",
        build=lambda **kw: AskQEScorer(**kw),
        takes=tuple(AskQEScorer.options),
        description="AskQE: questions from the source answered on source and back-translated MT (F1); GMM accept/reject per direction",
    )
)
