"""import_corpus: formats, idempotency, and bad input that writes nothing."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from core.models import GoldSegment, Project

ROWS = [
    ("s1", "Good morning.", "Guten Morgen."),
    ("s2", 'She said "no".', 'Sie sagte "nein".'),
    ("s3", "Thanks, all.", "Danke, alle."),
]


def write(tmp_path, name, content: str | bytes):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def tsv(rows=ROWS, header="id\tsource\treference"):
    return header + "\n" + "".join(f"{i}\t{s}\t{r}\n" for i, s, r in rows)


def run(*args):
    out = io.StringIO()
    call_command("import_corpus", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl", "parquet"])
def test_each_format_imports_the_same_gold_pairs(tmp_path, fmt):
    if fmt == "tsv":
        path = write(tmp_path, "c.tsv", tsv())
    elif fmt == "csv":
        import csv

        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["id", "source", "reference"])
        writer.writerows(ROWS)
        path = write(tmp_path, "c.csv", buf.getvalue())
    elif fmt == "jsonl":
        path = write(
            tmp_path, "c.jsonl", "".join(json.dumps({"id": i, "source": s, "reference": r}) + "\n" for i, s, r in ROWS)
        )
    else:
        table = pa.table(
            {"id": [r[0] for r in ROWS], "source": [r[1] for r in ROWS], "reference": [r[2] for r in ROWS]}
        )
        path = str(tmp_path / "c.parquet")
        pq.write_table(table, path)
    output = run("wmt", path, "--direction", "en-de")
    assert "3 gold segments imported" in output
    stored = sorted(GoldSegment.objects.filter(project__name="wmt").values_list("external_id", "source", "reference"))
    assert stored == sorted(ROWS)
    assert list(Project.objects.get(name="wmt").directions.values_list("code", flat=True)) == ["en-de"]


@pytest.mark.django_db
def test_reimport_changes_nothing_and_new_rows_are_added(tmp_path):
    path = write(tmp_path, "c.tsv", tsv())
    run("wmt", path, "--direction", "en-de")
    assert "0 gold segments imported, 3 unchanged" in run("wmt", path, "--direction", "en-de")
    more = write(tmp_path, "more.tsv", tsv([*ROWS, ("s4", "Bye.", "Tschüss.")]))
    assert "1 gold segments imported, 3 unchanged" in run("wmt", more, "--direction", "en-de")
    assert GoldSegment.objects.count() == 4


@pytest.mark.django_db
def test_configurable_column_names(tmp_path):
    path = write(tmp_path, "c.tsv", tsv(header="seg\tsrc\tref"))
    run(
        "wmt", path, "--direction", "en-zh", "--id-column", "seg", "--source-column", "src", "--reference-column", "ref"
    )
    assert GoldSegment.objects.filter(direction__code="en-zh").count() == 3


BAD_INPUTS = [
    ("missing column", "c.tsv", "id\tsource\n1\tHello\n", "missing column 'reference'"),
    ("empty file", "c.tsv", "", "the file is empty"),
    ("bad encoding", "c.tsv", b"id\tsource\treference\n1\tHello\t\xff\xfe bad\n", "not valid UTF-8"),
    ("empty cell", "c.tsv", "id\tsource\treference\n1\tHello\t\n2\tBye\tTschüss\n", "line 2: empty 'reference'"),
    (
        "duplicate id",
        "c.tsv",
        "id\tsource\treference\n1\tHello\tHallo\n1\tHello\tServus\n",
        "line 3: duplicate id '1' with different text",
    ),
    (
        "wrong field count",
        "c.tsv",
        "id\tsource\treference\n1\tHello\tHallo\textra\n",
        "line 2: 4 fields, the header has 3",
    ),
    ("bad json", "c.jsonl", '{"id": "1", "source": "a", "reference": "b"}\n{not json}\n', "line 2: invalid JSON"),
    ("unknown suffix", "c.txt", "id\tsource\treference\n", "cannot tell the format"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "name", "content", "message"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, label, name, content, message):
    path = write(tmp_path, name, content)
    with pytest.raises(CommandError, match=message):
        run("wmt", path, "--direction", "en-de")
    assert GoldSegment.objects.count() == 0
    assert not Project.objects.filter(name="wmt").exists()


@pytest.mark.django_db
def test_every_bad_row_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, "c.tsv", "id\tsource\treference\n1\t\tHallo\n2\tok\tok\n3\tHello\t\n")
    with pytest.raises(CommandError) as info:
        run("wmt", path, "--direction", "en-de")
    assert "line 2: empty 'source'" in str(info.value) and "line 4: empty 'reference'" in str(info.value)


@pytest.mark.django_db
def test_unknown_direction_is_rejected(tmp_path):
    path = write(tmp_path, "c.tsv", tsv())
    with pytest.raises(CommandError, match="unknown language code 'xx'"):
        run("wmt", path, "--direction", "en-xx")
    assert GoldSegment.objects.count() == 0


@pytest.mark.django_db
def test_different_text_under_an_existing_id_is_an_error_and_writes_nothing(tmp_path):
    run("wmt", write(tmp_path, "a.tsv", tsv()), "--direction", "en-de")
    changed = write(tmp_path, "b.tsv", tsv([("s1", "Good morning.", "Moin."), ("s9", "New.", "Neu.")]))
    with pytest.raises(CommandError, match="id 's1' already exists in wmt/en-de with different text"):
        run("wmt", changed, "--direction", "en-de")
    assert not GoldSegment.objects.filter(external_id="s9").exists()
    assert GoldSegment.objects.get(external_id="s1").reference == "Guten Morgen."


@pytest.mark.django_db
def test_hugging_face_dataset_from_a_local_directory(tmp_path):
    """--hf goes through datasets.load_dataset, here on a local dataset directory (no network)."""
    import datasets

    data = {"id": [r[0] for r in ROWS], "source": [r[1] for r in ROWS], "reference": [r[2] for r in ROWS]}
    root = tmp_path / "flores_mini"
    (root / "deu_Latn").mkdir(parents=True)
    datasets.Dataset.from_dict(data).to_parquet(str(root / "deu_Latn" / "devtest.parquet"))
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: deu_Latn\n  data_files:\n  - split: devtest\n    path: deu_Latn/devtest.parquet\n---\n"
    )
    output = run("flores", "--hf", str(root), "--config", "deu_Latn", "--split", "devtest", "--direction", "en-de")
    assert "3 gold segments imported" in output
    assert GoldSegment.objects.filter(project__name="flores").count() == 3


@pytest.mark.django_db
def test_hugging_face_dataset_that_cannot_load_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot load dataset"):
        run("flores", "--hf", str(tmp_path / "nowhere"), "--direction", "en-de")
