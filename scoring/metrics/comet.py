"""COMET-22, xCOMET-XL/XXL (scores and error spans), COMETKiwi-22/23 through unbabel-comet's own
checkpoint loading and ``predict``: in float32 by default, as its Python API; ``dtype="float16"`` is what the
``comet-score`` CLI computes (it always runs ``model.half()``).

``encode_once=True`` (COMET-22, or another COMET regression checkpoint as its model) embeds each distinct sentence of a chunk once
with the model's own ``get_sentence_embedding`` and runs its ``estimate`` per triplet. The encoder reads source,
translation and reference separately there, and a release repeats each gold pair's source and reference in every
pseudo translation of it (≈ 68 times in XQ-MEval), so the encoder runs ≈ 1 time per triplet instead of 3. The
scores equal ``predict``'s up to the floating-point effect of different padding (as with another batch size)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from scoring.metrics.neural import NeuralScorer, distinct_sentences
from scoring.model_files import offline
from scoring.registry import BatchResult, Family, MetricError, MetricSpec, Segment, register


class CometScorer(NeuralScorer):
    library = "unbabel-comet"

    def __init__(
        self, metric: str, uses_reference: bool, error_spans: bool, model: str, encode_once: bool = False, **kw: Any
    ):
        self.metric = metric
        self.uses_reference = uses_reference
        self.error_spans = error_spans
        super().__init__(model, **kw)
        self.checkpoint = self.resolved.path / "checkpoints" / "model.ckpt"
        if not self.checkpoint.is_file():
            raise MetricError(f"{metric}: {self.resolved.path} is not a COMET model (no checkpoints/model.ckpt)")
        self._hparams = _read_hparams(self.resolved.path)
        if not isinstance(encode_once, bool):
            raise MetricError(f"{metric}: option encode_once={encode_once!r}: expected true or false")
        if encode_once and self._hparams.get("class_identifier") != REGRESSION:
            raise MetricError(
                f"{metric}: option encode_once applies to COMET regression metrics (COMET-22), whose encoder reads "
                f"source, translation and reference separately; {self.resolved.path} is a "
                f"{self._hparams.get('class_identifier')!r}, which reads them as one input"
            )
        self.encode_once = encode_once

    def load(self) -> None:
        from comet import load_from_checkpoint

        for name in ("pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric"):
            logging.getLogger(name).setLevel(logging.WARNING)  # no per-batch trainer chatter in worker logs
        try:
            self.model = load_from_checkpoint(str(self.checkpoint), local_files_only=offline())
        except OSError as exc:
            # The checkpoint names its encoder (e.g. xlm-roberta-large) whose tokenizer and config load
            # separately from the Hub cache.
            raise MetricError(
                f"{self.metric}: cannot load the encoder {self._hparams.get('pretrained_model')!r} named by "
                f"{self.resolved.path / 'hparams.yaml'} ({exc}); put it in the Hugging Face cache "
                "(huggingface-cli download ...) or edit pretrained_model to a local directory"
            ) from None
        if self.dtype_name == "float16":
            self.model.half()  # what comet-score does (always); COMET's FeedForward casts its input for a half model

    def _precision(self):
        import torch

        # bfloat16 as autocast over the float32 weights: COMET's pooling returns float32 and only a float16 estimator
        # casts it back, so a model cast to bfloat16 whole fails.
        if self.dtype_name == "bfloat16":
            return torch.autocast("cuda" if self.device.startswith("cuda") else "cpu", dtype=self.dtype)
        return nullcontext()

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        if self.encode_once:
            return BatchResult(scores=self._score_encoding_each_sentence_once(segments))
        samples = []
        for seg in segments:
            sample = {"src": seg.src, "mt": seg.mt}
            if self.uses_reference:
                sample["ref"] = seg.ref
            samples.append(sample)
        gpus = 1 if self.device.startswith("cuda") else 0
        with self._precision(), _kept_on_device(self.model):
            out = self.model.predict(
                samples,
                batch_size=self.batch_size,
                gpus=gpus,
                accelerator="gpu" if gpus else "cpu",
                progress_bar=False,
                num_workers=0,
            )
        extras: dict[str, list] = {}
        metadata = out.get("metadata") if hasattr(out, "get") else None
        if self.error_spans and metadata is not None and "error_spans" in metadata:
            extras["error_spans"] = [_plain(spans) for spans in metadata["error_spans"]]
        return BatchResult(scores=[float(s) for s in out["scores"]], extras=extras)

    def _score_encoding_each_sentence_once(self, segments: Sequence[Segment]) -> list[float]:
        """RegressionMetric.forward, with its three get_sentence_embedding calls done once per distinct sentence."""
        import torch

        model = self.model
        device = torch.device(self.device)
        model.to(device)
        model.eval()  # what predict's on_predict_start does without MC dropout
        # str() as COMET's prepare_sample does; a sentence used as source, translation or reference is one entry
        sentences, row = distinct_sentences(str(t) for seg in segments for t in (seg.src, seg.mt, seg.ref))
        by_length = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))  # predict's length batching
        embeddings = None
        scores: list[float] = []
        with torch.inference_mode(), self._precision():
            for lo in range(0, len(by_length), self.batch_size):
                rows = by_length[lo : lo + self.batch_size]
                inputs = model.encoder.prepare_sample([sentences[i] for i in rows])
                embedded = model.get_sentence_embedding(
                    inputs["input_ids"].to(device), inputs["attention_mask"].to(device)
                )
                if embeddings is None:
                    embeddings = embedded.new_empty((len(sentences), embedded.shape[1]))
                embeddings[torch.tensor(rows, device=device)] = embedded
            triplets = torch.tensor(
                [[row[str(s.src)], row[str(s.mt)], row[str(s.ref)]] for s in segments], device=device
            )
            for lo in range(0, len(segments), self.batch_size):
                src, mt, ref = triplets[lo : lo + self.batch_size].unbind(dim=1)
                scores.extend(model.estimate(embeddings[src], embeddings[mt], embeddings[ref]).score.float().tolist())
        return scores

    def tokenizer_name(self) -> str | None:
        return str(self._hparams.get("pretrained_model"))

    def extra_signature(self) -> dict[str, Any]:
        return {
            "comet_class": self._hparams.get("class_identifier"),
            "encoder": self._hparams.get("pretrained_model"),
            "uses_reference": self.uses_reference,
            **(
                {"sentence_embeddings": "each distinct sentence of a chunk once (encode_once)"}
                if self.encode_once
                else {}
            ),
            "precision": {"float32": "float32", "float16": "model.half() (as comet-score)"}.get(
                self.dtype_name, f"autocast {self.dtype_name}, float32 weights"
            ),
        }


ENCODE_ONCE = "embed each distinct sentence once: 2–3× faster, scores equal to predict's up to padding"
REGRESSION = "regression_metric"  # hparams' class_identifier of COMET-22 (and the wmt20/21 DA models)


@contextmanager
def _kept_on_device(model):
    """Lightning's Strategy.teardown moves the model to the CPU at the end of every ``predict`` (to free the GPU
    for what comes next). A worker scores a release chunk after chunk, so each chunk would pay a round trip of the
    weights between host and GPU (1.1 GB for COMET-22 in float16, 14 GB for xCOMET-XL in float32): while
    ``predict`` runs, the model's ``cpu()`` leaves it where it is."""
    model.cpu = lambda: model  # an instance attribute, shadowing the method for this call only
    try:
        yield
    finally:
        del model.cpu


def _read_hparams(root: Path) -> dict:
    import yaml

    path = root / "hparams.yaml"
    if not path.is_file():
        raise MetricError(f"{path}: missing (a COMET model directory has hparams.yaml and checkpoints/model.ckpt)")
    return yaml.safe_load(path.read_text()) or {}


def _plain(value):
    # error spans come back as dicts with numpy/tensor numbers; make them JSON-able
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def _comet(name: str, model: str, family: str, reference: bool, spans: bool, description: str) -> None:
    def build(model: str | None = None, **kw: Any) -> CometScorer:
        kw.pop("spm_model", None)
        return CometScorer(name, reference, spans, model or default, **kw)

    default = model
    register(
        MetricSpec(
            name=name,
            family=family,
            needs_source=True,
            needs_reference=reference,
            higher_is_better=True,
            score_range=(None, None),  # about 0–1; the regression heads are not clipped
            default_model=model,
            device="gpu",
            build=build,
            description=description,
            report_scale=100.0,
            takes=("encode_once",) if family == Family.REGRESSION and reference and not spans else (),
            options={"encode_once": ENCODE_ONCE} if family == Family.REGRESSION and reference and not spans else {},
        )
    )


_comet(
    "COMET-22", "Unbabel/wmt22-comet-da", Family.REGRESSION, True, False, "COMET-22 (wmt22-comet-da), ×100 in tables"
)
_comet("xCOMET-XL", "Unbabel/XCOMET-XL", Family.REGRESSION, True, True, "xCOMET-XL with error spans")
_comet("xCOMET-XXL", "Unbabel/XCOMET-XXL", Family.REGRESSION, True, True, "xCOMET-XXL with error spans")
_comet("COMETKiwi-22", "Unbabel/wmt22-cometkiwi-da", Family.QE, False, False, "reference-free COMETKiwi-22")
_comet("COMETKiwi-23", "Unbabel/wmt23-cometkiwi-da-xl", Family.QE, False, False, "reference-free COMETKiwi-23 XL")
