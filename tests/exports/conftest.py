"""Fixtures of the benchmark tests: the shared XQ-MEval data read straight from its parquet files, and
projects imported through the real importer (a few languages, to keep runs short)."""
from __future__ import annotations

import csv
import io
import unicodedata
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.units import Edit, apply_edit, parse_marked, split_units
from exports.merging import PoolCandidate


def read_pools(shared: Path):
    """{(language, segment_id): (reference, [PoolCandidate…])} of the accepted candidates."""
    decisions = {}
    with open(shared / "decisions.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            decisions[(row["language"], row["error_type"], int(row["count_id"]))] = row["decision"]
    pools: dict = defaultdict(list)
    refs = {}
    for path in sorted((shared / "candidates").glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            if decisions[(row["language"], row["error_type"], row["count_id"])] != "accepted":
                continue
            marked = parse_marked(row["mt"], row["ref"], row["language"])
            key = (row["language"], str(row["segment_id"]))
            refs[key] = row["ref"]
            label = f"{row['error_type']}.{row['error_position']}"
            pools[key].append(PoolCandidate(id=f"{row['error_type']}/{row['count_id']}", error_type=row["error_type"], edit=marked.edit, label=label, text=marked.text))
    return {key: (refs[key], pools[key]) for key in sorted(pools)}


@pytest.fixture(scope="session")
def shared_pools(shared_data):
    return read_pools(shared_data)


def import_languages(project_name: str, shared: Path, languages: list[str]):
    """Import the candidate files and decisions of ``languages`` through ``import_xqmeval``."""
    from injection.xqmeval_import import import_xqmeval

    files = [(p.name, p.read_bytes()) for p in sorted((shared / "candidates").glob("*.parquet")) if p.name.split("-")[1] in languages]
    out = io.StringIO()
    with open(shared / "decisions.csv", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        writer = csv.writer(out, lineterminator="\n")
        header = next(reader)
        writer.writerow(header)
        for row in reader:
            if row[0] in languages:
                writer.writerow(row)
    return import_xqmeval(project_name, files=files, decisions=("decisions.csv", out.getvalue().encode()))


def without_drift(text: str) -> str:
    """The text without punctuation, whitespace and width differences (an oracle written apart from the
    merger's unit-wise ``content_key``: it works on whole strings)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text) if not ch.isspace() and not unicodedata.category(ch).startswith("P"))


def locatable_anywhere(reference: str, language: str, c: PoolCandidate) -> bool:
    """Some span of the reference takes the candidate's edit so that the result is the candidate up to drift."""
    n = len(split_units(reference, language))
    target = without_drift(c.text)
    return any(
        without_drift(apply_edit(reference, Edit(s, e, c.edit.replacement), language)) == target
        for s in range(n + 1)
        for e in range(s, n + 1)
    )
