"""OmniScore through the ``omniscore`` package's OmniScorer (installed without its dependencies: it pins
torch<2.4 and transformers<4.46, while its code runs on ours). Four Likert dimensions on 1–5; the score
column is their mean, each dimension is its own column.

Two checkpoint formats exist (the package tells them apart by ``model_type`` in config.json):

- ``omniscore``: the package's own OmniScoreModel (backbone + one linear head of four outputs, [CLS]
  pooling, 1 + 4·sigmoid). Loaded by the package's code; nothing from the checkpoint is executed.
- ``score_predictor``: the legacy format of the published ``QCRI/OmniScore-deberta-v3``. Its head is
  Python code shipped inside the checkpoint (``configuration_score_predictor.py``,
  ``modeling_score_predictor.py``), which the package imports and runs. That is remote code execution:
  anyone who can change the checkpoint can run anything on the worker. It is refused unless the run
  passes ``trust_remote_code=True`` (``--trust-remote-code``), which the signature records together with
  the SHA-256 of the code files that ran.

Input: ``Source: …\\nReference: …\\nCandidate: …`` (legacy) or the prefixes in a native checkpoint's
config, without a task line by default. The paper trains without task identifiers ("We deliberately
avoid providing explicit task identifiers", §3), and the package adds a ``Task:`` line only when a task
is passed; ``task=translation`` (``--option task=translation``) adds one. The rendered template is in the
signature. The dtype is the checkpoint's own, as the package's ``torch_dtype="auto"``, unless ``--dtype``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from scoring.metrics.neural import NeuralScorer
from scoring.model_files import checkpoint_dtype, torch_dtype
from scoring.registry import BatchResult, MetricError, Segment, register_model_metric

DEFAULT_MODEL = "QCRI/OmniScore-deberta-v3"
LEGACY_CODE = ("configuration_score_predictor.py", "modeling_score_predictor.py")


class OmniScoreScorer(NeuralScorer):
    metric = "OmniScore"
    library = "omniscore"

    def __init__(
        self,
        model: str,
        task: str | None = None,
        max_length: int = 512,
        trust_remote_code: bool | str = False,
        **kw: Any,
    ):
        kw.pop("spm_model", None)
        self.task = task or None
        self.max_length = int(max_length)
        self.trust_remote_code = trust_remote_code in (True, "1", "true", "True", "yes")
        explicit_dtype = kw.get("dtype")
        super().__init__(model, **kw)
        if explicit_dtype is None:  # the package loads with torch_dtype="auto"
            self.dtype_name, self.dtype = torch_dtype(checkpoint_dtype(self.resolved.path), self.device)
        self.dtype_from = "option" if explicit_dtype else "checkpoint"
        try:
            self.config = json.loads((self.resolved.path / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MetricError(f"OmniScore: {self.resolved.model_id} has no readable config.json ({exc})") from None
        self.family = self.config.get("model_type")
        if self.family not in ("omniscore", "score_predictor"):
            raise MetricError(
                f"OmniScore: {self.resolved.model_id} has model_type {self.family!r}; expected 'omniscore' or the legacy 'score_predictor'"
            )
        self.code_sha256 = None
        if self.family == "score_predictor":
            if not self.trust_remote_code:
                raise MetricError(
                    f"OmniScore: {self.resolved.model_id} is a legacy 'score_predictor' checkpoint whose scoring head is Python code "
                    f"shipped with the checkpoint ({', '.join(LEGACY_CODE)}). Running it executes that code on this worker. "
                    "If you trust the checkpoint's source, pass --trust-remote-code (trust_remote_code=True); the signature records it."
                )
            missing = [name for name in LEGACY_CODE if not (self.resolved.path / name).is_file()]
            if missing:
                raise MetricError(f"OmniScore: legacy checkpoint {self.resolved.model_id} lacks {', '.join(missing)}")
            digest = hashlib.sha256()
            for name in LEGACY_CODE:
                digest.update((self.resolved.path / name).read_bytes())
            self.code_sha256 = digest.hexdigest()

    def input_format(self):
        """The package's format for this checkpoint, as ``OmniScorer._resolve_input_format`` gives it for a
        local directory (for ``QCRI/OmniScore-deberta-v3`` the same as its entry in ``omniscore.examples``)."""
        from omniscore.formatting import InputFormat

        if self.family == "omniscore":
            c = self.config
            return InputFormat(
                task_prefix=c.get("task_prefix", "Task:"),
                source_prefix=c.get("source_prefix", "Source:"),
                reference_prefix=c.get("reference_prefix", "Reference:"),
                prediction_prefix=c.get("prediction_prefix", "Prediction:"),
                separator=c.get("separator", "\n"),
            )
        return InputFormat(
            task_prefix="Task:",
            source_prefix="Source:",
            reference_prefix="Reference:",
            prediction_prefix="Candidate:",
            separator="\n",
        )

    def load(self) -> None:
        from omniscore import OmniScorer

        self.scorer = OmniScorer(
            str(self.resolved.path),
            device=self.device,
            batch_size=self.batch_size,
            max_length=self.max_length,
            torch_dtype=self.dtype,
            # Never execute code that came with a checkpoint unless the run says so.
            allow_remote_code=self.family == "score_predictor" and self.trust_remote_code,
        )
        # omniscore 0.1.0 applies torch_dtype to the scoring head alone: the backbone, built from its config inside
        # the model's __init__, stays float32, and a bfloat16/float16 run fails on a dtype mismatch. One dtype for all.
        self.scorer.model.to(self.dtype)
        if self.scorer.input_format != self.input_format():
            raise MetricError(
                f"OmniScore: the package formats {self.resolved.model_id}'s input differently than the signature says"
            )

    def score_batch(self, segments: Sequence[Segment]) -> BatchResult:
        result = self.scorer.score(
            [s.mt for s in segments],
            references=[s.ref for s in segments],
            sources=[s.src for s in segments],
            tasks=[self.task] * len(segments) if self.task else None,
            batch_size=self.batch_size,
        )
        matrix = result.scores.tolist()
        extras = {name: [row[j] for row in matrix] for j, name in enumerate(result.score_names)}
        return BatchResult(scores=[sum(row) / len(row) for row in matrix], extras=extras)

    def tokenizer_name(self) -> str | None:
        return self.resolved.model_id

    def extra_signature(self) -> dict[str, Any]:
        from omniscore.formatting import format_example

        template = format_example(
            "{mt}", reference="{ref}", source="{src}", task=self.task, input_format=self.input_format()
        )
        return {
            "checkpoint_format": self.family,
            "trust_remote_code": self.trust_remote_code,
            "remote_code_sha256": self.code_sha256,
            "task": self.task,
            "input_format": template,
            "max_length": self.max_length,
            "dtype_from": self.dtype_from,
            "score": "mean of the dimensions",
        }


register_model_metric(
    OmniScoreScorer,
    DEFAULT_MODEL,
    needs_source=True,
    score_range=(1.0, 5.0),
    takes=("task", "max_length"),
    description="OmniScore: informativeness, clarity, plausibility, faithfulness (1–5); legacy checkpoints need --trust-remote-code",
)
