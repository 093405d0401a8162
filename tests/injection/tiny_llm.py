"""A tiny chat model in the Hugging Face layout, for vLLM's in-process engine in tests (no Hub access here).

Run in the vLLM environment: ``.venv-vllm/bin/python tests/injection/tiny_llm.py OUT_DIR CORPUS.txt``.
A byte-level BPE tokenizer is trained on the corpus (the test's references and sources, so every script
tokenizes), a chat template is set, and a 2-layer Llama is saved in safetensors. vLLM then loads the
directory exactly as it loads a downloaded model.

The weights are random except one read-out, aimed so that sampled answers stay short: the closing
quote's row of ``lm_head`` reads a residual dimension that the embeddings hold constant. A random model
otherwise keeps writing inside the JSON string until max_tokens. Weights only; the code under test is
unchanged, and the answers are noise that the checks must flag.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant\n{% endif %}"
)
HIDDEN = 128  # two heads of 64: a head size vLLM's CPU attention supports
CONSTANT = 8.0  # the value of residual dimension 0 for every token


def build(out: Path, corpus: list[str]) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=3000,
            special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] = CONSTANT
        for layer in model.model.layers:  # nothing writes to dimension 0, so it stays constant
            layer.self_attn.o_proj.weight[0, :] = 0
            layer.mlp.down_proj.weight[0, :] = 0
        model.lm_head.weight.mul_(5)  # logits that depend on the context enough for answers to differ
        model.lm_head.weight[:, 0] = 0
        quote = tokenizer.convert_tokens_to_ids('"')
        # The final norm scales dimension 0 to about sqrt(HIDDEN)·CONSTANT/rms ≈ 10; a weight of 0.4 gives the
        # closing quote a logit near 4 against about 0 for the rest: at temperature 0.5 an answer string
        # ends after about ten tokens.
        model.lm_head.weight[quote, 0] = 0.3
    model.save_pretrained(out)
    return out


if __name__ == "__main__":
    target, corpus_file = Path(sys.argv[1]), Path(sys.argv[2])
    build(target, corpus_file.read_text(encoding="utf-8").splitlines())
    print(target)
