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

from core.domain.units import Edit, apply_edit, parse_marked, split_units
from core.models import GoldSegment
from exports.benchmark.domain import PoolCandidate
from injection.models import Candidate, InjectionRun


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
            pools[key].append(
                PoolCandidate(
                    id=f"{row['error_type']}/{row['count_id']}",
                    error_type=row["error_type"],
                    edit=marked.edit,
                    label=label,
                    text=marked.text,
                )
            )
    return {key: (refs[key], pools[key]) for key in sorted(pools)}


@pytest.fixture(scope="session")
def shared_pools(shared_data):
    return read_pools(shared_data)


def import_languages(project_name: str, shared: Path, languages: list[str]):
    """Import the candidate files and decisions of ``languages`` through ``import_xqmeval``."""
    from annotation.review.xqmeval_import.services import xqmeval_import

    files = [
        (p.name, p.read_bytes())
        for p in sorted((shared / "candidates").glob("*.parquet"))
        if p.name.split("-")[1] in languages
    ]
    out = io.StringIO()
    with open(shared / "decisions.csv", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        writer = csv.writer(out, lineterminator="\n")
        header = next(reader)
        writer.writerow(header)
        for row in reader:
            if row[0] in languages:
                writer.writerow(row)
    return xqmeval_import(project_name=project_name, files=files, decisions=("decisions.csv", out.getvalue().encode()))


def without_drift(text: str) -> str:
    """The text without punctuation, whitespace and width differences (an oracle written apart from the
    merger's unit-wise ``content_key``: it works on whole strings)."""
    return "".join(
        ch
        for ch in unicodedata.normalize("NFKC", text)
        if not ch.isspace() and not unicodedata.category(ch).startswith("P")
    )


def locatable_anywhere(reference: str, language: str, c: PoolCandidate) -> bool:
    """Some span of the reference takes the candidate's edit so that the result is the candidate up to drift."""
    n = len(split_units(reference, language))
    target = without_drift(c.text)
    return any(
        without_drift(apply_edit(reference, Edit(s, e, c.edit.replacement), language)) == target
        for s in range(n + 1)
        for e in range(s, n + 1)
    )


REFS = {
    "en-de": "Der Hund läuft schnell über die grüne Wiese zum alten Haus am Fluss .",
    "en-zh": "我们今天下午去公园散步然后回家。",
}


@pytest.fixture
def seeded(project, settings, tmp_path):
    """Two gold pairs per direction (en-de, en-zh) with four accepted candidates each, one unplaceable."""
    settings.RELEASES_DIR = tmp_path / "releases"
    project.options = {
        "sampling": {"n": 2, "monolingual_repetitions": 2, "multilingual_repetitions": 2, "multilingual_systems": 2}
    }
    project.save()
    run = InjectionRun.objects.create(project=project, name="manual", backend="rule")
    for code, ref in REFS.items():
        direction = project.directions.get(code=code)
        language = code.split("-")[1]
        for seg_no in range(2):
            seg = GoldSegment.objects.create(
                project=project, direction=direction, external_id=str(seg_no), source=f"source {seg_no}", reference=ref
            )
            edits = [
                ("Addition", "head", Edit(1, 1, ("sehr",) if language == "de" else ("很",))),
                ("Omission", "head", Edit(3, 4, ())),
                ("Mistranslation", "end", Edit(8, 9, ("blaue",) if language == "de" else ("家",))),
                ("Untranslated", "end", Edit(10, 11, ("old",) if language == "de" else ("x",))),
            ]
            for etype, pos, edit in edits:
                text = apply_edit(ref, edit, language)
                if etype == "Untranslated" and seg_no == 1:
                    text = "<b>bold</b> " + text  # changed outside its span: unplaceable
                if etype == "Mistranslation" and seg_no == 1 and language == "de":
                    text = text[: -len(" .")] + " !"  # drift outside its span (punctuation): transplanted
                Candidate.objects.create(
                    run=run,
                    segment=seg,
                    error_type=etype,
                    position=pos,
                    text=text,
                    span_start=edit.start,
                    span_end=edit.end,
                    edit_text=(" " if language == "de" else "").join(edit.replacement),
                    status="accepted",
                )
    return project
