"""Import hardening (issue 12): value types, bidirectional controls, over-long ids; nothing written on a bad file."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from core.models import Direction, GoldSegment, Project

RLO = "\u202e"


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_corpus", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def jsonl(tmp_path, records, name="c.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


# ---- item 6: values that are not strings are bad rows --------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("source", ["Hello"], "a list"),
        ("source", {"text": "Hello"}, "an object"),
        ("reference", True, "a boolean"),
        ("reference", 42, "a number"),
        ("id", 1.5, "a number"),
        ("id", False, "a boolean"),
        ("id", ["s1"], "a list"),
    ],
)
def test_jsonl_values_that_are_not_strings_are_bad_rows(tmp_path, field, value, kind):
    good = {"id": "s1", "source": "Hello.", "reference": "Hallo."}
    path = jsonl(tmp_path, [good, {**good, "id": "s2", field: value}])
    with pytest.raises(CommandError) as exc:
        run("wmt", path, "--direction", "en-de")
    message = str(exc.value)
    assert f"c.jsonl line 2: '{field}' must be" in message and kind in message
    assert not GoldSegment.objects.exists() and not Project.objects.filter(name="wmt").exists()


@pytest.mark.django_db
def test_parquet_list_column_is_a_bad_row_and_integer_ids_are_kept(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(
        pa.table({"id": [1, 2], "source": [["Hello."], ["Bye."]], "reference": ["Hallo.", "Tschüss."]}), path
    )
    with pytest.raises(CommandError) as exc:
        run("wmt", str(path), "--direction", "en-de")
    assert "c.parquet row 1: 'source' must be a string, got a list" in str(exc.value)
    assert "c.parquet row 2" in str(exc.value)
    pq.write_table(pa.table({"id": [1, 2], "source": ["Hello.", "Bye."], "reference": ["Hallo.", "Tschüss."]}), path)
    run("wmt", str(path), "--direction", "en-de")
    assert sorted(GoldSegment.objects.values_list("external_id", flat=True)) == ["1", "2"]


@pytest.mark.django_db
def test_rating_items_refuse_values_that_are_not_strings(tmp_path, project):
    from annotation.models import RatingItem

    path = jsonl(
        tmp_path,
        [{"id": "1", "source": "Hi.", "text": "Hallo."}, {"id": "2", "source": "Hi.", "text": {"a": 1}}],
        "out.jsonl",
    )
    with pytest.raises(CommandError) as exc:
        call_command("import_rating_items", "demo", "en-de", path, stdout=io.StringIO())
    assert "out.jsonl line 2: field 'text' must be a string, got an object" in str(exc.value)
    assert not RatingItem.objects.exists()


def _xq_table(**overrides):
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
    return pa.table({k: [v] for k, v in row.items()})


def _parquet_bytes(table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"segment_id": 7.9}, "'segment_id' must be a whole number, got a number"),
        ({"count_id": True}, "'count_id' must be a whole number, got a boolean"),
        ({"ref": ["Das Haus ist groß."]}, "'ref' must be a string, got a list"),
    ],
)
def test_xqmeval_values_of_the_wrong_type_are_bad_rows(overrides, message):
    from annotation.review.xqmeval_import.domain import XQMEvalFormatError, read_release

    with pytest.raises(XQMEvalFormatError) as exc:
        read_release([("en-de-Addition.parquet", _parquet_bytes(_xq_table(**overrides)))])
    assert f"en-de-Addition.parquet row 1: {message}" in str(exc.value)


# ---- item 5: bidirectional control characters ---------------------------------------------------------


@pytest.mark.django_db
def test_corpus_rows_with_bidi_overrides_are_refused_and_marks_are_reported(tmp_path):
    path = jsonl(tmp_path, [{"id": "1", "source": "Hello.", "reference": f"Hal{RLO}lo."}])
    with pytest.raises(CommandError) as exc:
        run("wmt", path, "--direction", "en-de")
    assert (
        "c.jsonl line 1: 'reference' contains bidirectional control character(s) U+202E RIGHT-TO-LEFT OVERRIDE"
        in str(exc.value)
    )
    assert not GoldSegment.objects.exists()
    path = jsonl(tmp_path, [{"id": "1", "source": "Hello.", "reference": "\u200fمرحبا."}], "ar.jsonl")
    out, err = run("wmt", path, "--direction", "en-ar")
    assert "1 gold segments imported" in out
    assert "ar.jsonl line 1: reference has bidirectional mark(s) U+200F RIGHT-TO-LEFT MARK" in err


def test_xqmeval_gold_with_an_override_is_refused():
    from annotation.review.xqmeval_import.domain import XQMEvalFormatError, read_release

    with pytest.raises(XQMEvalFormatError) as exc:
        read_release([("en-de-Addition.parquet", _parquet_bytes(_xq_table(src=f"The {RLO}house is big.")))])
    assert "row 1: 'src' contains bidirectional control character(s) U+202E" in str(exc.value)


@pytest.mark.django_db
def test_rating_items_with_an_isolate_are_refused(tmp_path, project):
    path = jsonl(tmp_path, [{"id": "1", "source": "Hi.", "text": "Hallo \u2067x\u2069."}], "out.jsonl")
    with pytest.raises(CommandError) as exc:
        call_command("import_rating_items", "demo", "en-de", path, stdout=io.StringIO())
    assert (
        "out.jsonl line 1: field 'text' contains bidirectional control character(s) U+2067 RIGHT-TO-LEFT ISOLATE"
        in str(exc.value)
    )


@pytest.mark.parametrize(
    "control",
    [
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\u200e",
        "\u200f",
        "\u061c",
    ],
)
def test_the_bidi_check_flags_every_control_the_reference_lacks(control):
    from injection.domain.checks import run_checks

    reference = "Das Haus ist groß."
    checks, flags = run_checks(
        reference=reference,
        candidate_text=f"Das {control}alte Haus ist groß.",
        edit=None,
        language="de",
        kind="mqm",
        error_type="Addition",
        position="head",
    )
    assert "bidi_controls" in flags and f"U+{ord(control):04X}" in checks["bidi_controls"]["detail"]
    checks, flags = run_checks(
        reference=reference,
        candidate_text="Das alte Haus ist groß.",
        edit=None,
        language="de",
        kind="mqm",
        error_type="Addition",
        position="head",
    )
    assert checks["bidi_controls"] == {"passed": True, "detail": ""}


# ---- item 7: over-long ids and directions: nothing written ------------------------------------------


@pytest.mark.django_db
def test_an_id_longer_than_the_column_is_a_bad_row_and_leaves_no_project(tmp_path):
    path = jsonl(
        tmp_path,
        [
            {"id": "s1", "source": "Hello.", "reference": "Hallo."},
            {"id": "x" * 201, "source": "Hi.", "reference": "Hi."},
        ],
    )
    with pytest.raises(CommandError) as exc:
        run("fresh", path, "--direction", "en-de")
    assert "c.jsonl line 2: id 'xxxx" in str(exc.value) and "201 characters long, at most 200 fit" in str(exc.value)
    assert not Project.objects.filter(name="fresh").exists()
    assert not GoldSegment.objects.exists() and not Direction.objects.filter(code="en-de").exists()


@pytest.mark.django_db
def test_a_project_name_longer_than_the_column_is_a_clear_error(tmp_path):
    path = jsonl(tmp_path, [{"id": "s1", "source": "Hello.", "reference": "Hallo."}])
    with pytest.raises(CommandError) as exc:
        run("p" * 101, path, "--direction", "en-de")
    assert "project:" in str(exc.value) and "at most 100 characters" in str(exc.value)
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_a_direction_from_another_source_language_creates_no_direction(tmp_path, project):
    path = jsonl(tmp_path, [{"id": "s1", "source": "Hallo.", "reference": "Bonjour."}])
    with pytest.raises(CommandError) as exc:
        run("demo", path, "--direction", "de-fr")
    assert "de-fr does not start from project demo's source language en" in str(exc.value)
    assert not Direction.objects.filter(code="de-fr").exists()
    assert not GoldSegment.objects.exists()


@pytest.mark.django_db
def test_rating_item_ids_longer_than_the_column_are_bad_rows(tmp_path, project):
    path = jsonl(tmp_path, [{"id": "9" * 201, "source": "Hi.", "text": "Hallo."}], "out.jsonl")
    with pytest.raises(CommandError) as exc:
        call_command("import_rating_items", "demo", "en-de", path, stdout=io.StringIO())
    assert "out.jsonl line 1: field 'id' is 201 characters long, at most 200 fit" in str(exc.value)


@pytest.mark.django_db
def test_admin_upload_with_a_long_id_answers_a_form_error(client, project, admin_user):
    client.force_login(admin_user)
    url = f"/admin/core/project/{project.pk}/import-corpus/"
    upload = SimpleUploadedFile("c.tsv", f"id\tsource\treference\n{'x' * 300}\tHello\tHallo\n".encode())
    form = {
        "file": upload,
        "direction": "en-de",
        "id_column": "id",
        "source_column": "source",
        "reference_column": "reference",
    }
    response = client.post(url, form, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "C.tsv line 2: id" in page and "300 characters long" in page, [str(m) for m in response.context["messages"]]
    assert not GoldSegment.objects.exists()


@pytest.mark.django_db
def test_admin_xqmeval_upload_with_a_bad_project_name_answers_a_form_error(client, admin_user):
    client.force_login(admin_user)
    upload = SimpleUploadedFile("en-de-Addition.parquet", _parquet_bytes(_xq_table()))
    response = client.post(
        "/admin/core/project/import-xqmeval/", {"project_name": "n" * 150, "candidate_files": [upload]}, follow=True
    )
    assert response.status_code == 200 and "at most 100 characters" in response.content.decode()
    assert not Project.objects.exists()


# ---- item 10: thousands of bad rows are summarised -----------------------------------------------------


@pytest.mark.django_db
def test_admin_upload_summarises_thousands_of_bad_rows(client, project, admin_user):
    client.force_login(admin_user)
    url = f"/admin/core/project/{project.pk}/import-corpus/"
    body = "id\tsource\treference\n" + "".join(f"{i}\tHello\t\n" for i in range(3000))
    form = {
        "file": SimpleUploadedFile("c.tsv", body.encode()),
        "direction": "en-de",
        "id_column": "id",
        "source_column": "source",
        "reference_column": "reference",
    }
    page = client.post(url, form, follow=True).content.decode()
    assert page.count("empty &#x27;reference&#x27;") + page.count("empty 'reference'") == 20
    assert "… and 2980 more problem(s) (3000 in all)." in page
    assert "C.tsv: nothing imported." in page  # the admin capitalises messages
