"""chrF++ and spBLEU over a whole release through ``scoring`` against sacrebleu called directly in one loop.

Run in the scoring virtualenv:

    .venv-scoring/bin/python perf/bench_scoring.py [--release DIR] [--spm-model FILE] [--repeats 3]

``scoring`` does more than the loop (reads the parquet, checks it, hashes the input for resumption,
writes per-triplet parquet with signatures and a summary); the target is at least 0.9 of the direct
throughput. Without ``--release`` a release-format directory is built from the shared XQ-MEval data
(level 0 = the reference, level 1 = each single-error candidate, all 9 directions). Without a FLORES-200
SentencePiece file (offline) a SentencePiece model is trained on the same data, and both sides use it.
With ``--comet-model DIR`` (a COMET model directory: hparams.yaml + checkpoints/model.ckpt) it also
compares COMET through ``scoring`` with unbabel-comet's own ``comet-score`` CLI on the same triplets,
both end to end (model load included, wall clock, same batch size, both in float16 as comet-score always
runs; target at least 0.95), on the GPU when one is visible. ``perf/bench_gpu.py`` does the same at the real
model shape on a lent GPU, with every other neural metric.

Best of ``--repeats`` runs per side, alternating, on the same data. Times are this process's CPU time
(both sides are single-threaded), so other people's jobs on a shared machine disturb the ratio less than
they disturb wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "perf"))  # bench_gpu's COMET helpers
SHARED = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))
MARK = re.compile(r"</?v>")


def build_release_from_shared(root: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted((SHARED / "candidates").glob("en-*-*.parquet"))
    if not files:
        sys.exit(f"no shared data at {SHARED}; pass --release DIR")
    by_dir: dict[str, list[dict]] = {}
    for f in files:
        for r in pq.read_table(f).to_pylist():
            d = f"en-{r['language']}"
            rows = by_dir.setdefault(d, [])
            rows.append(
                {
                    "triplet_id": f"{d}:{r['segment_id']}:1:{r['error_type']}:{r['count_id']}",
                    "direction": d,
                    "segment_id": str(r["segment_id"]),
                    "src": r["src"],
                    "ref": r["ref"],
                    "mt": MARK.sub("", r["mt"]),
                    "num_errors": 1,
                }
            )
    for d, rows in by_dir.items():
        refs = {}
        for r in rows:
            refs.setdefault(r["segment_id"], r)
        rows.extend({**r, "triplet_id": f"{d}:{s}:0", "mt": r["ref"], "num_errors": 0} for s, r in refs.items())
        (root / d).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), root / d / "test.parquet")
    (root / "manifest.json").write_text(
        json.dumps({"version": "bench", "counts": {d: len(r) for d, r in by_dir.items()}})
    )
    return root


def train_spm(release: Path, out: Path) -> Path:
    import pyarrow.parquet as pq
    import sentencepiece as spm

    text = out / "corpus.txt"
    with text.open("w", encoding="utf-8") as fh:
        for p in sorted(release.glob("*/test.parquet")):
            for ref in set(pq.read_table(p, columns=["ref"]).column("ref").to_pylist()):
                fh.write(ref + "\n")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(out / "bench"),
        vocab_size=8000,
        model_type="unigram",
        character_coverage=0.9995,
        minloglevel=2,
        hard_vocab_limit=False,
    )
    return out / "bench.model"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release")
    ap.add_argument("--spm-model")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--comet-model", help="COMET model directory: also compare with the comet-score CLI")
    ap.add_argument("--comet-batch-size", type=int, default=64)
    ap.add_argument("--comet-limit", type=int, default=0, help="score only the first N triplets per direction")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-scoring-"))
    try:
        release = Path(args.release) if args.release else build_release_from_shared(work / "release")
        spm_file = Path(args.spm_model) if args.spm_model else train_spm(release, work)
        # The direct side uses sacrebleu's own flores200 tokenizer, reading the same file from its cache dir.
        (work / "sacrebleu" / "models").mkdir(parents=True)
        shutil.copy(spm_file, work / "sacrebleu" / "models" / "flores200sacrebleuspm")
        os.environ["SACREBLEU"] = str(work / "sacrebleu")

        import pyarrow.parquet as pq
        from sacrebleu.metrics import BLEU, CHRF

        from scoring.api import ScoreOptions, score_release

        data = {}
        for p in sorted(release.glob("*/test.parquet")):
            t = pq.read_table(p, columns=["mt", "ref"]).to_pydict()
            data[p.parent.name] = list(zip(t["mt"], t["ref"]))
        n = sum(len(v) for v in data.values())

        direct_make = {
            "chrF++": lambda: CHRF(word_order=2),
            "spBLEU": lambda: BLEU(tokenize="flores200", effective_order=True),
        }

        def direct(metric: str) -> tuple[float, list[float]]:
            started = time.process_time()
            m = direct_make[metric]()
            scores = [m.sentence_score(mt, [ref]).score for rows in data.values() for mt, ref in rows]
            return time.process_time() - started, scores

        def ours(metric: str, k: int) -> tuple[float, list[float]]:
            out = work / f"out-{metric}-{k}"
            started = time.process_time()
            score_release(release, [metric], out=out, options=ScoreOptions(spm_model=str(spm_file)))
            elapsed = time.process_time() - started
            slug = metric.lower().replace("+", "p")
            table = pq.read_table(out / f"{slug}.parquet").to_pydict()
            return elapsed, table["score"]

        print(f"release: {release} ({n} triplets, {len(data)} directions); spm: {spm_file.name}")
        print(f"{'metric':<8} {'direct seg/s':>13} {'scoring seg/s':>14} {'ratio':>6}")
        results = {}
        for metric in ("chrF++", "spBLEU"):
            best_d = best_o = float("inf")
            for k in range(args.repeats):
                td, sd = direct(metric)
                to, so = ours(metric, k)
                assert so == sd, f"{metric}: scoring and direct sacrebleu disagree"
                best_d, best_o = min(best_d, td), min(best_o, to)
            ratio = best_d / best_o  # = scoring throughput / direct throughput
            results[metric] = {"direct_seg_per_s": n / best_d, "scoring_seg_per_s": n / best_o, "ratio": ratio}
            print(f"{metric:<8} {n / best_d:>13.0f} {n / best_o:>14.0f} {ratio:>6.2f}")
        ok = all(r["ratio"] >= 0.9 for r in results.values())
        print("target ratio >= 0.90:", "met" if ok else "NOT met")
        if args.comet_model:
            results["COMET"] = bench_comet(release, Path(args.comet_model), work, args)
        print(json.dumps({"triplets": n, **results}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_comet(release: Path, model_dir: Path, work: Path, args) -> dict:
    import subprocess

    import pyarrow.parquet as pq
    import torch
    from bench_gpu import comet_score_command, comet_score_scores, subset_release

    from scoring.api import ScoreOptions, score_release

    # One release with the chosen triplets, so both sides score exactly the same rows.
    sub, ids, texts = subset_release(release, args.comet_limit, work / "comet-release")
    n = len(ids)
    gpus = 1 if torch.cuda.is_available() else 0
    started = time.perf_counter()
    subprocess.run(
        comet_score_command(texts, model_dir, args.comet_batch_size, gpus, work),
        check=True,
        capture_output=True,
        text=True,
    )
    t_cli = time.perf_counter() - started
    cli_scores = comet_score_scores(work)
    started = time.perf_counter()
    score_release(
        sub,
        ["COMET-22"],
        out=work / "comet-out",
        options=ScoreOptions(
            model=str(model_dir), batch_size=args.comet_batch_size, device="cuda" if gpus else "cpu", dtype="float16"
        ),
    )  # comet-score always runs model.half()
    t_ours = time.perf_counter() - started
    table = pq.read_table(work / "comet-out" / "comet-22.parquet", columns=["triplet_id", "score"]).to_pydict()
    ours = dict(zip(table["triplet_id"], table["score"]))
    worst = max(abs(ours[i] - c) for i, c in zip(ids, cli_scores))
    ratio = t_cli / t_ours
    print(
        f"COMET    {n / t_cli:>13.1f} {n / t_ours:>14.1f} {ratio:>6.2f}   (comet-score CLI vs scoring, {n} triplets, "
        f"{'GPU' if gpus else 'CPU'}, max |diff| {worst:.2e}); target >= 0.95: {'met' if ratio >= 0.95 else 'NOT met'}"
    )
    return {
        "cli_seg_per_s": n / t_cli,
        "scoring_seg_per_s": n / t_ours,
        "ratio": ratio,
        "max_abs_diff": worst,
        "gpu": bool(gpus),
    }


if __name__ == "__main__":
    main()
