"""What every LLM-judge scorer shares: the judge (backend, cache, accounting), the prompt set with the
run's overrides, the signature, and the per-segment failure columns.

A scorer's ``score(segments)`` runs its pipeline stage by stage over the whole chunk (each stage one batch
of concurrent calls) and returns scores with extras; a segment whose calls failed in transport gets score
None, its ``error`` text and ``retryable`` = True, and the runner leaves its direction unfinished so the
next run redoes it (answered calls come from the cache). ``finalize`` runs once per direction on all its
rows (CEF's judge reliability, AskQE's per-direction GMM decision); a step over every direction of the run
is the metric's ``MetricSpec.finalize_run`` (AskQE's pooled GMM decision).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from scoring.judges.engine import Answer, Call, Decoding, Judge, JudgeConfig, Ledger
from scoring.judges.languages import language_name
from scoring.judges.templates import PromptSet, parse_prompt_files
from scoring.registry import BatchResult, Scorer, Segment, refuse_unknown_options

SIGNATURE_VERSION = 1


class JudgeScorer(Scorer):
    name = ""
    prompts: tuple[str, ...] = ()
    default_max_tokens = 1024
    # option name -> default; values given with --option KEY=VALUE (validated here, recorded in the signature)
    options: dict[str, Any] = {}

    def __init__(self, judge: dict | None = None, prompt_files=None, **options):
        judge = dict(judge or {})
        files = parse_prompt_files(prompt_files or judge.pop("prompt_files", None))
        refuse_unknown_options(self.name, options, takes=self.options)
        self.opts = {k: options.get(k, v) if options.get(k) is not None else v for k, v in self.options.items()}
        if judge.get("max_tokens") is None:
            judge["max_tokens"] = self.default_max_tokens
        self.config = JudgeConfig.from_options(judge)
        self.judge = Judge(self.config)
        self.prompt_set = PromptSet(list(self.prompts), {k: v for k, v in files.items() if k in self.prompts})
        self.run_stats: dict[str, Any] = {}

    @property
    def decoding(self) -> Decoding:
        return self.config.decoding

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        return {
            "metric": self.name,
            "judge": self.config.describe(),
            "prompts": self.prompt_set.describe(),
            "options": {k: v for k, v in sorted(self.opts.items())},
            "signature_version": SIGNATURE_VERSION,
            "model": self.config.model,
            "batch_size": None,
            "dtype": None,
        }

    # -- helpers for subclasses ---------------------------------------------------------------------------

    @staticmethod
    def languages(segment: Segment) -> tuple[str, str]:
        return language_name(segment.source_lang or "en"), language_name(segment.target_lang)

    def result(self, scores: list, ledger: Ledger, extras: dict[str, list]) -> BatchResult:
        merged = {**extras, **ledger.extras()}
        scores = [None if (ledger.retryable[i] or s is None) else s for i, s in enumerate(scores)]
        return BatchResult(scores=scores, extras=merged)

    def ask(
        self,
        calls: list[Call],
        parse: Callable[[int, str], Any],
        stage: str,
        ledger: Ledger | None = None,
        rounds: int = 3,
    ) -> tuple[list[Answer], list[Any]]:
        """Run one stage and parse its answers; an answer that does not parse or was cut off is asked again,
        with twice the tokens when it was cut off, else 0.1 warmer (GEMBA's authors' policy, applied to every judge
        metric), at most ``rounds`` times. ``parse(i, text)`` reads call i's answer (None: unreadable).
        Returns the final answers and their parses."""
        calls = list(calls)
        answers = self.judge.run(calls, stage=stage)
        if ledger is not None:
            ledger.add(calls, answers)
        parsed = [parse(i, a.text) if a.ok else None for i, a in enumerate(answers)]
        for _ in range(rounds):
            redo = [i for i, (a, p) in enumerate(zip(answers, parsed)) if a.ok and (p is None or a.truncated)]
            if not redo:
                break
            again = []
            for i in redo:
                d = calls[i].decoding
                d = (
                    d.replace(max_tokens=d.max_tokens * 2)
                    if answers[i].truncated
                    else d.replace(temperature=round(min(1.0, d.temperature + 0.1), 2))
                )
                again.append(replace(calls[i], decoding=d))
            new = self.judge.run(again, stage=f"{stage}-reask")
            if ledger is not None:
                ledger.add(again, new)
            for i, call, a in zip(redo, again, new):
                calls[i], answers[i], parsed[i] = call, a, (parse(i, a.text) if a.ok else None)
        return answers, parsed

    def score(self, segments: Sequence[Segment]) -> BatchResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def reset_stats(self) -> None:
        from scoring.judges.engine import Stats

        self.judge.stats = Stats()

    def stats(self) -> dict[str, Any]:
        return self.judge.stats.as_dict()

    def close(self) -> None:
        self.judge.close()
