"""GPU figures: every neural metric at its real model shape (random weights) through ``python -m scoring run``,
and COMET-22 against unbabel-comet's own ``comet-score`` on the same checkpoint and triplets.

No checkpoint can be downloaded here, but throughput, memory and exactness do not need trained weights: a
model of the real architecture and size with random weights runs the same kernels. Two steps:

1. Here (the scoring virtualenv, plus a release directory):

       .venv-scoring/bin/python perf/bench_gpu.py prepare .gpu/tok
       .venv/bin/python manage.py release PROJECT --version 1.0.0 --out .gpu/release   # e.g. the shared data

   trains the tokenizers on the shared references (SentencePiece unigram for the XLM-R, mT5 and RemBERT
   shapes, WordPiece for the BERT and DeBERTa shapes; ``VOCAB`` pieces each, fewer than the real models'
   but placed in embeddings of the real size) and writes each shape's config beside its tokenizer.
2. On the GPU machine (its ``python3`` holds torch; the scoring pins travel as wheels, see the README):

       python3 perf/bench_gpu.py run --tokenizers .gpu/tok --release .gpu/release --out OUT [--smoke]

   builds each model with random weights on the GPU, saves it in its metric's real format (COMET's
   hparams.yaml + checkpoints/model.ckpt, Hugging Face directories otherwise), and times a
   ``python -m scoring run`` subprocess per metric, end to end (interpreter start and model load
   included), polling the GPU's memory through NVML (peak used minus used before the start: the CUDA
   context counts). ``--smoke`` keeps 2 layers and 16 triplets per direction, to check the paths in a
   minute before the long run. Results: ``OUT/gpu_figures.json`` and a table on stdout.
3. ``python3 perf/bench_gpu.py sweep --metric COMET-22 --batch-sizes 128,256,512,1024 --option encode_once=true ...``
   times one metric at several batch sizes on the same model and triplets (``OUT/batch_sweep.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))
VOCAB = 32000

# The published models' architectures (their config.json files), each with the tokenizer family it needs.
XLMR_LARGE = dict(
    model_type="xlm-roberta",
    hidden_size=1024,
    num_hidden_layers=24,
    num_attention_heads=16,
    intermediate_size=4096,
    vocab_size=250002,
    max_position_embeddings=514,
    type_vocab_size=1,
    layer_norm_eps=1e-5,
)
XLMR_XL = dict(
    model_type="xlm-roberta-xl",
    hidden_size=2560,
    num_hidden_layers=36,
    num_attention_heads=32,
    intermediate_size=10240,
    vocab_size=250880,
    max_position_embeddings=514,
    type_vocab_size=1,
    layer_norm_eps=1e-5,
)
MT5_LARGE = dict(
    model_type="mt5",
    d_model=1024,
    d_kv=64,
    d_ff=2816,
    num_layers=24,
    num_decoder_layers=24,
    num_heads=16,
    vocab_size=250112,
    feed_forward_proj="gated-gelu",
    tie_word_embeddings=False,
    dense_act_fn="gelu_new",
    is_gated_act=True,
    torch_dtype="bfloat16",
)
REMBERT_BLEURT20 = dict(
    hidden_size=1152,
    num_hidden_layers=32,
    num_attention_heads=18,
    intermediate_size=3456,
    vocab_size=119547,
    max_position_embeddings=512,
    type_vocab_size=2,
)
MBERT = dict(
    model_type="bert",
    hidden_size=768,
    num_hidden_layers=12,
    num_attention_heads=12,
    intermediate_size=3072,
    vocab_size=119547,
    max_position_embeddings=512,
    type_vocab_size=2,
)
DEBERTA_V3_BASE = dict(
    model_type="deberta-v2",
    hidden_size=768,
    num_hidden_layers=12,
    num_attention_heads=12,
    intermediate_size=3072,
    vocab_size=128100,
    max_position_embeddings=512,
    type_vocab_size=0,
    relative_attention=True,
    position_buckets=256,
    norm_rel_ebd="layer_norm",
    share_att_key=True,
    pos_att_type=["p2c", "c2p"],
    position_biased_input=False,
    max_relative_positions=-1,
    layer_norm_eps=1e-7,
    hidden_act="gelu",
)

# One entry per metric: the shape it is measured at, the tokenizer family, the run's batch size and dtype, and
# how many triplets per direction the full run scores (0 = the whole release).
SHAPES = {
    "COMET-22": dict(
        shape="XLM-R large (560M), wmt22-comet-da head",
        config=XLMR_LARGE,
        tokenizer="xlmr",
        batch=256,
        dtype="float16",
        limit=0,
        comet="regression",
    ),
    "BERTScore": dict(
        shape="mBERT base (layer 9 of 12)", config=MBERT, tokenizer="bert", batch=256, dtype="float32", limit=0
    ),
    "OmniScore": dict(
        shape="DeBERTa-v3 base, 4 heads", config=DEBERTA_V3_BASE, tokenizer="bert", batch=256, dtype="bfloat16", limit=0
    ),
    "BLEURT-20": dict(
        shape="RemBERT-32 (BLEURT-20, 579M)",
        config=REMBERT_BLEURT20,
        tokenizer="bleurt",
        batch=256,
        dtype="bfloat16",
        limit=2000,
    ),
    "MetricX-24": dict(
        shape="mT5-large (1.2B), MetricX-24 hybrid large",
        config=MT5_LARGE,
        tokenizer="t5",
        batch=128,
        dtype="bfloat16",
        limit=1000,
    ),
    "xCOMET-XL": dict(
        shape="XLM-R XL (3.5B), XCOMET-XL head",
        config=XLMR_XL,
        tokenizer="xlmr",
        batch=64,
        dtype="bfloat16",
        limit=300,
        comet="xcomet",
    ),
}
# A COMET model's scoring runs after comet-score: (name for --comet-variants, result key suffix, dtype, --option
# values). float16 runs score the CLI's triplets, the others a subset. encode_once is for regression models only
# (xCOMET reads the triplet as one input and refuses it).
COMET_VARIANTS = (
    ("float16", "", "float16", ()),
    ("encode_once", "_encode_once", "float16", ("encode_once=true",)),
    ("float32", "_float32", "float32", ()),
    ("bfloat16", "_bfloat16", "bfloat16", ()),
)
COMET_OTHER_DTYPES_LIMIT = 1000  # COMET in float32 and bfloat16: at most the first 1,000 triplets per direction


# --- step 1: tokenizers ---------------------------------------------------------------------------------


def corpus() -> list[str]:
    import pyarrow.parquet as pq

    lines: set[str] = set()
    for f in sorted((SHARED / "candidates").glob("*.parquet")):
        t = pq.read_table(f, columns=["src", "ref"]).to_pydict()
        lines.update(t["src"])
        lines.update(t["ref"])
    return sorted(lines)


def prepare(out: Path) -> None:
    import sentencepiece as spm
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast, T5TokenizerFast, XLMRobertaTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    lines = corpus()
    text = out / "corpus.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def sentencepiece(name: str, **ids) -> Path:
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(out / name),
            vocab_size=VOCAB,
            model_type="unigram",
            character_coverage=0.9995,
            hard_vocab_limit=False,
            minloglevel=2,
            **ids,
        )
        return out / f"{name}.model"

    def padded(model: Path, size: int) -> Path:
        # MetricX reads its score at <extra_id_10>, id 250089 in mT5's vocabulary: 250,000 pieces, then the extra ids.
        # Unused pieces (never produced) fill the trained vocabulary up to that size.
        from sentencepiece import sentencepiece_model_pb2 as pb

        proto = pb.ModelProto()
        proto.ParseFromString(model.read_bytes())
        for i in range(len(proto.pieces), size):
            proto.pieces.add(piece=f"<unused_{i}>", score=-1e9, type=pb.ModelProto.SentencePiece.UNUSED)
        model.write_bytes(proto.SerializeToString())
        return model

    # Fast tokenizers are saved (tokenizer.json), so the GPU machine converts nothing.
    xlmr = XLMRobertaTokenizerFast(vocab_file=str(sentencepiece("xlmr")))
    xlmr.save_pretrained(out / "xlmr")
    t5 = T5TokenizerFast(
        vocab_file=str(padded(sentencepiece("t5", pad_id=0, eos_id=1, unk_id=2, bos_id=-1), 250000)), extra_ids=100
    )
    t5.save_pretrained(out / "t5")
    sentencepiece("bleurt", pad_id=0, unk_id=1, bos_id=2, eos_id=3)
    (out / "bleurt").mkdir(exist_ok=True)
    os.replace(out / "bleurt.model", out / "bleurt" / "sentencepiece.model")
    wp = BertWordPieceTokenizer(lowercase=False)
    wp.train_from_iterator(lines, vocab_size=VOCAB, min_frequency=2)
    (out / "bert").mkdir(exist_ok=True)
    wp.save_model(str(out / "bert"))
    BertTokenizerFast(vocab_file=str(out / "bert" / "vocab.txt"), do_lower_case=False).save_pretrained(out / "bert")
    for leftover in [text, *out.glob("*.model"), *out.glob("*.vocab")]:
        leftover.unlink()
    print(f"tokenizers for {len(lines)} lines written to {out}")


# --- step 2: models with random weights, on the GPU -------------------------------------------------------

TINY_DIMS = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "d_model": 64,
    "d_ff": 128,
    "d_kv": 16,
    "num_heads": 4,
}


def shaped(config: dict, smoke: bool, tiny: bool = False) -> dict:
    config = dict(config)
    if tiny:  # a CPU check of the code paths: real vocabularies and layouts, small widths
        config.update({k: v for k, v in TINY_DIMS.items() if k in config})
    if smoke or tiny:
        for key in ("num_hidden_layers", "num_layers", "num_decoder_layers"):
            if key in config:
                config[key] = 2
    return config


def build_model(metric: str, spec: dict, tok: Path, root: Path, smoke: bool, device: str = "cuda") -> Path:
    """Save a randomly initialised model of the metric's shape in the metric's own format under root/metric."""
    import shutil

    import torch

    d = root / metric
    if d.exists():
        shutil.rmtree(d)
    config = shaped(spec["config"], smoke, tiny=device == "cpu")
    torch.manual_seed(0)
    with torch.device(device):
        if "comet" in spec:
            _comet_checkpoint(d, spec, config, tok / spec["tokenizer"])
        elif metric == "MetricX-24":
            from transformers import MT5Config, MT5ForConditionalGeneration

            cfg = MT5Config(
                **{k: v for k, v in config.items() if k not in ("model_type", "torch_dtype")},
                pad_token_id=0,
                eos_token_id=1,
                decoder_start_token_id=0,
            )
            MT5ForConditionalGeneration(cfg).to(torch.bfloat16).save_pretrained(d)  # MetricX-24 ships bf16 weights
            _copy_tokenizer(tok / "t5", d)
        elif metric == "BLEURT-20":
            from bleurt_pytorch import BleurtConfig, BleurtForSequenceClassification
            from bleurt_pytorch.bleurt.tokenization_bleurt_sp import BleurtSPTokenizer

            BleurtForSequenceClassification(BleurtConfig(**config)).save_pretrained(d)
            BleurtSPTokenizer(vocab_file=str(tok / "bleurt" / "sentencepiece.model")).save_pretrained(d)
        elif metric == "BERTScore":
            from transformers import BertConfig, BertModel

            BertModel(BertConfig(**{k: v for k, v in config.items() if k != "model_type"})).save_pretrained(d)
            _copy_tokenizer(tok / "bert", d)
        elif metric == "OmniScore":
            from omniscore.modeling_omniscore import OmniScoreModel
            from transformers import DebertaV2Config, DebertaV2Model

            backbone = root / "deberta-backbone"
            DebertaV2Model(DebertaV2Config(**{k: v for k, v in config.items() if k != "model_type"})).save_pretrained(
                backbone
            )
            _copy_tokenizer(tok / "bert", backbone)
            model = OmniScoreModel.from_backbone(
                str(backbone), score_names=["informativeness", "clarity", "plausibility", "faithfulness"], num_scores=4
            )
            model.save_pretrained(d)
            _copy_tokenizer(tok / "bert", d)
        else:
            raise ValueError(metric)
    if device != "cpu":
        torch.cuda.empty_cache()
    return d


def _copy_tokenizer(src: Path, dst: Path) -> None:
    import shutil

    for f in src.iterdir():
        if f.name != "config.json":
            shutil.copy(f, dst / f.name)


def _comet_checkpoint(d: Path, spec: dict, config: dict, tok: Path) -> None:
    import pytorch_lightning as pl
    import torch
    import yaml
    from comet.models import RegressionMetric, XCOMETMetric

    encoder = d / "encoder"
    encoder.mkdir(parents=True)
    _copy_tokenizer(tok, encoder)
    (encoder / "config.json").write_text(
        json.dumps({**config, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2})
    )
    layers = config["num_hidden_layers"]
    if spec["comet"] == "regression":  # wmt22-comet-da's hparams.yaml
        model = RegressionMetric(
            encoder_model="XLM-RoBERTa",
            pretrained_model=str(encoder),
            load_pretrained_weights=False,
            layer="mix",
            layer_transformation="sparsemax",
            pool="avg",
            hidden_sizes=[3072, 1024],
            activations="Tanh",
            dropout=0.1,
            final_activation=None,
        )
    else:  # XCOMET-XL's hparams.yaml
        model = XCOMETMetric(
            encoder_model="XLM-RoBERTa-XL",
            pretrained_model=str(encoder),
            load_pretrained_weights=False,
            word_layer=layers,
        )  # its defaults are XCOMET-XL's
    hparams = dict(model.hparams)
    (d / "checkpoints").mkdir(parents=True)
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save(
        {"state_dict": state, "pytorch-lightning_version": pl.__version__, "hyper_parameters": hparams},
        d / "checkpoints" / "model.ckpt",
    )
    (d / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    del model, state


class GpuMemory:
    """Peak device memory in use while a block runs (NVML, so child processes count), minus the level before."""

    def __init__(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:
            self.nvml = None

    def used(self) -> int:
        return self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used if self.nvml else 0

    def __enter__(self):
        self.base = self.used()
        self.peak = self.base
        self._stop = threading.Event()

        def poll():
            while not self._stop.wait(0.05):
                self.peak = max(self.peak, self.used())

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_gib = (self.peak - self.base) / 2**30


def timed_process(cmd: list[str], log: Path, until: float) -> tuple[float, float, int]:
    """Run ``cmd`` (output to ``log``), stopping it at the monotonic time ``until`` (30 s at least)."""
    timeout = max(30.0, until - time.monotonic())
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with GpuMemory() as mem, log.open("w") as fh:
        started = time.perf_counter()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=REPO).returncode
        wall = time.perf_counter() - started
    return wall, mem.peak_gib, rc


def scoring_cmd(
    release: Path,
    metric: str,
    model: Path,
    out: Path,
    spec: dict,
    dtype: str,
    device: str,
    options: tuple[str, ...] = (),
) -> list[str]:
    import shutil

    shutil.rmtree(out, ignore_errors=True)  # a timed run starts from nothing (the runner would resume finished parts)
    cmd = [
        sys.executable,
        "-m",
        "scoring",
        "run",
        "--release",
        str(release),
        "--metrics",
        metric,
        "--model",
        str(model),
        "--out",
        str(out),
        "--batch-size",
        str(spec["batch"]),
        "--dtype",
        dtype,
        "--device",
        device,
        "--quiet",
    ]
    for option in options:
        cmd += ["--option", option]
    if metric == "BERTScore":  # bert-score's layer for mBERT (fewer in a smoke run's 2-layer model)
        layers = json.loads((model / "config.json").read_text())["num_hidden_layers"]
        cmd += ["--option", f"num_layers={min(9, layers)}"]
    return cmd


def read_scores(out: Path, metric: str) -> dict[str, float]:
    import pyarrow.parquet as pq

    slug = metric.lower().replace("+", "p")
    t = pq.read_table(out / f"{slug}.parquet", columns=["triplet_id", "score"]).to_pydict()
    return dict(zip(t["triplet_id"], t["score"]))


def steady_rate(out: Path, metric: str) -> float | None:
    """Median segments/s over the directions after the first (the first one carries the model load)."""
    import statistics

    import pyarrow.parquet as pq

    slug = metric.lower().replace("+", "p")
    rates = []
    for part in sorted((out / "parts" / slug).glob("*.parquet")):
        meta = json.loads(pq.read_schema(part).metadata[b"xqmeval.scoring"])
        rates.append(meta["summary"].get("segments_per_s"))
    rates = [r for r in rates[1:] if r]
    return statistics.median(rates) if rates else None


def subset_release(release: Path, limit: int, dst: Path) -> tuple[Path, list[str], dict[str, list[str]]]:
    """The first ``limit`` triplets of each direction as a release of its own (0 = all), and its flat texts."""
    import shutil

    import pyarrow.parquet as pq

    if dst.exists():
        shutil.rmtree(dst)
    ids: list[str] = []
    texts: dict[str, list[str]] = {"src": [], "mt": [], "ref": []}
    for p in sorted(release.glob("*/test.parquet")):
        t = pq.read_table(p)
        if limit:
            t = t.slice(0, limit)
        (dst / p.parent.name).mkdir(parents=True)
        pq.write_table(t, dst / p.parent.name / "test.parquet")
        d = t.to_pydict()
        ids += d["triplet_id"]
        for k in texts:
            texts[k] += [x.replace("\n", " ") for x in d[k]]
    for extra in ("manifest.json", "README.md"):
        if (release / extra).exists():
            shutil.copy(release / extra, dst / extra)
    return dst, ids, texts


def run(args) -> None:
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cpu":
        os.environ["XQMEVAL_ALLOW_GPU_METRICS_ON_CPU"] = "1"
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tok = Path(args.tokenizers)
    release = Path(args.release)
    results: dict = {
        "gpu": torch.cuda.get_device_name(0) if args.device != "cpu" else "CPU check",
        "torch": torch.__version__,
        "smoke": args.smoke,
        "weights": "random",
        "metrics": {},
    }
    from importlib.metadata import version

    for dist in ("transformers", "unbabel-comet", "bert-score", "numpy", "pytorch-lightning"):
        try:
            results[dist] = version(dist)
        except Exception as exc:
            results[dist] = f"missing ({exc})"
    print(json.dumps(results), flush=True)
    wanted = args.only.split(",") if args.only else list(SHAPES)
    deadline = time.monotonic() + args.budget
    args.until = deadline + 60  # no subprocess outlives the budget by more than a minute
    logs = work / "logs"

    def save():
        (out / "gpu_figures.json").write_text(json.dumps(results, indent=2))

    for metric in wanted:
        spec = SHAPES[metric]
        if time.monotonic() > deadline:
            results["metrics"][metric] = {"skipped": "time budget spent"}
            continue
        row: dict = {"shape": spec["shape"], "batch_size": spec["batch"], "dtype": spec["dtype"]}
        results["metrics"][metric] = row
        try:
            started = time.perf_counter()
            model = build_model(metric, spec, tok, work / "models", args.smoke, args.device)
            row["build_s"] = round(time.perf_counter() - started, 1)
            limit = (
                args.limit if args.limit is not None else 16 if args.smoke else args.limits.get(metric, spec["limit"])
            )
            sub, ids, texts = subset_release(release, limit, work / f"release-{metric}")
            row["triplets"] = len(ids)
            if "comet" in spec:
                comet_vs_cli(row, metric, model, sub, ids, texts, spec, work, logs, args)
            else:
                wall, peak, rc = timed_process(
                    scoring_cmd(sub, metric, model, work / f"scores-{metric}", spec, spec["dtype"], args.device),
                    logs / f"{metric}.log",
                    args.until,
                )
                row.update(
                    scoring_wall_s=round(wall, 1), seg_per_s=round(len(ids) / wall, 1), peak_gib=round(peak, 1), rc=rc
                )
                if rc == 0:
                    row["steady_seg_per_s"] = steady_rate(work / f"scores-{metric}", metric)
                else:
                    row["error"] = (logs / f"{metric}.log").read_text()[-1500:]
        except Exception as exc:
            import traceback

            row["error"] = "".join(traceback.format_exception(exc))[-1500:]
        finally:
            import shutil

            shutil.rmtree(work / "models", ignore_errors=True)
            if args.device != "cpu":
                torch.cuda.empty_cache()
        print(metric, json.dumps(row), flush=True)
        save()
    save()
    subprocess.run(["tar", "czf", str(out / "logs.tar.gz"), "-C", str(work), "logs"], check=False)
    table(results)


def comet_score_command(texts: dict[str, list[str]], model: Path, batch_size: int, gpus: int, work: Path) -> list[str]:
    """unbabel-comet's ``comet-score`` on ``texts`` (src, mt, ref; one line each, written under ``work``) with the
    COMET model directory ``model``; its segment scores go to ``work/cli.json`` (``comet_score_scores``)."""
    for name, lines in texts.items():
        (work / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [
        sys.executable,
        "-c",
        "import sys; from comet.cli.score import score_command; sys.exit(score_command())",
        "-s",
        str(work / "src.txt"),
        "-t",
        str(work / "mt.txt"),
        "-r",
        str(work / "ref.txt"),
        "--model",
        str(model / "checkpoints" / "model.ckpt"),
        "--batch_size",
        str(batch_size),
        "--gpus",
        str(gpus),
        "--quiet",
        "--only_system",
        "--num_workers",
        "0",
        "--to_json",
        str(work / "cli.json"),
    ]


def comet_score_scores(work: Path) -> list[float]:
    return [row["COMET"] for row in json.loads((work / "cli.json").read_text())[str(work / "mt.txt")]]


def comet_vs_cli(
    row: dict, metric: str, model: Path, sub: Path, ids: list[str], texts: dict, spec: dict, work: Path, out: Path, args
) -> None:
    """comet-score (unbabel-comet's CLI, which always runs the model in float16: ``model.half()``) against
    ``python -m scoring run --dtype float16`` on the same checkpoint and triplets, each end to end, at the same batch
    size; then the same triplets with ``encode_once`` (each distinct sentence embedded once; regression models such
    as COMET-22 only), and the scoring path in float32 and bfloat16 (autocast) for the table, each compared with the
    CLI. ``--comet-variants`` picks which of these run."""
    cli = comet_score_command(texts, model, spec["batch"], gpus=0 if args.device == "cpu" else 1, work=work)
    wall_cli, peak_cli, rc = timed_process(cli, out / "comet-score.log", args.until)
    if rc:
        row["error"] = (out / "comet-score.log").read_text()[-1500:]
        return
    cli_scores = comet_score_scores(work)
    n = len(ids)
    row.update(cli_seg_per_s=round(n / wall_cli, 1), cli_peak_gib=round(peak_cli, 1), dtype="float16")
    for name, key, dtype, options in COMET_VARIANTS:
        if name not in args.comet_variants or (name == "encode_once" and spec["comet"] != "regression"):
            continue
        scores_dir = work / f"scores-{metric}{key}"
        release, n = sub, len(ids)
        if dtype != "float16":
            per_direction = min(
                args.limit or COMET_OTHER_DTYPES_LIMIT,
                args.limits.get(metric, spec["limit"]) or COMET_OTHER_DTYPES_LIMIT,
            )
            release, sub_ids, _ = subset_release(sub, per_direction, work / "release-comet-subset")
            n = len(sub_ids)
            row[f"triplets{key}"] = n
        wall, peak, rc = timed_process(
            scoring_cmd(release, metric, model, scores_dir, spec, dtype, args.device, options),
            out / f"{metric}{key}.log",
            args.until,
        )
        if rc:
            row["error" + key] = (out / f"{metric}{key}.log").read_text()[-1500:]
            continue
        ours = read_scores(scores_dir, metric)
        row.update(
            {
                f"seg_per_s{key}": round(n / wall, 1),
                f"peak_gib{key}": round(peak, 1),
                f"max_abs_diff{key}": max(abs(ours[i] - c) for i, c in zip(ids, cli_scores) if i in ours),
                f"steady_seg_per_s{key}": steady_rate(scores_dir, metric),
            }
        )
        if dtype == "float16":  # the CLI's own triplets: a ratio against it
            row[f"ratio{key}"] = round(wall_cli / wall, 3)
        if args.smoke and key:
            break


def sweep(args) -> None:
    """One metric's ``python -m scoring run`` at several batch sizes on the same model and triplets, one run each in
    the order given (the first also pays a cold page cache for the checkpoint): segments/s end to end and steady, and
    peak GPU memory, to find the batch size that fills the GPU."""
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cpu":
        os.environ["XQMEVAL_ALLOW_GPU_METRICS_ON_CPU"] = "1"
    work = Path(args.work)
    spec = SHAPES[args.metric]
    model = build_model(args.metric, spec, Path(args.tokenizers), work / "models", False, args.device)
    sub, ids, _ = subset_release(Path(args.release), args.limit, work / f"release-{args.metric}")
    dtype = args.dtype or spec["dtype"]
    results = {
        "gpu": torch.cuda.get_device_name(0) if args.device != "cpu" else "CPU check",
        "torch": torch.__version__,
        "weights": "random",
        "metric": args.metric,
        "shape": spec["shape"],
        "dtype": dtype,
        "options": args.option,
        "triplets": len(ids),
        "runs": [],
    }
    deadline = time.monotonic() + args.budget
    for size in (int(x) for x in args.batch_sizes.split(",")):
        scores = work / f"scores-{args.metric}-{size}"
        log = work / "logs" / f"{args.metric}-batch{size}.log"
        wall, peak, rc = timed_process(
            scoring_cmd(
                sub, args.metric, model, scores, dict(spec, batch=size), dtype, args.device, tuple(args.option)
            ),
            log,
            deadline,
        )
        run = {"batch_size": size, "rc": rc, "seg_per_s": round(len(ids) / wall, 1), "peak_gib": round(peak, 1)}
        if rc == 0:
            run["steady_seg_per_s"] = steady_rate(scores, args.metric)
        else:
            run["error"] = log.read_text()[-1500:]
        results["runs"].append(run)
        print(json.dumps(run), flush=True)
        (out / "batch_sweep.json").write_text(json.dumps(results, indent=2))


def table(results: dict) -> None:
    print(
        f"\n{results['gpu']}, torch {results['torch']}, random weights{' (SMOKE: 2 layers)' if results['smoke'] else ''}"
    )
    print(f"{'metric':<11} {'triplets':>8} {'seg/s':>8} {'steady':>8} {'peak GiB':>8} {'batch':>5} {'dtype':<9} shape")
    for metric, r in results["metrics"].items():
        if "error" in r or "skipped" in r:
            print(f"{metric:<11} {r.get('skipped') or 'FAILED: ' + r['error'].strip().splitlines()[-1][:160]}")
            continue
        print(
            f"{metric:<11} {r.get('triplets', 0):>8} {r.get('seg_per_s', 0):>8} {r.get('steady_seg_per_s') or 0:>8.0f} "
            f"{r.get('peak_gib', 0):>8} {r['batch_size']:>5} {r['dtype']:<9} {r['shape']}"
        )
        if "cli_seg_per_s" in r:
            print(
                f"{'':<11} comet-score (float16) {r['cli_seg_per_s']} seg/s, peak {r['cli_peak_gib']} GiB; ratio "
                f"{r.get('ratio')} (target >= 0.95); max |diff| {r.get('max_abs_diff', float('nan')):.2e}"
            )
            for _, key, dtype, options in COMET_VARIANTS[1:]:
                if f"seg_per_s{key}" in r:
                    ratio = f", ratio {r[f'ratio{key}']}" if r.get(f"ratio{key}") else ""
                    print(
                        f"{'':<11} scoring {dtype} {' '.join(options)}: {r[f'seg_per_s{key}']} seg/s (steady "
                        f"{r[f'steady_seg_per_s{key}']}){ratio}, peak {r[f'peak_gib{key}']} GiB, max |diff| vs comet-score "
                        f"{r[f'max_abs_diff{key}']:.2e}"
                    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    r = sub.add_parser("run")
    r.add_argument("--tokenizers", required=True)
    r.add_argument("--release", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--work", default="/tmp/bench-gpu")
    r.add_argument("--only", help="comma-separated metrics (default: all of SHAPES)")
    r.add_argument("--smoke", action="store_true", help="2 layers, 16 triplets per direction")
    r.add_argument("--device", default="cuda", help="cpu: check the paths here with small widths (no figures)")
    r.add_argument("--limit", type=int, help="triplets per direction for every metric (default: SHAPES' own)")
    r.add_argument(
        "--limits", default="", help="per-metric triplets per direction, e.g. xCOMET-XL=100 (over SHAPES' own)"
    )
    r.add_argument(
        "--comet-variants",
        default=",".join(v[0] for v in COMET_VARIANTS),
        help="the scoring runs beside comet-score, of: " + ", ".join(v[0] for v in COMET_VARIANTS),
    )
    r.add_argument("--budget", type=float, default=480, help="seconds; metrics not started by then are skipped")
    w = sub.add_parser("sweep", help="one metric at several batch sizes (the batch size that fills the GPU)")
    w.add_argument("--tokenizers", required=True)
    w.add_argument("--release", required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--work", default="/tmp/bench-gpu-sweep")
    w.add_argument("--metric", default="COMET-22", choices=list(SHAPES))
    w.add_argument("--batch-sizes", default="128,256,512,1024")
    w.add_argument("--limit", type=int, default=2000, help="triplets per direction (0 = the whole release)")
    w.add_argument("--dtype", help="default: SHAPES' own")
    w.add_argument("--option", action="append", default=[], help="KEY=VALUE for the scorer, e.g. encode_once=true")
    w.add_argument("--device", default="cuda")
    w.add_argument(
        "--budget", type=float, default=480, help="seconds; each run is stopped 30 s after this at the latest"
    )
    args = ap.parse_args()
    if args.command == "sweep":
        sweep(args)
        return
    if args.command == "run":
        args.limits = {
            k.strip(): int(v) for k, v in (item.split("=", 1) for item in args.limits.split(",") if item.strip())
        }
        unknown = set(args.limits) - set(SHAPES)
        args.comet_variants = {v.strip() for v in args.comet_variants.split(",") if v.strip()}
        unknown_variants = args.comet_variants - {v[0] for v in COMET_VARIANTS}
        if unknown or unknown_variants:
            ap.error(f"unknown metric in --limits or variant in --comet-variants: {sorted(unknown | unknown_variants)}")
    if args.command == "prepare":
        prepare(Path(args.out))
    else:
        run(args)


if __name__ == "__main__":
    main()
