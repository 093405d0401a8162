"""Answer similarity for AskQE: token F1 (default), exact match, chrF, BLEU, SBERT cosine. Pure Python
except SBERT (sentence-transformers on the packaged MiniLM, loaded on first use)."""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize(text: str) -> str:
    """SQuAD-style: lower case, no punctuation, no English articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1(pred: str, gold: str) -> float:
    p, g = normalize(pred).split(), normalize(gold).split()
    if not p and not g:
        return 1.0
    common = Counter(p) & Counter(g)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p), overlap / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(pred: str, gold: str) -> float:
    return float(normalize(pred) == normalize(gold))


def chrf(pred: str, gold: str) -> float:
    from sacrebleu.metrics import CHRF

    return CHRF().sentence_score(pred, [gold]).score / 100.0


def bleu(pred: str, gold: str) -> float:
    from sacrebleu.metrics import BLEU

    return BLEU(effective_order=True).sentence_score(pred, [gold]).score / 100.0


class _Sbert:
    model = None

    def __call__(self, pred: str, gold: str) -> float:
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


SIMILARITIES: dict[str, Callable[[str, str], float]] = {"f1": f1, "em": exact_match, "chrf": chrf, "bleu": bleu, "sbert": _Sbert()}
