"""Fixtures of the benchmark tests: the shared XQ-MEval data read straight from its parquet files, and
projects imported through the real importer (a few languages, to keep runs short)."""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.domain.units import parse_marked
from exports.benchmark.domain import PoolCandidate


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
    from annotation.review.xqmeval_import import import_xqmeval

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
