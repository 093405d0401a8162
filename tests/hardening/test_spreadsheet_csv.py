"""CSV files for spreadsheets neutralise formula-leading cells; the dataset's own files keep text exact (issue 12 item 10)."""

import csv
import json

import pytest

from core.domain.spreadsheet import safe_cell
from exports.release.domain import release_files

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_leading_text_gets_a_quote(text):
    assert safe_cell(text) == "'" + text


def test_other_values_are_kept():
    assert [safe_cell(v) for v in ("Haus", "a=b", 12, -3, None, 0.1)] == ["Haus", "a=b", 12, -3, "", "0.1"]


def test_excluded_candidates_csv_is_safe_for_spreadsheets(tmp_path):
    row = {c: f"x-{c}" for c in release_files.EXCLUDED_COLUMNS}
    row.update({"external_id": FORMULAS[0], "reason": "@cmd", "span_start": -1, "span_end": 4})
    path = tmp_path / "excluded_candidates.csv"
    release_files._write_excluded([row], path)
    written = next(csv.DictReader(path.open(encoding="utf-8", newline="")))
    assert written["external_id"] == "'" + FORMULAS[0] and written["reason"] == "'@cmd"
    assert written["span_start"] == "-1"  # numbers are numbers, not text to neutralise


def test_dataset_files_keep_the_text_exact(tmp_path):
    row = {name: "=1+1" for name in release_files.TRIPLET_SCHEMA.names}
    row.update({"num_errors": 1, "mqm_penalty": 5, "human_score": -5, "error_types": ["Addition"], "spans": []})
    (tmp_path / "t.jsonl").write_text(release_files._jsonl_line(row), encoding="utf-8")
    with open(tmp_path / "t.tsv", "w", encoding="utf-8", newline="") as fh:
        release_files._tsv_writer(fh).writerow(release_files._tsv_row(row))
    assert json.loads((tmp_path / "t.jsonl").read_text(encoding="utf-8"))["mt"] == "=1+1"
    tsv = list(csv.DictReader((tmp_path / "t.tsv").open(encoding="utf-8", newline=""), delimiter="\t"))
    assert tsv[0]["mt"] == "=1+1"
