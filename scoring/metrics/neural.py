"""Shared plumbing of model-based scorers: resolve the model when built (cheap), load weights on the
first batch, and describe everything that decides the numbers in the signature."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.model_files import ResolvedModel, library_version, resolve_model, torch_device, torch_dtype
from scoring.registry import BatchResult, Scorer, Segment, refuse_unknown_options


class NeuralScorer(Scorer):
    metric = ""
    library = ""  # distribution name whose version goes into the signature

    def __init__(
        self, model: str, batch_size: int = 64, device: str | None = None, dtype: str | None = None, **unused: Any
    ):
        refuse_unknown_options(self.metric, unused)  # what the subclass took is no longer in ``unused``
        self.resolved: ResolvedModel = resolve_model(model, self.metric)
        self.batch_size = int(batch_size)
        self.device = torch_device(device)
        self.dtype_name, self.dtype = torch_dtype(dtype, self.device)
        self._loaded = False

    # subclasses -------------------------------------------------------------------------------
    def load(self) -> None:
        raise NotImplementedError

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        raise NotImplementedError

    def tokenizer_name(self) -> str | None:
        return None

    def extra_signature(self) -> dict[str, Any]:
        return {}

    # common -----------------------------------------------------------------------------------
    def score(self, segments: Sequence[Segment]) -> BatchResult:
        if not self._loaded:
            self.load()
            self._loaded = True
        if not segments:
            return BatchResult(scores=[])
        return self.score_batch(segments)

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        import torch

        return {
            "metric": self.metric,
            "library": self.library,
            "library_version": library_version(self.library),
            "torch_version": torch.__version__,
            "transformers_version": library_version("transformers"),
            **self.resolved.describe(),
            "tokenizer": self.tokenizer_name(),
            "batch_size": self.batch_size,
            "dtype": self.dtype_name,
            "device": self.device,
            **self.extra_signature(),
        }


def distinct_sentences(texts) -> tuple[list[str], dict[str, int]]:
    """The distinct texts in first-seen order, and each one's row among them: scorers that embed sentences one by
    one embed each once (a release repeats a gold pair's source and reference in all of its pseudo translations)."""
    sentences = list(dict.fromkeys(texts))
    return sentences, {text: i for i, text in enumerate(sentences)}


def batches(items: Sequence, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]
