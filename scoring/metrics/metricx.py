"""MetricX-23, MetricX-23-QE and MetricX-24 through transformers.

There is no pip package: this is the model cards' recipe. The checkpoints are mT5 encoder-decoders whose
score is the logit of one vocabulary entry (``<extra_id_10>``, id 250089 in mT5) at the first decoder step,
clipped to [0, 25]; lower is better. Inputs are one string per triplet (formats below), tokenized with the
mT5 tokenizer, with the trailing EOS removed as in google-research/metricx.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from scoring.metrics.neural import NeuralScorer, batches
from scoring.model_files import resolve_model
from scoring.registry import BatchResult, Family, MetricSpec, Segment, register

SCORE_TOKEN = "<extra_id_10>"


def _mt5_for_regression():
    import torch
    from transformers import MT5ForConditionalGeneration

    class MT5ForRegression(MT5ForConditionalGeneration):
        """MetricX's regression head: same weights as MT5ForConditionalGeneration, one logit read out."""

        score_token_id: int = 250089

        def forward(self, input_ids=None, attention_mask=None, **kwargs):  # type: ignore[override]
            batch = input_ids.size(0)
            # One decoder step from the start token (pad id 0), as MetricX trains and predicts.
            decoder_input_ids = torch.zeros((batch, 1), dtype=torch.long, device=input_ids.device)
            out = super().forward(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
            prediction = out.logits[:, 0, self.score_token_id]
            return torch.clamp(prediction, 0.0, 25.0)

    return MT5ForRegression


# (name, default model, default tokenizer, max input tokens, format, QE?)
FORMATS = {
    "23": lambda s, qe: f"candidate: {s.mt} source: {s.src}" if qe else f"candidate: {s.mt} reference: {s.ref}",
    "24": lambda s, qe: f"source: {s.src} candidate: {s.mt}" if qe else f"source: {s.src} candidate: {s.mt} reference: {s.ref}",
}


class MetricXScorer(NeuralScorer):
    library = "transformers"

    def __init__(self, metric: str, version: str, qe: bool, max_length: int, model: str, tokenizer: str | None = None, **kw: Any):
        self.metric = metric
        self.version = version
        self.qe = qe
        self.max_length = int(max_length)
        super().__init__(model, **kw)
        # The MetricX repos hold no tokenizer; they use mT5's. A directory that has one uses its own.
        own = any((self.resolved.path / f).exists() for f in ("spiece.model", "tokenizer.json", "tokenizer_config.json"))
        self.tokenizer_resolved = self.resolved if own and tokenizer is None else resolve_model(tokenizer or kw.get("default_tokenizer") or "google/mt5-large", metric)

    def load(self) -> None:
        import torch
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.tokenizer_resolved.path))
        cls = _mt5_for_regression()
        self.model = cls.from_pretrained(str(self.resolved.path), torch_dtype=self.dtype)
        self.model.score_token_id = self.tokenizer.convert_tokens_to_ids(SCORE_TOKEN)
        self.model.to(self.device).eval()
        self._torch = torch

    def inputs(self, segments: Sequence[Segment]) -> list[str]:
        fmt = FORMATS[self.version]
        return [fmt(s, self.qe) for s in segments]

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        torch = self._torch
        texts = self.inputs(segments)
        enc = self.tokenizer(texts, max_length=self.max_length, truncation=True, padding=False)
        ids = [x[:-1] if x and x[-1] == self.tokenizer.eos_token_id else x for x in enc["input_ids"]]
        # Longest first within the chunk keeps padding low; results go back to the input order.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        scores = [0.0] * len(ids)
        with torch.inference_mode():
            for idx in batches(order, self.batch_size):
                padded = self.tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
                pred = self.model(
                    input_ids=padded["input_ids"].to(self.device), attention_mask=padded["attention_mask"].to(self.device)
                )
                for i, value in zip(idx, pred.float().cpu().tolist()):
                    scores[i] = value
        return BatchResult(scores=scores)

    def tokenizer_name(self) -> str | None:
        return f"{self.tokenizer_resolved.model_id}@{self.tokenizer_resolved.revision}"

    def extra_signature(self) -> dict[str, Any]:
        return {"input_format": FORMATS[self.version](Segment("{src}", "{mt}", "{ref}"), self.qe), "max_length": self.max_length}


def _metricx(name: str, version: str, qe: bool, model: str, tokenizer: str, max_length: int, description: str) -> None:
    def build(model: str | None = None, tokenizer: str | None = None, **kw: Any) -> MetricXScorer:
        kw.pop("spm_model", None)
        kw.setdefault("default_tokenizer", default_tokenizer)
        return MetricXScorer(name, version, qe, max_length, model or default_model, tokenizer, **kw)

    default_model, default_tokenizer = model, tokenizer
    register(
        MetricSpec(
            name=name,
            family=Family.QE if qe else Family.REGRESSION,
            needs_source=qe or version == "24",
            needs_reference=not qe,
            higher_is_better=False,
            score_range=(0.0, 25.0),
            default_model=model,
            device="gpu",
            build=build,
            description=description,
        )
    )


_metricx("MetricX-23", "23", False, "google/metricx-23-large-v2p0", "google/mt5-large", 1024, "MetricX-23 large (reference-based)")
_metricx("MetricX-23-QE", "23", True, "google/metricx-23-qe-large-v2p0", "google/mt5-large", 1024, "MetricX-23-QE large")
_metricx("MetricX-24", "24", False, "google/metricx-24-hybrid-large-v2p6", "google/mt5-large", 1536, "MetricX-24 hybrid large, with reference")
_metricx("MetricX-24-QE", "24", True, "google/metricx-24-hybrid-large-v2p6", "google/mt5-large", 1536, "MetricX-24 hybrid large, QE mode")
