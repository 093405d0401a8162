"""The dataset card is rendered from a template file (`exports/release/domain/dataset_card.md`). Its bytes are
part of a release's identity, so the card must stay exactly what the former string-writing code produced:
the expected files under `tests/exports/release/dataset_cards/` were written by that code (commit 4079421) for the
contents below, which reach every branch of the card (description or none, agreement or none, shortfalls,
markup in database text, no direction at all). The shared data's card is checked in `test_release.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from exports.release.domain.release_files import ReleaseContent, dataset_card

EXPECTED = Path(__file__).parent / "dataset_cards"


def _level(total: int, low: int, high: int) -> dict:
    return {"total": total, "min_per_pair": low, "max_per_pair": high}


def full_content() -> ReleaseContent:
    counts = {
        "en-de": {
            "gold_pairs": 102,
            "total": 12345,
            "min_per_pair": 20,
            "max_per_pair": 301,
            "levels": {"0": _level(102, 1, 1), "1": _level(1020, 3, 12), "2": _level(11223, 4, 288)},
        },
        "en-zh": {
            "gold_pairs": 7,
            "total": 70,
            "min_per_pair": 10,
            "max_per_pair": 10,
            "levels": {"0": _level(7, 1, 1), "1": _level(21, 3, 3), "2": _level(42, 6, 6)},
        },
    }
    return ReleaseContent(
        name="xqm",
        version="2.1.0",
        title="XQ <b>MEval</b>\nsmall",
        description="Line one\r\nline <two> & three",
        license="cc-by-sa-4.0",
        source_language="en",
        directions=["en-zh", "en-de"],
        rows=lambda d: [],
        systems=lambda pool: ([], []),
        excluded=[{"external_id": "a"}, {"external_id": "b"}],
        counts=counts,
        sampling_plan={"seed": 42, "monolingual_repetitions": 3, "levels": [0, 1, 2], "n": {"en-de": 50}},
        build={"pool": "accepted", "max_errors": 2, "sources": "xqmeval <release>"},
        agreement={"kappa": 0.61, "reviewers": "3\nof 4", "alpha": 0.5},
        total_triplets=12415,
        transplanted_triplets=1234,
        shortfalls=["en-zh level 2: 42 of 50", "multi <level 1>: 3 of 5"],
        transplanted=[{"external_id": "t1"}],
    )


def bare_content() -> ReleaseContent:
    return ReleaseContent(
        name="empty-one",
        version="0.0.1",
        title="",
        description="",
        license="other",
        source_language="en",
        directions=[],
        rows=lambda d: [],
        systems=lambda pool: ([], []),
        excluded=[],
        counts={},
        sampling_plan={},
        total_triplets=0,
    )


CASES = {
    "full": (
        full_content,
        [
            "en-de/test.parquet",
            "en-zh/test.parquet",
            "excluded_candidates.csv",
            "systems/monolingual.parquet",
            "systems/multilingual.parquet",
        ],
    ),
    "bare": (bare_content, ["excluded_candidates.csv", "systems/monolingual.parquet"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_card_is_byte_identical_to_the_former_code(case):
    make, canonical = CASES[case]
    card = dataset_card(make(), "f" * 64, canonical)
    assert card.encode("utf-8") == (EXPECTED / f"{case}.md").read_bytes()


def test_database_text_cannot_add_markup_or_end_a_list_item():
    card = dataset_card(full_content(), "0" * 64, [])
    body = card.split("---\n", 2)[2]
    assert "<b>" not in body and "<two>" not in body and "&lt;b&gt;" in body
    assert "- reviewers: 3 of 4\n" in body and "- sources: xqmeval &lt;release&gt;\n" in body
    assert yaml.safe_load(card.split("---\n")[1])["pretty_name"] == "XQ <b>MEval</b>\nsmall"
