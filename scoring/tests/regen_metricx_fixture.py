"""Regenerate ``scoring/tests/fixtures/metricx_reference.json``: google-research/metricx's own ``predict.py``
on the tiny checkpoints of ``metricx_reference.py``, in the reference's pinned environment.

    python3.11 -m venv /tmp/metricx-env
    /tmp/metricx-env/bin/pip install "transformers[torch]==4.30.2" sentencepiece==0.1.99 datasets==2.13.1 \\
        torch "numpy<2" "pyarrow<15" "pandas<2.2" "accelerate<0.21" "protobuf==3.20.3" "setuptools<81" "fsspec<2023.9" safetensors
    git clone https://github.com/google-research/metricx /tmp/metricx     # any checkout of the repository
    /tmp/metricx-env/bin/python scoring/tests/regen_metricx_fixture.py --metricx /tmp/metricx

(transformers 4.30.2, sentencepiece 0.1.99 and datasets 2.13.1 are metricx's requirements.txt pins; the
other pins only make those old releases import on Python 3.11.) For each checkpoint (float32/bfloat16,
tied/untied) and each of ``metricx23.predict`` / ``metricx24.predict`` with and without ``--qe`` it writes
the triplets as the reference's JSONL input, runs the reference module unchanged in a subprocess with
batch size 1, and records its predictions and the input ids it fed the model. Nothing of this project is
imported except the checkpoint builder, which needs only numpy, torch, safetensors and sentencepiece.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "metricx_reference.json"
# (reference module, --qe, max_input_length as the model cards give it)
RUNS = [("metricx23", False, 1024), ("metricx23", True, 1024), ("metricx24", False, 1536), ("metricx24", True, 1536)]


def _builder():
    spec = importlib.util.spec_from_file_location("metricx_reference", HERE / "metricx_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metricx", required=True, help="a checkout of google-research/metricx")
    parser.add_argument("--out", default=str(FIXTURE))
    args = parser.parse_args()
    import torch
    import transformers

    builder = _builder()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = builder.build_all(root / "models")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(paths["tokenizer"]))
        tokenizer.save_pretrained(str(paths["tokenizer"]))  # tokenizer.json: converted once, not in every run
        rows = [{"source": s, "hypothesis": m, "reference": r} for s, m, r in builder.TRIPLETS]
        input_file = root / "input.jsonl"
        input_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        env = {
            **os.environ,
            "PYTHONPATH": str(Path(args.metricx).resolve()),
            "HF_DATASETS_CACHE": str(root / "datasets"),
            "CUDA_VISIBLE_DEVICES": "",
            "TOKENIZERS_PARALLELISM": "false",
        }
        for name, dtype, tied in builder.CHECKPOINTS:
            for module, qe, max_length in RUNS:
                output_file = root / f"{name}-{module}-{qe}.jsonl"
                command = [
                    sys.executable,
                    "-m",
                    f"{module}.predict",
                    "--tokenizer",
                    str(paths["tokenizer"]),
                    "--model_name_or_path",
                    str(paths[name]),
                    "--max_input_length",
                    str(max_length),
                    "--batch_size",
                    "1",
                    "--input_file",
                    str(input_file),
                    "--output_file",
                    str(output_file),
                ] + (["--qe"] if qe else [])
                subprocess.run(command, check=True, env=env, cwd=root, stdout=subprocess.DEVNULL)
                predictions = [
                    json.loads(line)["prediction"] for line in output_file.read_text(encoding="utf-8").splitlines()
                ]
                results.append(
                    {
                        "checkpoint": name,
                        "dtype": dtype,
                        "tie_word_embeddings": tied,
                        "module": module,
                        "qe": qe,
                        "max_input_length": max_length,
                        "predictions": predictions,
                    }
                )
                print(name, module, "qe" if qe else "ref", [round(p, 4) for p in predictions], file=sys.stderr)
        # The ids the reference feeds the model (its get_dataset: tokenize, then drop the last token, EOS).
        inputs = {}
        for module, qe, max_length in RUNS:
            for row in rows:
                if module == "metricx23":
                    text = f"candidate: {row['hypothesis']} " + (
                        f"source: {row['source']}" if qe else f"reference: {row['reference']}"
                    )
                else:
                    text = f"source: {row['source']} candidate: {row['hypothesis']}" + (
                        "" if qe else f" reference: {row['reference']}"
                    )
                ids = tokenizer(text, max_length=max_length, truncation=True, padding=False)["input_ids"][:-1]
                inputs.setdefault(f"{module}-{qe}", []).append(ids)
    import hashlib

    digest = hashlib.sha256()  # what test_reference.py checks the rebuilt weights against
    for name, _, tied in builder.CHECKPOINTS:
        for key, value in sorted(builder.weights(tied).items()):
            digest.update(name.encode() + key.encode() + value.tobytes())
    fixture = {
        "generated_by": "scoring/tests/regen_metricx_fixture.py",
        "reference": "google-research/metricx predict.py (metricx23 and metricx24), batch size 1, CPU",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "seed": 14,
        "weights_sha256": digest.hexdigest(),
        "runs": results,
        "input_ids": inputs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(fixture, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
