"""The offline rule-based backend (``injection.domain.rule_edits``): no network, no key, deterministic for a seed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from core.domain.records import fields_of
from injection.backends.base import Backend, GenerationRequest, GenerationResult, register_backend
from injection.domain.rule_edits import DonorPool, RuleRefused, rule_edit


@register_backend
class RuleBackend(Backend):
    name = "rule"
    run_settings = ("seed",)  # deterministic edits: no model, no sampling temperature

    def __init__(self, sampling, *, donors: dict[str, list[str]] | None = None, **options):
        """``donors``: per language, the references that Addition and Mistranslation draw words from
        (the service passes every reference of the run's directions)."""
        super().__init__(sampling, **options)
        self._donor_texts = donors or {}
        self._pools: dict[str, DonorPool] = {}

    def _pool(self, language: str, fallback: list[str]) -> DonorPool:
        if language not in self._pools:
            self._pools[language] = DonorPool(self._donor_texts.get(language) or fallback, language)
        return self._pools[language]

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        requests = list(requests)
        by_language: dict[str, list[str]] = {}
        for request in requests:
            by_language.setdefault(request.task.language, []).append(request.task.reference)
        seed = self.sampling.seed if self.sampling.seed is not None else 0
        for request in requests:
            if should_stop():
                return
            task = request.task
            try:
                # an edit task holds the rule's inputs (``EditTask``)
                edit = rule_edit(
                    **fields_of(task), seed=seed, donors=self._pool(task.language, by_language[task.language])
                )
            except RuleRefused as exc:
                yield GenerationResult(request.custom_id, error=f"rule refused: {exc}", model="rule")
                continue
            yield GenerationResult(request.custom_id, text=edit.text, model="rule", detail={"rule": edit.note})
