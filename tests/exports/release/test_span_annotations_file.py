"""People's error spans and scores in a release (``human/span_annotations.parquet``): written in a fixed order
with the schema the card documents, in the content hash, the card's mean score per number of errors computed
by hand; bad rows refused before anything is written."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from exports.release.domain.release_files import SPAN_ANNOTATIONS_FILE, ReleaseContent, write_release


def _span(start, end, severity="minor", side="target", category="", origin="human"):
    return {"side": side, "start": start, "end": end, "severity": severity, "category": category, "origin": origin}


def _row(triplet, annotator, k, score, spans=(), protocol="esa", task="esa-1"):
    return {
        "triplet_id": triplet,
        "direction": "en-de",
        "num_errors": k,
        "task": task,
        "protocol": protocol,
        "annotator": annotator,
        "score": score,
        "spans": list(spans),
    }


ROWS = [
    _row("en-de/1/c2", "ann-2", 1, 70.0, [_span(3, 9, "major"), _span(0, 2, side="source", origin="metric")]),
    _row("en-de/1/c2", "ann-1", 1, 60.0, [_span(3, 8)]),
    _row("en-de/1/reference", "ann-1", 0, 95.0),
    _row("en-de/1/reference", "ann-2", 0, 100.0),
    _row("en-de/1/c2", "mqm-1", 1, -5.0, [_span(3, 9, "major", category="accuracy/mistranslation")], "mqm", "mqm-1"),
]


def content(rows) -> ReleaseContent:
    return ReleaseContent(
        name="xqm",
        version="1.0.0",
        title="t",
        description="",
        license="other",
        source_language="en",
        directions=[],
        rows=lambda d: [],
        systems=lambda directions, load: ([], []),
        excluded=[],
        counts={},
        sampling_plan={},
        span_annotations=rows,
    )


def test_the_file_holds_every_annotation_in_a_fixed_order_and_the_card_says_what(tmp_path):
    manifest = write_release(content(list(ROWS)), tmp_path / "a")
    table = pq.read_table(tmp_path / "a" / SPAN_ANNOTATIONS_FILE).to_pylist()
    assert [(r["task"], r["triplet_id"], r["annotator"]) for r in table] == [
        ("esa-1", "en-de/1/c2", "ann-1"),
        ("esa-1", "en-de/1/c2", "ann-2"),
        ("esa-1", "en-de/1/reference", "ann-1"),
        ("esa-1", "en-de/1/reference", "ann-2"),
        ("mqm-1", "en-de/1/c2", "mqm-1"),
    ]
    assert table[1]["spans"][1] == _span(0, 2, side="source", origin="metric")
    assert SPAN_ANNOTATIONS_FILE in manifest["canonical_files"] and manifest["span_annotations"] == 5
    card = (tmp_path / "a" / "README.md").read_text()
    assert "## Human error-span annotations" in card and "config `span-annotations`" in card
    # ESA: k=0 (95 + 100)/2 = 97.5, k=1 (70 + 60)/2 = 65.0; MQM: k=1 −5.0, nothing at k=0
    assert "| esa | 4 | 97.5 (2) | 65.0 (2) |" in card
    assert "| mqm | 1 | – | -5.0 (1) |" in card
    # the same annotations in another order are the same release, byte for byte
    again = write_release(content(list(reversed(ROWS))), tmp_path / "b")
    assert again["content_hash"] == manifest["content_hash"]
    assert (tmp_path / "a" / SPAN_ANNOTATIONS_FILE).read_bytes() == (
        tmp_path / "b" / SPAN_ANNOTATIONS_FILE
    ).read_bytes()


def test_annotations_are_part_of_the_content_hash_and_their_absence_changes_nothing(tmp_path):
    with_rows = write_release(content(list(ROWS)), tmp_path / "a")
    other = [dict(ROWS[0], score=71.0), *ROWS[1:]]
    assert write_release(content(other), tmp_path / "b")["content_hash"] != with_rows["content_hash"]
    without = write_release(content([]), tmp_path / "c")
    assert without["content_hash"] != with_rows["content_hash"]
    assert "span_annotations" not in without and not (tmp_path / "c" / "human").exists()
    assert "Human error-span annotations" not in (tmp_path / "c" / "README.md").read_text()
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["canonical_files"] == [
        "excluded_candidates.csv",
        "systems/monolingual.parquet",
        "systems/multilingual.parquet",
        "transplanted_candidates.csv",
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (dict(ROWS[0], spans=[_span(5, 5)]), r"span annotation 1 \(en-de/1/c2, ann-2\): bad span"),
        (dict(ROWS[0], spans=[_span(0, 2, side="reference")]), "bad span"),
        ({k: v for k, v in ROWS[0].items() if k != "score"}, r"span annotation 1: columns \['score'\]"),
    ],
)
def test_a_bad_row_is_refused_and_nothing_is_written(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        write_release(content([bad, *ROWS[1:]]), tmp_path / "a")
    assert not (tmp_path / "a").exists()
