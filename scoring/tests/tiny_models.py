"""Tiny random checkpoints in each metric's real format, saved to a directory and then loaded by the
package exactly as a downloaded model would be (from_pretrained / COMET's load_from_checkpoint)."""

from __future__ import annotations

from pathlib import Path

import torch

from scoring.tests.releases import corpus_lines

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def train_spm(d: Path, vocab_size: int = 300, **extra) -> Path:
    import sentencepiece as spm

    d.mkdir(parents=True, exist_ok=True)
    text = d / "corpus.txt"
    text.write_text("\n".join(corpus_lines() * 3), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(d / "sp"),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        **extra,
    )
    return d / "sp.model"


def xlmr_encoder(d: Path) -> Path:
    """2-layer XLM-R config + tiny trained tokenizer (what a COMET checkpoint names as pretrained_model)."""
    from transformers import XLMRobertaConfig, XLMRobertaTokenizer

    torch.manual_seed(0)
    sp = train_spm(d / "spm")
    tok = XLMRobertaTokenizer(vocab_file=str(sp))
    tok.save_pretrained(d)
    XLMRobertaConfig(
        vocab_size=len(tok), max_position_embeddings=514, pad_token_id=tok.pad_token_id, **TINY
    ).save_pretrained(d)
    return d


def comet_checkpoint(d: Path, kind: str) -> Path:
    """A COMET model directory (hparams.yaml + checkpoints/model.ckpt) with a tiny XLM-R encoder."""
    import pytorch_lightning as pl
    import yaml
    from comet.models import RegressionMetric, UnifiedMetric, XCOMETMetric

    torch.manual_seed(1)
    enc = xlmr_encoder(d / "encoder")
    common = dict(
        pretrained_model=str(enc), encoder_model="XLM-RoBERTa", load_pretrained_weights=False, hidden_sizes=[16]
    )
    if kind == "regression":
        model = RegressionMetric(layer="mix", **common)
    elif kind == "kiwi":
        model = UnifiedMetric(input_segments=["mt", "src"], word_level_training=False, word_layer=2, **common)
    elif kind == "xcomet":
        model = XCOMETMetric(word_layer=2, **common)
    else:
        raise ValueError(kind)
    hparams = dict(model.hparams)
    (d / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.save(
        {"state_dict": model.state_dict(), "pytorch-lightning_version": pl.__version__, "hyper_parameters": hparams},
        d / "checkpoints" / "model.ckpt",
    )
    (d / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    return d


def mt5_regression(d: Path) -> Path:
    """A 2-layer mT5 in MetricX's layout (MT5 weights) with a tiny T5 tokenizer that has <extra_id_N>."""
    from transformers import MT5Config, MT5ForConditionalGeneration, T5Tokenizer

    torch.manual_seed(2)
    sp = train_spm(d / "spm", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    tok = T5Tokenizer(vocab_file=str(sp), extra_ids=100, legacy=False)
    tok.save_pretrained(d)
    config = MT5Config(
        vocab_size=len(tok),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=0,
    )
    model = MT5ForConditionalGeneration(config).eval()
    # A random read-out logit sits mostly outside MetricX's clip range [0, 25]. Re-aim the score token's
    # row of lm_head so that the test corpus lands inside it, spread out (weights only; code unchanged).
    texts = [f"candidate: {line} reference: {line[::-1]}" for line in corpus_lines()]
    enc = tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model(**enc, decoder_input_ids=torch.zeros((len(texts), 1), dtype=torch.long), output_hidden_states=True)
        h = out.decoder_hidden_states[-1][:, 0, :]
        m = h.mean(0)
        row = tok.convert_tokens_to_ids("<extra_id_10>")
        w = model.lm_head.weight[row].clone()
        w = w - (w @ m) / (m @ m) * m
        spread = (h @ w).std()
        model.lm_head.weight[row] = m * (12.5 / (m @ m)) + w * (4.0 / spread)
    model.save_pretrained(d)
    return d


def bleurt(d: Path) -> Path:
    from bleurt_pytorch import BleurtConfig, BleurtForSequenceClassification
    from bleurt_pytorch.bleurt.tokenization_bleurt_sp import BleurtSPTokenizer

    torch.manual_seed(3)
    sp = train_spm(d / "spm", pad_id=0, unk_id=1, bos_id=2, eos_id=3)
    tok = BleurtSPTokenizer(vocab_file=str(sp))
    tok.save_pretrained(d)
    config = BleurtConfig(vocab_size=len(tok), max_position_embeddings=512, **TINY)
    BleurtForSequenceClassification(config).save_pretrained(d)
    return d


def bert(d: Path) -> Path:
    """2-layer BERT with a WordPiece vocabulary trained on the corpus (for BERTScore)."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(4)
    d.mkdir(parents=True, exist_ok=True)
    wp = BertWordPieceTokenizer(lowercase=False)
    wp.train_from_iterator(corpus_lines() * 3, vocab_size=400, min_frequency=1)
    wp.save_model(str(d))
    tok = BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=False)
    tok.save_pretrained(d)
    BertModel(BertConfig(vocab_size=len(tok), max_position_embeddings=512, **TINY)).save_pretrained(d)
    return d


def omniscore(d: Path) -> Path:
    """An OmniScore checkpoint (model_type omniscore, four dimensions) on a tiny BERT backbone."""
    from omniscore import OmniScoreConfig
    from omniscore.modeling_omniscore import OmniScoreModel
    from transformers import AutoTokenizer

    backbone = bert(d / "backbone")
    torch.manual_seed(5)
    model = OmniScoreModel.from_backbone(
        str(backbone), score_names=["informativeness", "clarity", "plausibility", "faithfulness"], num_scores=4
    )
    assert isinstance(model.config, OmniScoreConfig)
    model.save_pretrained(d)
    AutoTokenizer.from_pretrained(str(backbone)).save_pretrained(d)
    return d


# The legacy OmniScore format (model_type "score_predictor", as QCRI/OmniScore-deberta-v3 is published):
# config + weights + the head as Python files that the checkpoint ships and the omniscore package imports.
# The published files are not reachable offline; these follow the paper's description (DeBERTa-v3 encoder,
# [CLS] pooling, four parallel linear heads, S(x) = 1 + 4·sigmoid(x)) and the package's expectations
# (ScorePredictorConfig / ScorePredictorModel, config.score_names, outputs with .scores).
LEGACY_CONFIG_PY = """
from transformers import PretrainedConfig


class ScorePredictorConfig(PretrainedConfig):
    model_type = "score_predictor"

    def __init__(self, encoder_config=None, score_names=None, **kwargs):
        super().__init__(**kwargs)
        self.encoder_config = encoder_config or {}
        self.score_names = score_names or ["informativeness", "clarity", "plausibility", "faithfulness"]
"""

LEGACY_MODEL_PY = """
from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.modeling_outputs import ModelOutput

from configuration_score_predictor import ScorePredictorConfig


@dataclass
class ScorePredictorOutput(ModelOutput):
    scores: torch.FloatTensor = None


class ScorePredictorModel(PreTrainedModel):
    config_class = ScorePredictorConfig
    base_model_prefix = "encoder"

    def __init__(self, config):
        super().__init__(config)
        encoder_config = dict(config.encoder_config)
        self.encoder = AutoModel.from_config(AutoConfig.for_model(encoder_config.pop("model_type"), **encoder_config))
        hidden = self.encoder.config.hidden_size
        self.heads = nn.ModuleList([nn.Linear(hidden, 1) for _ in config.score_names])
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        raw = torch.cat([head(hidden) for head in self.heads], dim=-1)
        return ScorePredictorOutput(scores=1.0 + 4.0 * torch.sigmoid(raw))
"""


def omniscore_legacy(d: Path) -> Path:
    """A legacy ``score_predictor`` OmniScore checkpoint on a tiny DeBERTa-v2/v3 encoder, with its code files."""
    import importlib.util
    import sys

    from transformers import DebertaV2Config, DebertaV2Tokenizer

    d.mkdir(parents=True, exist_ok=True)
    (d / "configuration_score_predictor.py").write_text(LEGACY_CONFIG_PY)
    (d / "modeling_score_predictor.py").write_text(LEGACY_MODEL_PY)
    sp = train_spm(d / "spm", pad_id=0, unk_id=3, bos_id=1, eos_id=2, control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    tok = DebertaV2Tokenizer(
        vocab_file=str(sp),
        bos_token="[CLS]",
        eos_token="[SEP]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="[MASK]",
    )
    tok.save_pretrained(d)
    encoder = DebertaV2Config(
        vocab_size=len(tok),
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=64,
        pos_att_type=["p2c", "c2p"],
        pad_token_id=tok.pad_token_id,
        **TINY,
    ).to_dict()
    sys.path.insert(0, str(d))
    try:
        config_module = importlib.util.module_from_spec(
            spec := importlib.util.spec_from_file_location(
                "configuration_score_predictor", d / "configuration_score_predictor.py"
            )
        )
        sys.modules["configuration_score_predictor"] = config_module
        spec.loader.exec_module(config_module)
        model_module = importlib.util.module_from_spec(
            spec := importlib.util.spec_from_file_location(
                "modeling_score_predictor", d / "modeling_score_predictor.py"
            )
        )
        spec.loader.exec_module(model_module)
        torch.manual_seed(6)
        config = config_module.ScorePredictorConfig(encoder_config=encoder)
        config.auto_map = {
            "AutoConfig": "configuration_score_predictor.ScorePredictorConfig",
            "AutoModel": "modeling_score_predictor.ScorePredictorModel",
        }
        model_module.ScorePredictorModel(config).save_pretrained(d)
    finally:
        sys.path.remove(str(d))
        sys.modules.pop("configuration_score_predictor", None)
    return d


def order_sensitive_nli(d: Path) -> Path:
    """A two-label [entailment, contradiction] sequence classifier, in a local directory with a DeBERTa-v3
    tokenizer, whose answer depends on the order of its pair: it says entailment when the tokens of the
    first text (textA, the hypothesis on potsawee/deberta-v3-large-mnli's card) occur as one run in the
    second (textB, the premise), and contradiction otherwise. Fed (short fact, long source) it entails a
    fact the source states; fed the other way round it contradicts every such fact. Its model type is
    registered with transformers' Auto classes in this process (``register_order_sensitive_nli``)."""
    from transformers import DebertaV2Tokenizer

    register_order_sensitive_nli()
    config_cls, model_cls = _ORDER_NLI
    sp = train_spm(d / "spm", pad_id=0, unk_id=3, bos_id=1, eos_id=2, control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    tok = DebertaV2Tokenizer(
        vocab_file=str(sp),
        bos_token="[CLS]",
        eos_token="[SEP]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="[MASK]",
    )
    tok.save_pretrained(d)
    model_cls(config_cls(sep_id=tok.sep_token_id, cls_id=tok.cls_token_id, num_labels=2)).save_pretrained(d)
    return d


_ORDER_NLI: list = []


def register_order_sensitive_nli() -> None:
    if _ORDER_NLI:
        return
    from transformers import AutoConfig, AutoModelForSequenceClassification, PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import SequenceClassifierOutput

    class OrderNliConfig(PretrainedConfig):
        model_type = "order-sensitive-nli"

        def __init__(self, sep_id: int = 2, cls_id: int = 1, **kw):
            super().__init__(**kw)
            self.sep_id, self.cls_id = sep_id, cls_id

    class OrderNli(PreTrainedModel):
        config_class = OrderNliConfig

        def __init__(self, config):
            super().__init__(config)
            self.unused = torch.nn.Linear(1, 1)  # a checkpoint needs a weight; the rule below needs none

        def _init_weights(self, module):
            pass

        def forward(self, input_ids=None, attention_mask=None, **_):
            logits = []
            for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
                ids = [t for t, m in zip(ids, mask) if m and t != self.config.cls_id]
                cut = ids.index(self.config.sep_id)
                a, b = ids[:cut], [t for t in ids[cut + 1 :] if t != self.config.sep_id]
                inside = any(b[i : i + len(a)] == a for i in range(len(b) - len(a) + 1)) if a else False
                logits.append([5.0, 0.0] if inside else [0.0, 5.0])
            return SequenceClassifierOutput(logits=torch.tensor(logits))

    AutoConfig.register(OrderNliConfig.model_type, OrderNliConfig)
    AutoModelForSequenceClassification.register(OrderNliConfig, OrderNli)
    _ORDER_NLI.extend([OrderNliConfig, OrderNli])
