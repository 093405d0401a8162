"""AskQE (Ki & Carpuat 2025): question generation and answering QE with an accept/reject decision.

Per source sentence (once, shared by all its triplets): atomic facts, kept unless a local NLI classifier
says the source (premise) contradicts them (the paper's chosen configuration: ``nli_model`` =
potsawee/deberta-v3-large-mnli by default, a local directory, or ``none``), questions from the source
guided by the facts (from the sentence alone, the authors' vanilla prompt, when no fact is left),
answers on the source. Per triplet: the MT back-translated into the source language (by the judge, or a
release column the user names with ``bt_column``), answers on the back-translation, similarity per
question (token F1 by default; ``similarity`` = em, chrf, bleu or sbert) on answers normalised as the
authors do (``normalization`` = squad lower-cases too), segment score = mean over questions (0 … 1).

Decision, as the authors' ``gmm.py``: one two-component Gaussian mixture (scikit-learn, ``random_state``
42) over the scores of every direction of the run (``gmm_scope`` = pooled; the metric's ``finalize_run``,
which the runner calls once every direction is scored), a segment without a score counted as 0 in the fit
(``missing_as_zero``); ``p_reject`` is the posterior of the lower-mean component; ``decision`` is reject
below the midpoint of the two means (``decision_rule`` = posterior: ``p_reject`` >= ``reject_threshold``).
``gmm_scope`` = direction fits one mixture per direction instead (``finalize``, when its direction is
scored). Answers are read one per question, in place: a list of another length is unreadable, asked
again and then recorded as "answers unreadable" (score None), as the authors' script skips such rows. The
fit is stored with the scores (parquet metadata and summary.json).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from scoring.judges.base import JudgeScorer
from scoring.judges.engine import Call, Ledger
from scoring.judges.parsing import array_schema, string_list
from scoring.judges.similarity import NORMALIZATIONS, SIMILARITIES
from scoring.registry import BatchResult, MetricError, Segment, register_judge

STRINGS = {"type": "string"}
NLI_MODEL = "potsawee/deberta-v3-large-mnli"  # the paper's entailment classifier (footnote 3)


def items(text: str | None) -> list[str] | None:
    """Facts or questions: a list of texts; blank entries are no fact or question and are left out."""
    values = string_list(text)
    return None if values is None else [v for v in values if v]


DECISION_RULES = ("midpoint", "posterior")
FITTED = "fitted"  # decision_score: the fitted score (the paper); a release column's name: the authors' gmm.py
DECISION_INPUT = "decision_input"  # the part's column holding that release column's value per segment
GMM_SCOPES = ("pooled", "direction")  # pooled: one mixture over the run, as the authors fit their whole file


def _fit_settings(seed: int, threshold: float, rule: str, missing_as_zero: bool, *, n: int) -> dict[str, Any]:
    """What a fit records of how it was made, before any result."""
    fit: dict[str, Any] = {
        "method": "GaussianMixture",
        "n_components": 2,
        "random_state": seed,
        "rule": rule,
        "n": n,
        "missing_as_zero": missing_as_zero,
    }
    if rule == "posterior":
        fit["threshold"] = threshold
    return fit


def gmm_decision(
    scores: list,
    seed: int = 42,
    threshold: float = 0.5,
    rule: str = "midpoint",
    missing_as_zero: bool = True,
    decide_on: list | None = None,
) -> tuple[list, list, dict]:
    """(decision, p_reject, fit) for one direction's scores, as the authors' ``gmm.py``: a two-component
    Gaussian mixture (``random_state`` 42) over the scores, where a segment without a score counts as 0
    (``missing_as_zero``; its decision stays None); ``p_reject`` is the posterior of the lower-mean
    component; reject when the score is below the midpoint of the two means (``rule`` = ``posterior``:
    when ``p_reject`` reaches ``threshold``, our earlier rule).

    ``decide_on``: the authors' literal ``gmm.py``, which fits on one score (``avg_cos_sim``) and then compares
    another (``avg_xcomet``) with the midpoint, accepting every row without it (an unscored one too). Given,
    it holds that other score per segment (None: no value, accepted); the paper decides on the fitted score,
    the default."""
    present = [s is not None for s in scores]
    values = [float(s) if s is not None else 0.0 for s in scores if s is not None or missing_as_zero]
    fit = _fit_settings(seed, threshold, rule, missing_as_zero, n=len(values))
    if decide_on is not None:
        if len(decide_on) != len(scores):
            raise ValueError(f"decide_on has {len(decide_on)} values for {len(scores)} scores")
        fit["decided_on"] = "another score (the authors' literal gmm.py)"
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
    midpoint = float((means.min() + means.max()) / 2)
    fit.update(
        fitted=True,
        converged=bool(gmm.converged_),
        reject_component=reject,
        means=[float(m) for m in means],
        variances=[float(v) for v in gmm.covariances_.ravel()],
        weights=[float(w) for w in gmm.weights_],
        midpoint=midpoint,
    )
    decision, p_reject = _decide(
        present,
        zip(values, proba.tolist()),
        midpoint=midpoint,
        threshold=threshold,
        rule=rule,
        missing_as_zero=missing_as_zero,
        decide_on=decide_on,
    )
    fit["n_reject"] = decision.count("reject")
    return decision, p_reject, fit


def _decide(present, fitted, *, midpoint, threshold, rule, missing_as_zero, decide_on) -> tuple[list, list]:
    """(decision, p_reject) per segment (``present``: whether it has a score) from the fitted (value,
    posterior) pairs, in order, of the segments that were in the fit."""
    it = iter(fitted)
    p_reject, decision = [], []
    for has in present:
        if not has and not missing_as_zero:
            p_reject.append(None)
            decision.append(None)
            continue
        value, p = next(it)
        p_reject.append(round(float(p), 6))
        if decide_on is not None:
            other = decide_on[len(decision)]
            decision.append("reject" if other is not None and float(other) < midpoint else "accept")
        elif not has:
            decision.append(None)  # in the fit as 0, as the authors count it, but no score to decide on
        elif rule == "midpoint":
            decision.append("reject" if value < midpoint else "accept")
        else:
            decision.append("reject" if p >= threshold else "accept")
    return decision, p_reject


def pooled_decision(
    by_direction: dict[str, list], **kw
) -> tuple[dict[str, list], dict[str, list], dict[str, dict[str, Any]]]:
    """``gmm_decision`` over the scores of several directions at once, as the authors fit one mixture over
    their whole file: the directions' scores one after another (in sorted direction order, so that the fit
    does not depend on which direction finished first), one fit, its decisions split back. Returns
    direction -> decisions, direction -> ``p_reject``, and direction -> its fit record (the pooled fit, with
    that direction's own count and rejects; ``kw``: ``gmm_decision``'s options)."""
    order = sorted(by_direction)
    flat = [s for d in order for s in by_direction[d]]
    decide_on = kw.pop("decide_on", None)
    if decide_on is not None:  # direction -> the other score per segment, flattened in the same order
        kw["decide_on"] = [v for d in order for v in decide_on[d]]
    decision, p_reject, fit = gmm_decision(flat, **kw)
    fit = {**fit, "scope": "pooled", "directions": order, "n_pooled": fit["n"]}
    if "n_reject" in fit:
        fit["n_reject_pooled"] = fit.pop("n_reject")
    decisions, posteriors, fits, lo = {}, {}, {}, 0
    missing_as_zero = kw.get("missing_as_zero", True)
    for d in order:
        hi = lo + len(by_direction[d])
        decisions[d], posteriors[d] = decision[lo:hi], p_reject[lo:hi]
        own = {**fit, "n": sum(1 for s in by_direction[d] if s is not None or missing_as_zero)}
        if fit.get("fitted"):
            own["n_reject"] = decisions[d].count("reject")
        fits[d] = own
        lo = hi
    return decisions, posteriors, fits


def decision_options(opts: dict[str, Any]) -> dict[str, Any]:
    """``gmm_decision``'s keywords from the metric's options (as a scorer holds them, or as a part's
    signature recorded them)."""
    flag = opts.get("missing_as_zero", True)
    return {
        "seed": int(opts.get("gmm_seed", 42)),
        "threshold": float(opts.get("reject_threshold", 0.5)),
        "rule": opts.get("decision_rule", "midpoint"),
        "missing_as_zero": flag if isinstance(flag, bool) else str(flag).lower() in ("true", "1", "yes"),
    }


def finalize_run(
    options: dict[str, Any], scores: dict[str, list], columns: dict[str, dict[str, list]] | None = None
) -> dict[str, tuple[dict, dict]]:
    """The runner's step over every direction of a run scored with one signature (``MetricSpec.finalize_run``):
    with ``gmm_scope`` = pooled, one mixture over all their scores (direction -> its scores). Returns
    direction -> (columns to set, summary entries); nothing with the per-direction scope (``finalize``
    decided each direction already)."""
    if options.get("gmm_scope") != "pooled":  # parts from before the option fitted per direction
        return {}
    kw = decision_options(options)
    if options.get("decision_score", FITTED) != FITTED:
        kw["decide_on"] = {d: (columns or {}).get(d, {}).get(DECISION_INPUT) or [None] * len(scores[d]) for d in scores}
    decisions, posteriors, fits = pooled_decision(scores, **kw)
    return {d: ({"decision": decisions[d], "p_reject": posteriors[d]}, {"gmm": fits[d]}) for d in scores}


def contradiction_index(config) -> int:
    """Which logit of an NLI classifier means contradiction: the label named so, else index 1 of a two-label
    model, as potsawee/deberta-v3-large-mnli's card reads its logits ([entailment, contradiction]; its
    stored config names them only LABEL_0 and LABEL_1)."""
    names = {int(i): str(n).lower() for i, n in (getattr(config, "id2label", None) or {}).items()}
    named = [i for i, n in sorted(names.items()) if "contradict" in n]
    if named:
        return named[0]
    if int(getattr(config, "num_labels", len(names) or 0)) == 2:
        return 1
    raise MetricError(
        f"askqe: the NLI model's labels {sorted(names.values())} name no contradiction and it has not two labels; "
        "give a model whose config names a contradiction label, or a two-label [entailment, contradiction] one"
    )


def nli_pairs(source: str, facts: list[str]) -> list[tuple[str, str]]:
    """The classifier's (textA, textB) inputs: each fact (the hypothesis) first, the source (the premise)
    second. potsawee/deberta-v3-large-mnli's card reads the pair so (textA is entailed by, or contradicts,
    textB: its example puts the short claim first and the news sentence second), as SelfCheckGPT, which
    trained it, feeds ``(sentence, sampled passage)``. So the filter asks whether the source contradicts the
    fact (the paper's §3.1), not whether the fact contradicts the source."""
    return [(f, source) for f in facts]


class NliFilter:
    """Keeps the facts that a local NLI classifier does not call contradicted by the source (the paper
    discards contradictory facts). The model comes from a local directory or the Hugging Face cache
    (``scoring.model_files``); loaded on first use."""

    def __init__(self, model: str):
        self.model_id = model
        self._model = None

    def _load(self):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from scoring.model_files import resolve_model

        path = resolve_model(self.model_id, "askqe").path
        self._tokenizer = AutoTokenizer.from_pretrained(str(path))
        self._model = AutoModelForSequenceClassification.from_pretrained(str(path)).eval()
        self._contradiction = contradiction_index(self._model.config)
        self._torch = torch

    def keep(self, premise: str, facts: list[str]) -> list[str]:
        if not facts:
            return facts
        if self._model is None:
            self._load()
        pairs = nli_pairs(premise, facts)
        enc = self._tokenizer(
            [a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation=True, return_tensors="pt"
        )
        with self._torch.no_grad():
            labels = self._model(**enc).logits.argmax(dim=-1).tolist()
        return [f for f, label in zip(facts, labels) if label != self._contradiction]


def _note(facts, backtranslation, questions, a_src, a_bt, *, failed: bool) -> str | None:
    """Why a triplet has no score ("" when its calls failed: the ledger says why), or None when it has one."""
    if facts is None:
        return "" if failed else "facts unreadable"
    if backtranslation is None:
        return "" if failed else "back-translation empty"
    if not questions:
        return "no questions generated" if questions == [] else ("" if failed else "questions unreadable")
    if a_src is None or a_bt is None:
        return "answers unreadable" if not failed else ""
    return None


class AskQEScorer(JudgeScorer):
    name = "askqe"
    prompts = ("askqe-facts", "askqe-questions", "askqe-questions-vanilla", "askqe-answers", "askqe-backtranslate")
    default_max_tokens = 512
    options = {
        "similarity": "f1",
        "normalization": "askqe",
        "bt_column": None,
        "nli_model": NLI_MODEL,
        "gmm_seed": 42,
        "decision_rule": "midpoint",
        "gmm_scope": "pooled",
        "reject_threshold": 0.5,
        "missing_as_zero": True,
        "decision_score": FITTED,
    }

    def __init__(self, **kw):
        super().__init__(**kw)
        choices = {
            "similarity": SIMILARITIES,
            "normalization": NORMALIZATIONS,
            "decision_rule": DECISION_RULES,
            "gmm_scope": GMM_SCOPES,
        }
        for option, known in choices.items():
            if self.opts[option] not in known:
                raise MetricError(f"askqe: {option} {self.opts[option]!r} unknown; choose from {', '.join(known)}")
        flag = self.opts["missing_as_zero"]
        if not isinstance(flag, bool):
            if str(flag).lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise MetricError(f"askqe: missing_as_zero={flag!r}: true or false")
            self.opts["missing_as_zero"] = str(flag).lower() in ("true", "1", "yes")
        off = str(self.opts["nli_model"]).lower() in ("none", "off", "")
        if off:
            self.opts["nli_model"] = "none"  # one spelling in the signature
        self.nli = None if off else NliFilter(self.opts["nli_model"])

    def wanted_columns(self) -> list[str]:
        wanted = [self.opts["bt_column"]] if self.opts["bt_column"] else []
        if self.opts["decision_score"] != FITTED:
            wanted.append(self.opts["decision_score"])
        return wanted

    def _decision_input(self, segment: Segment, row: int) -> float | None:
        value = (segment.extra or {}).get(self.opts["decision_score"])
        if value is None:
            return None  # the authors accept a row without the score they decide on
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if number != number or number in (float("inf"), float("-inf")):
            raise MetricError(
                f"askqe: release column {self.opts['decision_score']!r} has no finite number for a triplet "
                f"(row {row} of the chunk): {str(value)[:40]!r}"
            )
        return number

    def _call(self, name: str, owners, **fields) -> Call:
        t = self.prompt_set[name]
        d = self.decoding
        schema = array_schema(name.replace("-", "_"), STRINGS) if name != "askqe-backtranslate" else None
        return Call(
            t,
            t.messages(d.structured and schema is not None, **fields),
            d if schema else d.replace(structured=False),
            schema,
            owners=tuple(owners),
        )

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        ledger = Ledger(len(segments))
        by_source: dict[str, list[int]] = {}
        for i, s in enumerate(segments):
            by_source.setdefault(s.src, []).append(i)
        src_lang, _ = self.languages(segments[0]) if segments else ("", "")
        facts, bt = self._facts_and_backtranslations(segments, by_source, src_lang, ledger)
        questions = self._questions(facts, by_source, src_lang, ledger)
        src_answers, bt_answers = self._answers(segments, by_source, src_lang, questions, bt, ledger)
        scores, extras = self._segment_scores(segments, facts, questions, bt, src_answers, bt_answers, ledger)
        return self.result(scores, ledger, extras)

    def _facts_and_backtranslations(self, segments, by_source, src_lang, ledger):
        """Stage 1: facts per source (NLI-filtered), and back-translations per triplet (independent: one batch)."""
        sources = list(by_source)
        calls = [self._call("askqe-facts", by_source[src], source_lang=src_lang, source=src) for src in sources]
        bt: list[str | None] = [None] * len(segments)
        bt_index = []
        column = self.opts["bt_column"]
        for i, s in enumerate(segments):
            if column:
                value = (s.extra or {}).get(column)
                if not isinstance(value, str):
                    raise MetricError(
                        f"askqe: release column {column!r} has no text for a triplet (row {i} of the chunk)"
                    )
                bt[i] = value
            else:
                sl, tl = self.languages(s)
                calls.append(self._call("askqe-backtranslate", [i], source_lang=sl, target_lang=tl, translation=s.mt))
                bt_index.append(i)
        n_src = len(sources)
        _, parsed = self.ask(
            calls, lambda j, text: items(text) if j < n_src else (text.strip() or None), "facts+backtranslation", ledger
        )
        facts = dict(zip(sources, parsed[:n_src]))
        for i, text in zip(bt_index, parsed[n_src:]):
            bt[i] = text
        if self.nli:
            facts = {src: (self.nli.keep(src, f) if f else f) for src, f in facts.items()}
        return facts, bt

    def _questions(self, facts, by_source, src_lang, ledger) -> dict[str, list[str] | None]:
        """Stage 2: questions per source, from its facts; without any (none extracted, or all contradicted)
        from the sentence alone, the authors' vanilla prompt."""
        q_sources = [src for src in by_source if facts[src] is not None]
        calls = [
            self._call(
                "askqe-questions",
                by_source[src],
                source_lang=src_lang,
                source=src,
                facts=json.dumps(facts[src], ensure_ascii=False),
            )
            if facts[src]
            else self._call("askqe-questions-vanilla", by_source[src], source_lang=src_lang, source=src)
            for src in q_sources
        ]
        _, parsed = self.ask(calls, lambda j, text: items(text), "questions", ledger)
        return dict(zip(q_sources, parsed))

    def _answers(self, segments, by_source, src_lang, questions, bt, ledger):
        """Stage 3: answers on the source (per source) and on the back-translation (per triplet)."""
        calls, slots = [], []

        def slot_source(j: int) -> str:
            kind, key = slots[j]
            return key if kind == "src" else segments[key].src

        def ask_answers(owners, context: str, src: str) -> Call:
            questions_text = json.dumps(questions[src], ensure_ascii=False)
            return self._call("askqe-answers", owners, source_lang=src_lang, context=context, questions=questions_text)

        for src in by_source:
            if questions.get(src):
                calls.append(ask_answers(by_source[src], src, src))
                slots.append(("src", src))
        for i, s in enumerate(segments):
            if questions.get(s.src) and bt[i] is not None:
                calls.append(ask_answers([i], bt[i], s.src))
                slots.append(("bt", i))
        # one answer per question, in place: a list of another length is unreadable (asked again, then
        # recorded so), never padded
        _, answers_parsed = self.ask(
            calls, lambda j, text: string_list(text, len(questions[slot_source(j)])), "answers", ledger
        )
        src_answers: dict[str, list[str]] = {}
        bt_answers: dict[int, list[str] | None] = {}
        for (kind, key), parsed in zip(slots, answers_parsed):
            if kind == "src":
                src_answers[key] = parsed
            else:
                bt_answers[key] = parsed
        return src_answers, bt_answers

    def _segment_scores(self, segments, facts, questions, bt, src_answers, bt_answers, ledger):
        """Per triplet: the mean similarity of its answers (None, with a note, when a stage gave nothing)."""
        sim = SIMILARITIES[self.opts["similarity"]]
        norm = NORMALIZATIONS[self.opts["normalization"]]
        scores = []
        extras: dict[str, list] = {
            key: [] for key in ("facts", "questions", "answers_src", "answers_bt", "similarities", "backtranslation")
        }
        extras["note"] = []
        for i, s in enumerate(segments):
            qs = questions.get(s.src) or []
            a_src = src_answers.get(s.src)
            a_bt = bt_answers.get(i)
            note = _note(facts.get(s.src), bt[i], questions.get(s.src), a_src, a_bt, failed=bool(ledger.errors[i]))
            sims: list[float] = []
            if note is None:
                note = ""
                pairs = list(zip(a_bt, a_src))
                sims = sim.batch(pairs) if hasattr(sim, "batch") else [sim(p, g, norm) for p, g in pairs]
            scores.append(statistics.fmean(sims) if sims else None)
            extras["facts"].append(facts.get(s.src) or [])
            extras["questions"].append(qs)
            extras["answers_src"].append(a_src or [])
            extras["answers_bt"].append(a_bt or [])
            extras["similarities"].append([round(x, 6) for x in sims])
            extras["backtranslation"].append(bt[i])
            extras["note"].append(note)
            if self.opts["decision_score"] != FITTED:
                extras.setdefault(DECISION_INPUT, []).append(self._decision_input(s, i))
        return scores, extras

    def finalize(self, direction_code: str, columns: dict[str, list], data=None) -> dict[str, Any]:
        n = len(columns["score"])
        if self.opts["gmm_scope"] == "pooled":
            # decided by ``finalize_run`` over every direction of the run, once all are scored
            columns["decision"] = [None] * n
            columns["p_reject"] = [None] * n
            return {
                "gmm": {
                    "scope": "pooled",
                    "fitted": False,
                    "pending": True,
                    "n": n,
                    "reason": "pooled over the run's directions: decided once every direction is scored",
                }
            }
        kw = decision_options(self.opts)
        if self.opts["decision_score"] != FITTED:
            kw["decide_on"] = columns.get(DECISION_INPUT) or [None] * n
        decision, p_reject, fit = gmm_decision(columns["score"], **kw)
        columns["decision"] = decision
        columns["p_reject"] = p_reject
        return {"gmm": {**fit, "scope": "direction"}}


register_judge(
    AskQEScorer,
    score_range=(0.0, 1.0),
    finalize_run=finalize_run,
    finalize_reads=(DECISION_INPUT,),
    description="AskQE: questions from the source answered on source and back-translated MT (F1); "
    "GMM accept/reject over the run's directions",
)
