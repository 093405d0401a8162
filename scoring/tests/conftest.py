"""Fixtures: small release directories in the issue-6 layout, a tiny trained SentencePiece model, and tiny
transformer checkpoints (built and saved here, then loaded through the same code as real ones)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scoring.tests.releases import SHARED_DATA, corpus_lines, write_release


@pytest.fixture
def shared_data() -> Path:
    """The shared XQ-MEval data: mandatory in CI (as tests/conftest.py), a skip elsewhere when it is missing."""
    shared = Path(os.environ.get("XQMEVAL_SHARED_DATA", SHARED_DATA))
    if not (shared / "candidates").is_dir():
        if os.environ.get("CI") == "true" or os.environ.get("REQUIRE_SHARED_DATA") == "1":
            pytest.fail(f"required but missing: shared XQ-MEval data at {shared}")
        pytest.skip(f"missing: shared XQ-MEval data at {shared}")
    return shared


@pytest.fixture
def release(tmp_path) -> Path:
    return write_release(tmp_path / "release")


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory) -> Path:
    """A tiny unigram SentencePiece model trained on the test corpus (stands in for FLORES-200's)."""
    import sentencepiece as spm

    d = tmp_path_factory.mktemp("spm")
    text = d / "corpus.txt"
    text.write_text("\n".join(corpus_lines() * 3), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(d / "tiny"),
        vocab_size=300,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        minloglevel=2,
    )
    return d / "tiny.model"


def pytest_collection_modifyitems(items):
    """The files with slow tests first, for bin/test's xdist workers (whole files each, in this order): the
    vLLM engine and the GPU benchmark on the CPU take about two minutes each, and xdist's own order (by number of
    tests) left them to the end, one after the other. Stable: other files keep their collection order."""
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in slow)
