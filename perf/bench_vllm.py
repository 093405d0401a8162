"""Throughput of the vllm backend (in-process engine) against vLLM itself, on the same engine and prompts.

The baseline is one ``LLM.chat`` call over all prompts, the fastest way to drive the engine offline. The
backend adds chunking (results are persisted per chunk, and cancellation is looked up between chunks),
and the pipeline adds post-processing and the automatic checks. Each is reported as a rate and as a
fraction of the baseline measured in the same run (the engine is loaded once and warmed up first).

    .venv-vllm/bin/python perf/bench_vllm.py --model DIR [--requests 1024] [--engine-option NAME=VALUE ...]
    .venv-vllm/bin/python perf/bench_vllm.py --tiny   # the tests' tiny chat model, on the CPU build

Prompts are XQ-MEval MQM prompts over the shared references of all 9 languages (../shared/data/xqmeval).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.domain.edit_types import edit_type  # noqa: E402
from injection.backends import EditTask, GenerationRequest, Sampling, get_backend  # noqa: E402
from injection.backends.vllm_engine import parse_engine_options  # noqa: E402
from injection.domain.checks import run_checks  # noqa: E402
from injection.domain.postprocess import OutputRejected, process_output  # noqa: E402
from injection.domain.prompts import build_prompt  # noqa: E402

LANGUAGES = ["de", "es", "fr", "id", "ja", "lo", "si", "vi", "zh"]
SHARED = REPO.parent / "shared" / "data" / "xqmeval" / "candidates"


def gold_pairs() -> list[tuple[str, str, str]]:
    import pandas as pd

    pairs = []
    for language in LANGUAGES:
        frame = pd.read_parquet(
            SHARED / f"en-{language}-Addition.parquet", columns=["segment_id", "src", "ref"]
        ).drop_duplicates("segment_id")
        pairs += [(language, row.src, row.ref) for row in frame.itertuples()]
    return pairs


def requests(n: int) -> list[GenerationRequest]:
    pairs = gold_pairs()
    out = []
    for i in range(n):
        language, source, reference = pairs[i % len(pairs)]
        name, position = [
            ("Addition", "head"),
            ("Omission", "end"),
            ("Mistranslation", "head"),
            ("Untranslated", "end"),
        ][i % 4]
        prompt = build_prompt(
            edit_type("mqm", name),
            reference=reference,
            source=source,
            language=language,
            position=position,
            structured=True,
        )
        out.append(
            GenerationRequest(
                str(i), prompt.messages, EditTask(reference, source, language, "mqm", name, position), prompt.version
            )
        )
    return out


def tiny_model() -> str:
    from tests.injection.tiny_llm import build

    pairs = gold_pairs()
    corpus = [text for _, src, ref in pairs[:400] for text in (src, ref)]
    return str(build(Path(tempfile.mkdtemp(prefix="bench-vllm-")) / "tiny", corpus))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a local model directory (or a Hub id where the Hub is reachable)")
    parser.add_argument("--tiny", action="store_true", help="build and use the tests' tiny chat model")
    parser.add_argument("--requests", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine-option", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    if not (args.model or args.tiny):
        parser.error("give --model DIR or --tiny")
    # Every variant sends the same prompts again: without this, the later ones would find them prefilled.
    options = {"enable_prefix_caching": False, **parse_engine_options(args.engine_option)}
    if args.tiny:
        options = {"gpu_memory_utilization": 0.1, "enforce_eager": True, "max_model_len": 8192, **options}
    model = args.model or tiny_model()

    backend = get_backend("vllm", Sampling(model=model), engine_options=options)
    work = requests(args.requests)
    list(backend.generate(work[:8]))  # load and warm up the engine (kept for the runs below)
    from injection.backends.vllm_engine import _ENGINE

    engine, params = _ENGINE.engine, backend._sampling_params()
    raw, chunked, pipeline = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        engine.chat([list(r.messages) for r in work], params, use_tqdm=False)
        raw.append(len(work) / (time.perf_counter() - start))

        start = time.perf_counter()
        results = list(backend.generate(work))
        chunked.append(len(work) / (time.perf_counter() - start))

        start = time.perf_counter()
        by_id = {r.custom_id: r for r in work}
        for result in backend.generate(work):
            task = by_id[result.custom_id].task
            try:
                processed = process_output(result.text or "", task.reference, task.language)
            except OutputRejected:
                continue
            run_checks(
                reference=task.reference,
                candidate_text=processed.text,
                edit=processed.edit,
                language=task.language,
                kind=task.kind,
                error_type=task.error_type,
                position=task.position,
                source=task.source,
                regions=processed.regions,
            )
        pipeline.append(len(work) / (time.perf_counter() - start))
    base = statistics.median(raw)
    tokens = sum(r.prompt_tokens for r in results) / len(results)
    print(
        f"model {model}; {len(work)} MQM prompts over 9 languages, {tokens:.0f} prompt tokens on average; median of {args.repeats}"
    )
    print(f"LLM.chat, all prompts at once (baseline): {base:8.1f} req/s")
    print(
        f"vllm backend (chunks of {backend.chunk_size}):          {statistics.median(chunked):8.1f} req/s = {statistics.median(chunked) / base:.2f} of the baseline"
    )
    print(
        f"  + post-processing and checks:        {statistics.median(pipeline):8.1f} req/s = {statistics.median(pipeline) / base:.2f} of the baseline"
    )


if __name__ == "__main__":
    main()
