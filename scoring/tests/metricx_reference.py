"""Tiny MetricX checkpoints in the published format, rebuilt bit for bit from a seed in any environment.

Used twice: by ``test_reference.py`` (the project's MetricX against ``fixtures/metricx_reference.json``)
and by ``regen_metricx_fixture.py``, which runs google-research/metricx's own ``predict.py`` on the same
checkpoints in the reference's pinned environment (transformers 4.30.2) and writes that fixture. So this
module imports only numpy, torch, safetensors and sentencepiece (no transformers, nothing of the project),
and every number comes from numpy's seeded generator, not from a library's initialiser.

The checkpoint is an mT5 with mT5's real vocabulary size (250,112 rows), because the reference reads the
score at the hard-coded id 250089, but only d_model = 16 and two layers each side (about 16 MB in float32).
The tokenizer is a T5 SentencePiece model written directly (no training): pad 0, eos 1, unk 2, the
characters and words of the fixture texts, then UNUSED pieces up to 250,000 so that, with T5's 100 extra
ids, ``<extra_id_10>`` is 250089 exactly as in mT5.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

VOCAB = 250_112  # mT5's embedding rows
SPM_PIECES = 250_000  # mT5's SentencePiece vocabulary; + 100 extra ids = 250,100 tokens
SCORE_ID = 250_089
CONFIG = dict(
    d_model=16,
    d_kv=8,
    d_ff=32,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=2,
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
    feed_forward_proj="gated-gelu",
    layer_norm_epsilon=1e-6,
    dropout_rate=0.0,
    is_encoder_decoder=True,
    pad_token_id=0,
    eos_token_id=1,
    decoder_start_token_id=0,
    vocab_size=VOCAB,
    model_type="mt5",
    architectures=["MT5ForConditionalGeneration"],
)
# (name, dtype, tie_word_embeddings)
CHECKPOINTS = [
    ("float32-untied", "float32", False),
    ("bfloat16-untied", "bfloat16", False),
    ("float32-tied", "float32", True),
    ("bfloat16-tied", "bfloat16", True),
]

TRIPLETS = [
    ("The cat sat on the mat.", "Die Katze saß auf der Matte.", "Die Katze sass auf der Matte."),
    (
        "It rained all day in the city.",
        "Es regnete den ganzen Tag in der Stadt.",
        "In der Stadt regnete es den ganzen Tag.",
    ),
    ("Please close the door.", "Bitte schließe die Tür.", "Bitte mach die Tür zu."),
    ("The meeting starts at nine.", "Das Treffen beginnt um neun.", "Die Sitzung beginnt um neun Uhr."),
    ("He bought three apples.", "Er kaufte drei Äpfel.", "Er hat drei Äpfel gekauft."),
    ("The museum is closed on Mondays.", "Das Museum ist montags geschlossen.", "Montags ist das Museum zu."),
    ("We need more time.", "Wir brauchen mehr Zeit.", "Wir benötigen mehr Zeit."),
    ("The train was late again.", "Der Zug war wieder spät.", "Der Zug hatte wieder Verspätung."),
    (
        "She writes a letter to her sister.",
        "Sie schreibt ihrer Schwester einen Brief.",
        "Sie schreibt einen Brief an ihre Schwester.",
    ),
    ("The weather will improve tomorrow.", "Das Wetter wird morgen schlechter.", "Morgen wird das Wetter besser."),
    ("Turn left at the bridge.", "Biegen Sie an der Brücke rechts ab.", "An der Brücke links abbiegen."),
    ("A small dog.", "Ein kleiner Hund.", "Ein kleiner Hund."),
    ("这本书很有意思。", "Dieses Buch ist sehr interessant.", "Das Buch ist sehr spannend."),
    ("", "Leer.", "Leer."),
]


def _rng(name: str, seed: int) -> np.random.Generator:
    # One stream per tensor name: a tensor's values do not depend on which other tensors a version lists.
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def weights(tied: bool, seed: int = 14) -> dict[str, np.ndarray]:
    """float32 tensors named as MT5ForConditionalGeneration saves them (``shared`` once, no embed_tokens)."""
    d, kv, ff, h = CONFIG["d_model"], CONFIG["d_kv"] * CONFIG["num_heads"], CONFIG["d_ff"], CONFIG["num_heads"]
    shapes: dict[str, tuple[int, ...]] = {"shared.weight": (VOCAB, d), "lm_head.weight": (VOCAB, d)}

    def attention(prefix: str, bias: bool) -> None:
        for proj in "qkv":
            shapes[f"{prefix}.{proj}.weight"] = (kv, d)
        shapes[f"{prefix}.o.weight"] = (d, kv)
        if bias:
            shapes[f"{prefix}.relative_attention_bias.weight"] = (CONFIG["relative_attention_num_buckets"], h)

    def feed_forward(prefix: str) -> None:
        shapes[f"{prefix}.DenseReluDense.wi_0.weight"] = (ff, d)
        shapes[f"{prefix}.DenseReluDense.wi_1.weight"] = (ff, d)
        shapes[f"{prefix}.DenseReluDense.wo.weight"] = (d, ff)
        shapes[f"{prefix}.layer_norm.weight"] = (d,)

    for i in range(CONFIG["num_layers"]):
        attention(f"encoder.block.{i}.layer.0.SelfAttention", i == 0)
        shapes[f"encoder.block.{i}.layer.0.layer_norm.weight"] = (d,)
        feed_forward(f"encoder.block.{i}.layer.1")
    shapes["encoder.final_layer_norm.weight"] = (d,)
    for i in range(CONFIG["num_decoder_layers"]):
        attention(f"decoder.block.{i}.layer.0.SelfAttention", i == 0)
        shapes[f"decoder.block.{i}.layer.0.layer_norm.weight"] = (d,)
        attention(f"decoder.block.{i}.layer.1.EncDecAttention", False)
        shapes[f"decoder.block.{i}.layer.1.layer_norm.weight"] = (d,)
        feed_forward(f"decoder.block.{i}.layer.2")
    shapes["decoder.final_layer_norm.weight"] = (d,)

    out = {}
    for name, shape in shapes.items():
        rng = _rng(name, seed)
        if name.endswith("layer_norm.weight"):
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("relative_attention_bias.weight"):
            value = 0.5 * rng.standard_normal(shape)
        elif name in ("shared.weight", "lm_head.weight"):
            value = rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape) / np.sqrt(shape[1])
        out[name] = value
    # Aim the score row so that most scores land inside MetricX's clip range [0, 25]: the decoder always
    # starts from token 0, so a strong token-0 embedding gives its output a common direction; the row is
    # 12.5 along it plus noise. (Weights only; the forward pass is the model's own.)
    out["shared.weight"][0] *= 4.0
    start = out["shared.weight"][0]
    unit = start / np.sqrt(np.sum(start * start))
    scale = np.sqrt(d) if tied else 1.0  # a tied config scales the decoder output by d^-0.5 before lm_head
    row = _rng("score-row", seed).standard_normal(d)
    out["lm_head.weight"][SCORE_ID] = scale * (12.5 / np.sqrt(d) * unit + 1.2 * row / np.sqrt(d))
    return {k: v.astype(np.float32) for k, v in out.items()}


def _pieces() -> list[str]:
    chars, words = set(), set()
    for triplet in TRIPLETS:
        for text in triplet:
            for word in text.split():
                words.add("▁" + word)
                chars.update(word)
    for prefix in ("source:", "candidate:", "reference:"):
        words.add("▁" + prefix)
        chars.update(prefix)
    return sorted(words) + sorted(chars) + ["▁"]


def write_tokenizer(d: Path, pieces: int = SPM_PIECES) -> Path:
    """A T5 tokenizer directory whose SentencePiece model has mT5's 250,000 pieces (mostly UNUSED); with
    fewer ``pieces`` its ``<extra_id_10>`` is not mT5's id."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    model = pb.ModelProto()
    spec = model.trainer_spec
    spec.model_type = pb.TrainerSpec.UNIGRAM
    spec.vocab_size = pieces
    spec.pad_id, spec.eos_id, spec.unk_id, spec.bos_id = 0, 1, 2, -1
    spec.pad_piece, spec.eos_piece, spec.unk_piece = "<pad>", "</s>", "<unk>"
    norm = model.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = True
    norm.remove_extra_whitespaces = True
    norm.escape_whitespaces = True
    for piece, kind in (
        ("<pad>", pb.ModelProto.SentencePiece.CONTROL),
        ("</s>", pb.ModelProto.SentencePiece.CONTROL),
        ("<unk>", pb.ModelProto.SentencePiece.UNKNOWN),
    ):
        model.pieces.add(piece=piece, score=0.0, type=kind)
    for piece in _pieces():
        # Longer pieces score higher: whole words win, characters are the fallback.
        model.pieces.add(piece=piece, score=-10.0 + min(len(piece), 9), type=pb.ModelProto.SentencePiece.NORMAL)
    for i in range(pieces - len(model.pieces)):
        model.pieces.add(piece=f"<unused{i}>", score=0.0, type=pb.ModelProto.SentencePiece.UNUSED)
    d.mkdir(parents=True, exist_ok=True)
    (d / "spiece.model").write_bytes(model.SerializeToString())
    special = [f"<extra_id_{i}>" for i in range(100)]
    (d / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "T5Tokenizer",
                "extra_ids": 100,
                "additional_special_tokens": special,
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
                "model_max_length": 1536,
                "legacy": True,
            }
        )
    )
    (d / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
                "additional_special_tokens": special,
            }
        )
    )
    return d


def write_checkpoint(d: Path, dtype: str, tied: bool, seed: int = 14) -> Path:
    import torch
    from safetensors.torch import save_file

    d.mkdir(parents=True, exist_ok=True)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    tensors = {k: torch.from_numpy(v).to(torch_dtype).contiguous() for k, v in weights(tied, seed).items()}
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    (d / "config.json").write_text(json.dumps({**CONFIG, "torch_dtype": dtype, "tie_word_embeddings": tied}, indent=1))
    return d


def build_all(root: Path) -> dict[str, Path]:
    """The tokenizer directory and one directory per checkpoint of CHECKPOINTS."""
    paths = {"tokenizer": write_tokenizer(root / "tokenizer")}
    for name, dtype, tied in CHECKPOINTS:
        paths[name] = write_checkpoint(root / name, dtype, tied)
    return paths
