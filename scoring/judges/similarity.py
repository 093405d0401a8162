"""Answer similarity for AskQE: token F1 (default), exact match, chrF, BLEU, SBERT cosine. Pure Python
except SBERT (sentence-transformers on the packaged MiniLM, loaded on first use).

Answers are normalised first, as the authors' ``compare_answers`` (``evaluation/string-comparison/utils.py``)
does: punctuation, English articles and repeated spaces removed, case kept (their lower-casing is commented
out). ``squad`` normalisation lower-cases too, as SQuAD's evaluation script. chrF and BLEU are sacrebleu's
sentence scores on the normalised strings, divided by 100; F1 of two answers without a common token is 0,
empty ones included (their code; SBERT compares the raw answers).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_askqe(text: str) -> str:
    """The authors' normalisation: no punctuation, no English articles, single spaces; case kept."""
    text = "".join(ch for ch in text if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_squad(text: str) -> str:
    """SQuAD-style: lower case, no punctuation, no English articles, single spaces."""
    return normalize_askqe(text.lower())


NORMALIZATIONS: dict[str, Callable[[str], str]] = {"askqe": normalize_askqe, "squad": normalize_squad}


def f1(pred: str, gold: str, norm: Callable[[str], str] = normalize_askqe) -> float:
    p, g = norm(pred).split(), norm(gold).split()
    common = Counter(p) & Counter(g)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p), overlap / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(pred: str, gold: str, norm: Callable[[str], str] = normalize_askqe) -> float:
    return float(norm(pred) == norm(gold))


def chrf(pred: str, gold: str, norm: Callable[[str], str] = normalize_askqe) -> float:
    from sacrebleu.metrics import CHRF

    return CHRF().sentence_score(norm(pred), [norm(gold)]).score / 100.0


def bleu(pred: str, gold: str, norm: Callable[[str], str] = normalize_askqe) -> float:
    import sacrebleu

    return sacrebleu.sentence_bleu(norm(pred), [norm(gold)]).score / 100.0


class _Sbert:
    model = None

    def __call__(self, pred: str, gold: str, norm=None) -> float:
        return self.batch([(pred, gold)])[0]

    def batch(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        if _Sbert.model is None:
            from sentence_transformers import SentenceTransformer

            from scoring.metrics.sbert import packaged_minilm

            _Sbert.model = SentenceTransformer(str(packaged_minilm()), device="cpu")
        a = _Sbert.model.encode([p for p, _ in pairs], convert_to_tensor=True, normalize_embeddings=True)
        b = _Sbert.model.encode([g for _, g in pairs], convert_to_tensor=True, normalize_embeddings=True)
        return [float(x) for x in (a * b).sum(dim=1).tolist()]


SIMILARITIES: dict[str, Callable[..., float]] = {
    "f1": f1,
    "em": exact_match,
    "chrf": chrf,
    "bleu": bleu,
    "sbert": _Sbert(),
}
