"""The same input limits for every upload (#48.3): docs/security.md's table of inputs and limits agrees with
the code, and every input refuses a text one character past its limit, naming the file, line and field."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings

from annotation.review.xqmeval_import.domain import FileGroup, read_group, spool_decisions
from core.corpus.domain import DEFAULT_LIMITS, CorpusError, Limits, read_corpus
from exports.metaeval import evalset
from exports.metaeval.reference import make_evalset
from llm_client import MAX_ANSWER_BYTES, MAX_JSON_NESTING, MAX_RAW_OUTPUT_CHARS
from tests.conftest import REPO

COLUMNS = ["file size", "text", "rows", "columns", "JSON nesting", "parquet declared size"]


def _documented() -> dict[str, dict[str, str]]:
    text = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    section = text.split("### Input limits", 1)[1].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("| "))
    lines = []  # the table: its rows up to the first line that is not one (later tables are other sections')
    for line in section[start:]:
        if not line.startswith("| "):
            break
        lines.append(line)
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["input", "where"] + COLUMNS
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if set(cells[0]) <= {"-", " "}:
            continue
        rows[cells[0]] = dict(zip(COLUMNS, cells[2:], strict=True))
    return rows


def _mib(n: int) -> str:
    assert n % (1024 * 1024) == 0
    return f"{n // (1024 * 1024)} MiB"


def _in_code() -> dict[str, dict[str, str]]:
    """What the code enforces, in the table's words (the settings' defaults: the environment sets none)."""
    limits = Limits(**settings.CORPUS_LIMITS)
    upload, text = _mib(settings.CORPUS_UPLOAD_MAX_BYTES), f"{limits.segment_chars:,} characters"
    rows, columns, nesting = f"{limits.rows:,}", f"{limits.columns:,}", f"{limits.nesting:,}"
    parquet, none = _mib(limits.parquet_bytes), "—"
    return {
        "corpus file": dict(zip(COLUMNS, [upload, text, rows, columns, nesting, parquet], strict=True)),
        "system outputs to rate (Likert rating items)": dict(
            zip(COLUMNS, [upload, text, rows, columns, nesting, parquet], strict=True)
        ),
        "XQ-MEval candidate files (gold pairs and candidates)": dict(
            zip(COLUMNS, [upload, text, rows, columns, none, parquet], strict=True)
        ),
        "XQ-MEval decisions": dict(zip(COLUMNS, [upload, text, rows, columns, none, none], strict=True)),
        "EvalSet (mt-metrics-eval layout)": dict(
            zip(COLUMNS, [none, text, f"{evalset.MAX_LINES:,}", none, none, none], strict=True)
        ),
        "LLM answer": dict(
            zip(
                COLUMNS,
                [
                    _mib(MAX_ANSWER_BYTES),
                    f"{MAX_RAW_OUTPUT_CHARS:,} characters kept",
                    none,
                    none,
                    f"{MAX_JSON_NESTING}",
                    none,
                ],
                strict=True,
            )
        ),
    }


def test_the_documented_table_is_what_the_code_enforces():
    assert _documented() == _in_code()


# ---- each input refuses a text one character past the limit ------------------------------------------------

LONG = "x" * 5_001


def test_a_corpus_file():
    with pytest.raises(CorpusError, match=r"c\.tsv line 2: 'reference' has 5001 characters, more than the 5000"):
        read_corpus(f"id\tsource\treference\n1\tHello.\t{LONG}\n".encode(), "c.tsv")


@pytest.mark.django_db
def test_system_outputs_to_rate(project):
    from annotation.models import RatingItem
    from annotation.rating.services import system_outputs_import
    from core.services import ImportRejected

    rows = [{"source": "Hello.", "text": "Hallo.", "_location": "o.jsonl line 1"}]
    rows.append({"source": "Hello.", "text": LONG, "_location": "o.jsonl line 2"})
    with pytest.raises(ImportRejected, match=r"o\.jsonl line 2: field 'text' has 5001 characters, more than the 5000"):
        system_outputs_import(project=project, direction_code="en-de", rows=rows, source_name="o.jsonl")
    assert not RatingItem.objects.exists()


def _candidates(n: int = 1, **change) -> bytes:
    row = {
        "language": "de",
        "count_id": 1,
        "segment_id": 7,
        "error_type": "Addition",
        "error_position": "head",
        "src": "Hello there.",
        "ref": "Hallo da.",
        "mt": "Hallo <v>dort</v> da.",
    }
    rows = [{**row, "count_id": i + 1, **change} for i in range(n)]
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out.getvalue()


def _group(data: bytes, limits: Limits | None = None) -> list[str]:
    group = FileGroup("de", [("en-de-Addition.parquet", "en-de", "Addition", data)])
    if limits is not None:
        group.limits = limits
    return read_group(group).errors


def test_xqmeval_candidate_files():
    assert _group(_candidates()) == []
    assert _group(_candidates(ref=LONG)) == [
        "en-de-Addition.parquet row 1: 'ref' has 5001 characters, more than the 5000 allowed"
    ]
    assert _group(_candidates(3), Limits(rows=2)) == ["en-de-Addition.parquet: 3 rows, more than the 2 allowed"]


def _decisions(data: str, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    spool, errors = spool_decisions(("decisions.csv", data.encode()), limits)
    spool.close()
    return errors


def test_xqmeval_decisions():
    header = "language,error_type,count_id,segment_id,error_position,decision\n"
    assert _decisions(header + "de,Addition,1,7,head,accepted\n") == []
    assert _decisions(header + f"de,Addition,1,7,{LONG},accepted\n") == [
        "decisions.csv line 2: 'error_position' has 5001 characters, more than the 5000 allowed"
    ]
    many = header + "de,Addition,1,7,head,accepted\n" * 3
    assert _decisions(many, Limits(rows=2)) == ["decisions.csv line 4: more than 2 rows"]


def test_an_evalset(tmp_path):
    d = Path(evalset.write(make_evalset.build(), str(tmp_path)))
    name, lp = d.name, "en-de"
    evalset.read(str(tmp_path), name, lp)  # as written: within the limits
    path = next((d / "system-outputs" / lp).glob("*.txt"))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = LONG
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        evalset.EvalSetError, match=re.escape(f"{path}, line 3: has 5001 characters, more than the 5000")
    ):
        evalset.read(str(tmp_path), name, lp)
