"""String-overlap metrics through sacrebleu's own sentence-level code: spBLEU, chrF++, BLEU, chrF, TER.

Scores are exactly what ``sacrebleu.metrics.X(...).sentence_score(mt, [ref])`` gives; the only thing we
add is choosing the tokenizer per target language (declared in the signature) and loading the FLORES-200
SentencePiece model from a configured file when offline.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from scoring.registry import (
    BatchResult,
    Family,
    MetricError,
    MetricSpec,
    Scorer,
    Segment,
    refuse_unknown_options,
    register,
)

# Targets written without spaces: 13a would treat a whole sentence as one token.
CHAR_TOKENIZED = {"ja", "th", "lo", "my", "km", "bo"}
SPM_ENV = "XQMEVAL_SPM_MODEL"


def bleu_tokenizer_for(target_lang: str) -> str:
    if target_lang == "zh":
        return "zh"
    if target_lang in CHAR_TOKENIZED:
        return "char"
    return "13a"


@lru_cache(maxsize=8)
def _file_sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def flores200_tokenizer(spm_model: str | None):
    """sacrebleu's Flores200Tokenizer, loaded from ``spm_model`` (or $XQMEVAL_SPM_MODEL) when given.

    Without a file, sacrebleu's own cache (``$SACREBLEU/models/flores200sacrebleuspm``) is used, and
    downloaded when online."""
    import sentencepiece as spm
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, Flores200Tokenizer
    from sacrebleu.utils import SACREBLEU_DIR

    path = spm_model or os.environ.get(SPM_ENV)
    if not path:
        cached = Path(SACREBLEU_DIR) / "models" / os.path.basename(SPM_MODELS["flores200"]["url"])
        if cached.is_file():
            path = str(cached)
        else:
            try:
                return Flores200Tokenizer(), str(cached)
            except Exception as exc:  # offline
                raise MetricError(
                    f"spBLEU needs the FLORES-200 SentencePiece model: not at {cached} and it cannot be "
                    f"downloaded ({type(exc).__name__}). Pass --spm-model FILE or set {SPM_ENV}=FILE "
                    "(the file is flores200_sacrebleu_tokenizer_spm.model)."
                ) from None
    if not Path(path).is_file():
        raise MetricError(f"spBLEU SentencePiece model {path!r} does not exist (from --spm-model or {SPM_ENV})")
    tok = Flores200Tokenizer.__new__(Flores200Tokenizer)  # same class and __call__, our file
    tok.name = SPM_MODELS["flores200"]["signature"]
    tok.sp = spm.SentencePieceProcessor()
    tok.sp.Load(str(path))
    return tok, str(path)


class SacrebleuScorer(Scorer):
    """One sacrebleu metric object per target language (they differ only in tokenizer)."""

    def __init__(
        self,
        name: str,
        make: Callable[[str], Any],
        extra_signature: dict | None = None,
        batch_size: int = 0,
        **unused: Any,
    ):
        import sacrebleu

        refuse_unknown_options(name, unused, takes=())
        self.name = name
        self._make = make
        self._objects: dict[str, Any] = {}
        self._extra = extra_signature or {}
        self._version = sacrebleu.__version__
        self.batch_size = batch_size

    def _metric(self, target_lang: str):
        obj = self._objects.get(target_lang)
        if obj is None:
            obj = self._objects[target_lang] = self._make(target_lang)
            obj.num_refs = 1  # one reference per triplet; sacrebleu's signature needs it before scoring
        return obj

    def score(self, segments: Sequence[Segment]) -> BatchResult:
        scores = []
        for seg in segments:
            scores.append(self._metric(seg.target_lang).sentence_score(seg.mt, [seg.ref]).score)
        return BatchResult(scores=scores)

    def signature(self, target_lang: str = "") -> dict[str, Any]:
        obj = self._metric(target_lang)
        return {
            "metric": self.name,
            "library": "sacrebleu",
            "library_version": self._version,
            "sacrebleu_signature": str(obj.get_signature()),
            "model": None,
            "model_revision": None,
            "tokenizer": getattr(obj, "tokenizer_signature", None) or obj.get_signature().info.get("tok"),
            "batch_size": None,  # sentence by sentence; batching does not apply
            "dtype": None,
            **self._extra,
        }


def _spbleu(spm_model: str | None = None, **kw: Any) -> SacrebleuScorer:
    from sacrebleu.metrics import BLEU

    tok, path = flores200_tokenizer(spm_model)

    def make(_lang: str):
        bleu = BLEU(tokenize="none", effective_order=True)
        bleu.tokenizer = tok
        bleu.tokenizer_signature = tok.signature()
        return bleu

    extra = {"spm_model_file": os.path.basename(path), "spm_model_sha256": _file_sha256(path)}
    return SacrebleuScorer("spBLEU", make, extra, **kw)


def _bleu(**kw: Any) -> SacrebleuScorer:
    from sacrebleu.metrics import BLEU

    return SacrebleuScorer("BLEU", lambda lang: BLEU(tokenize=bleu_tokenizer_for(lang), effective_order=True), **kw)


def _chrf(word_order: int, name: str):
    def build(**kw: Any) -> SacrebleuScorer:
        from sacrebleu.metrics import CHRF

        return SacrebleuScorer(name, lambda _lang: CHRF(word_order=word_order), **kw)

    return build


def _ter(**kw: Any) -> SacrebleuScorer:
    from sacrebleu.metrics import TER

    # asian_support splits CJK characters; without it a Chinese sentence is one "word".
    return SacrebleuScorer("TER", lambda lang: TER(asian_support=lang in {"zh", "ja", "ko"}), **kw)


def _string(name: str, build, higher: bool, rng, description: str) -> MetricSpec:
    return register(
        MetricSpec(
            name=name,
            family=Family.SEQUENCE,
            needs_source=False,
            needs_reference=True,
            higher_is_better=higher,
            score_range=rng,
            default_model=None,
            device="cpu",
            build=build,
            description=description,
        )
    )


_string("spBLEU", _spbleu, True, (0.0, 100.0), "sentence BLEU on FLORES-200 SentencePiece pieces, effective order")
_string("chrF++", _chrf(2, "chrF++"), True, (0.0, 100.0), "sentence chrF with word n-grams up to 2")
_string("chrF", _chrf(0, "chrF"), True, (0.0, 100.0), "sentence chrF (character 6-grams)")
_string("BLEU", _bleu, True, (0.0, 100.0), "sentence BLEU, effective order; 13a (zh: zh, unspaced scripts: char)")
_string("TER", _ter, False, (0.0, None), "sentence translation edit rate (lower is better)")
