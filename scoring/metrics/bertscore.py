"""BERTScore through bert-score's BERTScorer (F1 as the score; precision and recall kept as columns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.metrics.neural import NeuralScorer
from scoring.registry import BatchResult, Segment, register_model_metric

DEFAULT_MODEL = "bert-base-multilingual-cased"
DEFAULT_LAYER = 9  # bert-score's tuned layer for mBERT (its default for non-English targets)


class BertScoreScorer(NeuralScorer):
    metric = "BERTScore"
    library = "bert-score"

    def __init__(self, model: str, num_layers: int | None = None, **kw: Any):
        kw.pop("spm_model", None)
        super().__init__(model, **kw)
        if num_layers is None:
            num_layers = DEFAULT_LAYER if model == DEFAULT_MODEL else self._config_layers()
        self.num_layers = int(num_layers)

    def _config_layers(self) -> int:
        import json

        config = json.loads((self.resolved.path / "config.json").read_text())
        return int(config.get("num_hidden_layers") or config.get("n_layers"))

    def load(self) -> None:
        from bert_score import BERTScorer

        # A local path as model_type goes through AutoModel/AutoTokenizer.from_pretrained, like a Hub id.
        self.scorer = BERTScorer(
            model_type=str(self.resolved.path),
            num_layers=self.num_layers,
            batch_size=self.batch_size,
            device=self.device,
            idf=False,
            rescale_with_baseline=False,
        )
        # BERTScorer has no dtype of its own; the run's dtype is the encoder's (the signature records it).
        self.scorer._model.to(self.dtype)

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        p, r, f = self.scorer.score([s.mt for s in segments], [s.ref for s in segments], batch_size=self.batch_size)
        return BatchResult(
            scores=f.tolist(),
            extras={"precision": p.tolist(), "recall": r.tolist()},
        )

    def tokenizer_name(self) -> str | None:
        return self.resolved.model_id

    def extra_signature(self) -> dict[str, Any]:
        return {"num_layers": self.num_layers, "idf": False, "rescale_with_baseline": False}


register_model_metric(
    BertScoreScorer,
    DEFAULT_MODEL,
    score_range=(-1.0, 1.0),
    takes=("num_layers",),
    description="BERTScore F1 (no idf, no baseline rescaling)",
)
