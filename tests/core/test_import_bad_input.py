"""Hostile and broken files on every import path (corpus, rating items, XQ-MEval candidates and decisions,
the project page's uploads): each is refused with a message naming the file, the line or row and the
field, never a traceback, and nothing is written. One table per path, one assertion helper."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.models import RatingItem, ReviewDecision
from core.models import Direction, GoldSegment, Project
from injection.models import Candidate, InjectionRun

TABLES = (Project, Direction, GoldSegment, InjectionRun, Candidate, ReviewDecision, RatingItem)


def counts() -> dict:
    return {model.__name__: model.objects.count() for model in TABLES}


def assert_refused(call, *expected: str) -> None:
    """``call`` raises CommandError whose message holds every ``expected`` part (file, line or row, field),
    and no table changed."""
    before = counts()
    with pytest.raises(CommandError) as exc:
        call()
    message = str(exc.value)
    for part in expected:
        assert part in message, f"{part!r} not in {message!r}"
    assert counts() == before


def parquet_bytes(columns: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


HEADER = b"id\tsource\treference\n"

# (label, file name, content, parts of the message: file + line + field or reason)
BAD_CORPORA = [
    (
        "lone surrogate in JSON",
        "c.jsonl",
        b'{"id": "1", "source": "a\\ud800b", "reference": "b"}\n',
        ["c.jsonl line 1", "'source'", "U+D800"],
    ),
    ("escape sequence", "c.tsv", HEADER + b"1\tHello\tHal\x1b[31mlo\n", ["c.tsv line 2", "'reference'", "U+001B"]),
    ("bell in the id", "c.tsv", HEADER + b"1\x07\tHello\tHallo\n", ["c.tsv line 2", "'id'", "U+0007"]),
    (
        "NUL escaped in JSON",
        "c.jsonl",
        b'{"id": "1", "source": "a\\u0000", "reference": "b"}\n',
        ["c.jsonl line 1", "'source'", "NUL"],
    ),
    (
        "column twice in TSV",
        "c.tsv",
        b"id\tsource\treference\treference\n1\tHello\tHallo\tServus\n",
        ["c.tsv line 1", "column 'reference' appears twice"],
    ),
    (
        "column twice in CSV",
        "c.csv",
        b"id,source,source,reference\n1,Hello,Hi,Hallo\n",
        ["c.csv line 1", "column 'source' appears twice"],
    ),
    (
        "key twice in a JSON object",
        "c.jsonl",
        b'{"id": "1", "source": "a", "reference": "b", "reference": "c"}\n',
        ["c.jsonl line 1", "key 'reference' appears twice"],
    ),
    ("UTF-16", "c.tsv", (HEADER + b"1\tHello\tHallo\n").decode().encode("utf-16"), ["c.tsv", "UTF-16", "UTF-8"]),
    (
        "latin-1 on line 3",
        "c.tsv",
        HEADER + b"1\tHello\tHallo\n2\tCoffee\tCaf\xe9\n",
        ["c.tsv line 3", "not valid UTF-8"],
    ),
    # nothing visible: zero-width spaces, a byte order mark, bidirectional marks are an empty cell
    (
        "invisible characters only",
        "c.tsv",
        HEADER + "1\tHello\t\u200b\ufeff\u200e \n".encode(),
        ["c.tsv line 2", "empty 'reference'"],
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "name", "content", "expected"), BAD_CORPORA, ids=[b[0] for b in BAD_CORPORA])
def test_bad_corpus_files_are_refused_by_the_command(tmp_path, label, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    assert_refused(
        lambda: call_command("import_corpus", "wmt", str(path), "--direction", "en-de", stdout=io.StringIO()), *expected
    )


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "name", "content", "expected"), BAD_CORPORA[:4], ids=[b[0] for b in BAD_CORPORA[:4]])
def test_bad_rating_item_files_are_refused(tmp_path, project, label, name, content, expected):
    """The same text cells in system outputs to rate (column 'text' for 'reference')."""
    content = content.replace(b"reference", b"text")
    path = tmp_path / name
    path.write_bytes(content)
    expected = [part.replace("'reference'", "'text'") for part in expected]
    assert_refused(
        lambda: call_command("import_rating_items", "demo", "en-de", str(path), stdout=io.StringIO()), *expected
    )


@pytest.mark.django_db
def test_bad_corpus_upload_on_the_project_page_is_a_form_error(client, project, admin_user):
    client.force_login(admin_user)
    before = counts()
    upload = SimpleUploadedFile("c.jsonl", b'{"id": "1", "source": "a\\udfffb", "reference": "b"}\n')
    response = client.post(
        f"/projects/{project.name}/corpus/",
        {
            "file": upload,
            "direction": "en-de",
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "c.jsonl line 1" in page and "U+DFFF" in page and "nothing imported" in page
    assert counts() == before


def test_jsonl_lines_are_split_at_newlines_only():
    """U+2028, U+2029 and U+0085 are text inside a JSON string (json.dumps writes them raw with
    ensure_ascii=False), not line breaks."""
    from core.corpus.domain import read_corpus

    text = "Hallo\u2028Welt\u2029!\x85."
    data = (
        json.dumps({"id": "1", "source": "Hello.", "reference": text}, ensure_ascii=False)
        + "\r\n"
        + json.dumps({"id": "2", "source": "Bye.", "reference": "Tschüss."})
        + "\n"
    ).encode()
    rows = read_corpus(data, "c.jsonl")
    assert [(r.external_id, r.reference, r.location) for r in rows] == [
        ("1", text, "c.jsonl line 1"),
        ("2", "Tschüss.", "c.jsonl line 2"),
    ]


# ---- XQ-MEval candidate files and decisions ---------------------------------------------------------------


def xq_columns(**overrides) -> dict:
    row = {
        "language": "de",
        "count_id": 1,
        "segment_id": 7,
        "error_type": "Addition",
        "error_position": "head",
        "src": "The house is big.",
        "ref": "Das Haus ist groß.",
        "mt": "Das <v>alte</v> Haus ist groß.",
        "reject": False,
    }
    row.update(overrides)
    return {k: [v] for k, v in row.items()}


# (label, overrides of the one row, parts of the message)
BAD_CANDIDATES = [
    ("NUL in src", {"src": "The\x00 house is big."}, ["en-de-Addition.parquet row 1", "'src'", "NUL"]),
    ("NUL in mt", {"mt": "Das <v>al\x00te</v> Haus ist groß."}, ["en-de-Addition.parquet row 1", "'mt'", "NUL"]),
    ("escape in ref", {"ref": "Das \x1b[2JHaus ist groß."}, ["en-de-Addition.parquet row 1", "'ref'", "U+001B"]),
    ("segment_id longer than a bigint", {"segment_id": "9" * 250}, ["en-de-Addition.parquet row 1", "'segment_id'"]),
    ("count_id longer than a bigint", {"count_id": "9" * 150}, ["en-de-Addition.parquet row 1", "'count_id'"]),
    ("negative count_id", {"count_id": -5}, ["en-de-Addition.parquet row 1", "'count_id'"]),
    ("zero-width spaces only in mt", {"mt": "\u200b\u200b"}, ["en-de-Addition.parquet row 1", "empty 'mt'"]),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "overrides", "expected"), BAD_CANDIDATES, ids=[b[0] for b in BAD_CANDIDATES])
def test_bad_xqmeval_candidate_files_are_refused(tmp_path, label, overrides, expected):
    (tmp_path / "en-de-Addition.parquet").write_bytes(parquet_bytes(xq_columns(**overrides)))
    assert_refused(
        lambda: call_command("import_xqmeval", "xq", str(tmp_path), stdout=io.StringIO(), verbosity=0), *expected
    )


DECISIONS_HEADER = b"language,error_type,count_id,segment_id,error_position,decision\n"
BAD_DECISIONS = [
    (
        "a field over the csv module's limit",
        DECISIONS_HEADER + b'de,Addition,1,7,head,accepted\nde,Addition,2,"' + b"x" * 200_000 + b'",head,accepted\n',
        ["decisions.csv line 3"],
    ),
    # the corpus reader's message for a byte order mark (was the generic "not valid UTF-8 (byte 0 of a read block …)")
    (
        "UTF-16",
        (DECISIONS_HEADER + b"de,Addition,1,7,head,accepted\n").decode().encode("utf-16"),
        ["decisions.csv", "UTF-16", "save it as UTF-8"],
    ),
    (
        "UTF-16 big-endian",
        b"\xfe\xff" + (DECISIONS_HEADER + b"de,Addition,1,7,head,accepted\n").decode().encode("utf-16-be"),
        ["decisions.csv", "UTF-16"],
    ),
    ("latin-1", DECISIONS_HEADER + b"de,Addition,1,7,head,accept\xe9\n", ["decisions.csv", "not valid UTF-8"]),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "content", "expected"), BAD_DECISIONS, ids=[b[0] for b in BAD_DECISIONS])
def test_bad_decisions_files_are_refused(tmp_path, label, content, expected):
    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "en-de-Addition.parquet").write_bytes(parquet_bytes(xq_columns()))
    decisions = tmp_path / "decisions.csv"
    decisions.write_bytes(content)
    assert_refused(
        lambda: call_command(
            "import_xqmeval", "xq", str(folder), "--decisions", str(decisions), stdout=io.StringIO(), verbosity=0
        ),
        *expected,
    )


@pytest.mark.django_db
def test_bad_xqmeval_upload_on_the_project_page_is_a_form_error(client, project, admin_user):
    client.force_login(admin_user)
    before = counts()
    upload = SimpleUploadedFile("en-de-Addition.parquet", parquet_bytes(xq_columns(ref="Das Haus\x00 ist groß.")))
    response = client.post(f"/projects/{project.name}/xqmeval/", {"candidate_files": [upload]})
    assert response.status_code == 200
    page = response.content.decode()
    assert "en-de-Addition.parquet row 1" in page and "NUL" in page and "Nothing imported." in page
    assert counts() == before
