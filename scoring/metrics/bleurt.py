"""BLEURT-20 through bleurt-pytorch (lucadiliello's port of the TF checkpoints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.metrics.neural import NeuralScorer, batches
from scoring.registry import BatchResult, Segment, register_model_metric


class BleurtScorer(NeuralScorer):
    metric = "BLEURT-20"
    library = "bleurt-pytorch"

    def __init__(self, model: str, max_length: int = 512, **kw: Any):
        kw.pop("spm_model", None)
        self.max_length = int(max_length)
        super().__init__(model, **kw)

    def load(self) -> None:
        import torch
        from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer

        self.tokenizer = BleurtTokenizer.from_pretrained(str(self.resolved.path))
        self.model = BleurtForSequenceClassification.from_pretrained(str(self.resolved.path), torch_dtype=self.dtype)
        self.model.to(self.device).eval()
        self._torch = torch

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        torch = self._torch
        order = sorted(range(len(segments)), key=lambda i: -(len(segments[i].ref) + len(segments[i].mt)))
        scores = [0.0] * len(segments)
        with torch.inference_mode():
            for idx in batches(order, self.batch_size):
                # BLEURT reads (reference, candidate) in that order.
                enc = self.tokenizer(
                    [segments[i].ref for i in idx],
                    [segments[i].mt for i in idx],
                    padding="longest",
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits.flatten().float().cpu().tolist()
                for i, value in zip(idx, logits):
                    scores[i] = value
        return BatchResult(scores=scores)

    def tokenizer_name(self) -> str | None:
        return self.resolved.model_id

    def extra_signature(self) -> dict[str, Any]:
        return {"max_length": self.max_length}


register_model_metric(
    BleurtScorer,
    "lucadiliello/BLEURT-20",
    score_range=(None, None),  # roughly 0–1, not bounded
    takes=("max_length",),
    description="BLEURT-20 (RemBERT-based), ×100 in tables",
    report_scale=100.0,
)
