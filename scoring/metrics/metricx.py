"""MetricX-23, MetricX-23-QE and MetricX-24 through transformers.

There is no pip package: this follows google-research/metricx (``metricx23|24/models.py`` and
``predict.py``). The checkpoints are mT5 encoder-decoders whose score is the logit of one vocabulary entry
(``<extra_id_10>``, id 250089 in mT5) at the first decoder step (start token 0), clipped to [0, 25]; lower
is better. Inputs are one string per triplet (formats below), tokenized with the mT5 tokenizer, with the
trailing EOS removed. As in the reference:

- MetricX-24 loads the weights in the checkpoint's own dtype (``metricx24/predict.py``:
  ``torch_dtype="auto"``; Google publishes bfloat16 MetricX-24 repos); MetricX-23 in float32
  (``metricx23/predict.py`` passes no dtype, so transformers upcasts). ``dtype=`` / ``--dtype`` overrides
  either. The dtype used, and where it came from, are in the signature.
- ``lm_head`` is the stored one even when the config sets ``tie_word_embeddings`` (the reference's
  MT5ForRegression has no output-embedding hook, so nothing ties it); with that flag the decoder output is
  scaled by d_model^-0.5 before ``lm_head``, as T5 does. A tied checkpoint without a stored head is refused.
- the score is read at the tokenizer's ``<extra_id_10>``. With mT5's vocabulary (a model whose vocabulary
  reaches id 250089) that must be 250089, the reference's hard-coded id, or loading fails with a clear
  error; models with a smaller vocabulary (only the tests' tiny ones), where the reference's id does not
  exist, use the tokenizer's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.metrics.neural import NeuralScorer, batches
from scoring.model_files import checkpoint_dtype, resolve_model, torch_dtype
from scoring.registry import BatchResult, Family, MetricError, MetricSpec, Segment, register

SCORE_TOKEN = "<extra_id_10>"
REFERENCE_SCORE_ID = 250089  # google-research/metricx models.py: lm_logits[:, 0, 250089]


def _mt5_for_regression():
    import torch
    from transformers import MT5ForConditionalGeneration

    class MT5ForRegression(MT5ForConditionalGeneration):
        """MetricX's regression model: the weights of MT5ForConditionalGeneration, the forward pass of
        google-research/metricx's MT5ForRegression (encoder, one decoder step from token 0, optional
        d_model^-0.5 scaling, lm_head, one logit, clip)."""

        score_token_id: int = REFERENCE_SCORE_ID
        scale_decoder_output: bool = False

        def forward(self, input_ids=None, attention_mask=None, **kwargs):  # type: ignore[override]
            encoded = self.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            decoder_input_ids = torch.zeros((input_ids.size(0), 1), dtype=torch.long, device=input_ids.device)
            decoded = self.decoder(
                input_ids=decoder_input_ids,
                encoder_hidden_states=encoded.last_hidden_state,
                encoder_attention_mask=attention_mask,
                use_cache=False,
                return_dict=True,
            )
            sequence_output = decoded.last_hidden_state
            if self.scale_decoder_output:
                sequence_output = sequence_output * (self.model_dim**-0.5)
            logits = self.lm_head(sequence_output)
            return torch.clamp(logits[:, 0, self.score_token_id], 0.0, 25.0)

    return MT5ForRegression


# (name, default model, default tokenizer, max input tokens, format, QE?)
FORMATS = {
    "23": lambda s, qe: f"candidate: {s.mt} source: {s.src}" if qe else f"candidate: {s.mt} reference: {s.ref}",
    "24": lambda s, qe: (
        f"source: {s.src} candidate: {s.mt}" if qe else f"source: {s.src} candidate: {s.mt} reference: {s.ref}"
    ),
}


class MetricXScorer(NeuralScorer):
    library = "transformers"

    def __init__(
        self,
        metric: str,
        version: str,
        qe: bool,
        max_length: int,
        model: str,
        tokenizer: str | None = None,
        default_tokenizer: str | None = None,
        **kw: Any,
    ):
        self.metric = metric
        self.version = version
        self.qe = qe
        self.max_length = int(max_length)
        explicit_dtype = kw.get("dtype")
        super().__init__(model, **kw)
        if (
            explicit_dtype is None and version == "24"
        ):  # the checkpoint's own dtype, as the reference's torch_dtype="auto"
            self.dtype_name, self.dtype = torch_dtype(checkpoint_dtype(self.resolved.path), self.device)
        self.dtype_from = (
            "option" if explicit_dtype else ("checkpoint" if version == "24" else "float32 (metricx23 predict.py)")
        )
        # The MetricX repos hold no tokenizer; they use mT5's. A directory that has one uses its own.
        own = any(
            (self.resolved.path / f).exists() for f in ("spiece.model", "tokenizer.json", "tokenizer_config.json")
        )
        self.tokenizer_resolved = (
            self.resolved
            if own and tokenizer is None
            else resolve_model(tokenizer or default_tokenizer or "google/mt5-large", metric)
        )

    def load(self) -> None:
        import torch
        from transformers import AutoTokenizer, MT5Config

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.tokenizer_resolved.path))
        config = MT5Config.from_pretrained(str(self.resolved.path))
        tied = bool(getattr(config, "tie_word_embeddings", False))
        config.tie_word_embeddings = False  # keep the stored lm_head, as the reference does
        cls = _mt5_for_regression()
        self.model, info = cls.from_pretrained(
            str(self.resolved.path), config=config, torch_dtype=self.dtype, output_loading_info=True
        )
        if "lm_head.weight" in info.get("missing_keys", []):
            raise MetricError(
                f"{self.metric}: {self.resolved.model_id} has no stored lm_head (tie_word_embeddings={tied}); MetricX reads "
                "its score from the stored lm_head (google-research/metricx never ties it), so this is not a MetricX checkpoint"
            )
        self.model.scale_decoder_output = tied
        self.model.score_token_id = self.score_token_id(config.vocab_size)
        self.model.to(self.device).eval()
        self._torch = torch

    def score_token_id(self, vocab_size: int) -> int:
        token_id = self.tokenizer.convert_tokens_to_ids(SCORE_TOKEN)
        if token_id is None or token_id == self.tokenizer.unk_token_id:
            raise MetricError(
                f"{self.metric}: tokenizer {self.tokenizer_resolved.model_id} has no {SCORE_TOKEN}; use the mT5 tokenizer"
            )
        if vocab_size > REFERENCE_SCORE_ID and token_id != REFERENCE_SCORE_ID:
            raise MetricError(
                f"{self.metric}: tokenizer {self.tokenizer_resolved.model_id} maps {SCORE_TOKEN} to id {token_id}, but MetricX "
                f"reads the score at id {REFERENCE_SCORE_ID} (google-research/metricx); use the mT5 tokenizer (google/mt5-*)"
            )
        if token_id >= vocab_size:
            raise MetricError(
                f"{self.metric}: {SCORE_TOKEN} is id {token_id}, outside the model's vocabulary of {vocab_size}"
            )
        return int(token_id)

    def inputs(self, segments: Sequence[Segment]) -> list[str]:
        fmt = FORMATS[self.version]
        return [fmt(s, self.qe) for s in segments]

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids as the reference feeds them: truncated to max_length, then the trailing EOS dropped."""
        enc = self.tokenizer(list(texts), max_length=self.max_length, truncation=True, padding=False)
        return [x[:-1] if x and x[-1] == self.tokenizer.eos_token_id else x for x in enc["input_ids"]]

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        torch = self._torch
        ids = self.encode(self.inputs(segments))
        # Longest first within the chunk keeps padding low; results go back to the input order.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        scores = [0.0] * len(ids)
        with torch.inference_mode():
            for idx in batches(order, self.batch_size):
                padded = self.tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
                pred = self.model(
                    input_ids=padded["input_ids"].to(self.device),
                    attention_mask=padded["attention_mask"].to(self.device),
                )
                for i, value in zip(idx, pred.float().cpu().tolist()):
                    scores[i] = value
        return BatchResult(scores=scores)

    def tokenizer_name(self) -> str | None:
        return f"{self.tokenizer_resolved.model_id}@{self.tokenizer_resolved.revision}"

    def extra_signature(self) -> dict[str, Any]:
        return {
            "input_format": FORMATS[self.version](Segment("{src}", "{mt}", "{ref}"), self.qe),
            "max_length": self.max_length,
            "dtype_from": self.dtype_from,  # as the reference's predict.py of this version, or "option"
            "score_token": SCORE_TOKEN,
        }


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
            takes=("tokenizer",),
        )
    )


_metricx(
    "MetricX-23",
    "23",
    False,
    "google/metricx-23-large-v2p0",
    "google/mt5-large",
    1024,
    "MetricX-23 large (reference-based)",
)
_metricx(
    "MetricX-23-QE", "23", True, "google/metricx-23-qe-large-v2p0", "google/mt5-large", 1024, "MetricX-23-QE large"
)
_metricx(
    "MetricX-24",
    "24",
    False,
    "google/metricx-24-hybrid-large-v2p6",
    "google/mt5-large",
    1536,
    "MetricX-24 hybrid large, with reference",
)
_metricx(
    "MetricX-24-QE",
    "24",
    True,
    "google/metricx-24-hybrid-large-v2p6",
    "google/mt5-large",
    1536,
    "MetricX-24 hybrid large, QE mode",
)
