"""Streaming release (issue 15): the files written direction by direction and system by system hold the
rows of a whole-table read, in the same order, with the bytes of the whole-table writer."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.models import Project
from exports.benchmark import services
from exports.models import PseudoSystem, PseudoTranslation
from exports.release import selectors as release_selectors
from exports.release import services as release_services
from exports.release.domain import release_files
from exports.release.services.content import _SystemStore as SystemStore
from tests.exports.conftest import import_languages

SMALL_PLAN = {"monolingual_repetitions": 3, "multilingual_repetitions": 4}


def natural(value: str):
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def whole_table(project: Project, direction_code: str) -> pd.DataFrame:
    """Every pseudo translation of a direction in one query, ordered as the release promises (gold pair
    id in natural order, level, span positions), with pandas — the read the streamed release replaces."""
    frame = pd.DataFrame.from_records(
        PseudoTranslation.objects.filter(segment__project=project, segment__direction__code=direction_code).values(
            "segment__external_id", "segment__source", "segment__reference", "level", "text", "marked_text", "spans"
        )
    )
    frame["order"] = [
        (natural(ext), level, [(s["ref_start"], s["ref_end"], s["label"]) for s in spans])
        for ext, level, spans in zip(frame["segment__external_id"], frame["level"], frame["spans"])
    ]
    frame = frame.iloc[sorted(range(len(frame)), key=lambda i: frame["order"].iloc[i])].reset_index(drop=True)
    frame["triplet_id"] = [
        f"{direction_code}/{ext}/{'+'.join(s['label'] for s in spans) or 'reference'}"
        for ext, spans in zip(frame["segment__external_id"], frame["spans"])
    ]
    return frame


def import_and_build(shared_data) -> int:
    import_languages("xqm", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": SMALL_PLAN}
    project.save()
    services.build_run(project=project)
    return project.pk


@pytest.fixture(scope="module")
def built_once(module_data, shared_data):
    """Imported and built once for the module (each test's changes are rolled back after it)."""
    return module_data(lambda: import_and_build(shared_data))


@pytest.fixture
def built(db, built_once):
    return Project.objects.get(pk=built_once)


@pytest.mark.shared_data
@pytest.mark.django_db
def test_streamed_release_rows_equal_a_whole_table_read_in_the_same_order(built, tmp_path, monkeypatch):
    # small blocks, so each direction streams in many queries
    monkeypatch.setattr(release_selectors, "TRIPLET_BLOCK_SEGMENTS", 7)
    monkeypatch.setattr(release_files, "TRIPLET_BATCH", 100)
    release = release_services.release_create(
        project=built, version="1.0.0", out_dir=tmp_path / "r", formats=("jsonl",)
    )
    for direction in ("en-de", "en-zh"):
        expected = whole_table(built, direction)
        got = pq.read_table(tmp_path / "r" / direction / "test.parquet").to_pandas()
        assert len(got) == len(expected) > 1000
        assert list(got["triplet_id"]) == list(expected["triplet_id"])
        assert list(got["mt"]) == list(expected["text"])
        assert list(got["mt_marked"]) == list(expected["marked_text"])
        assert list(got["ref"]) == list(expected["segment__reference"])
        assert list(got["src"]) == list(expected["segment__source"])
        assert list(got["num_errors"]) == list(expected["level"])
        lines = (tmp_path / "r" / direction / "test.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)["triplet_id"] for line in lines] == list(expected["triplet_id"])
    # the pseudo systems stored while streaming are the ones in the files
    mono = pq.read_table(tmp_path / "r" / "systems" / "monolingual.parquet").to_pydict()
    stored = {s.name: s.triplet_ids for s in PseudoSystem.objects.filter(release=release, kind="monolingual")}
    assert len(stored) == release.manifest["systems"]["monolingual"] > 0
    from_file: dict[str, list[str]] = {}
    for system_id, tid in zip(mono["system_id"], mono["triplet_id"]):
        from_file.setdefault(system_id, []).append(tid)
    assert from_file == stored


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_failed_release_leaves_no_pseudo_systems(built, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(release_files, "_write_excluded", broken)
    with pytest.raises(OSError):
        release_services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "r")
    assert not PseudoSystem.objects.filter(release__project=built).exists()
    assert not (tmp_path / "r").exists()


@pytest.mark.shared_data
@pytest.mark.django_db
def test_the_release_reads_its_direction_list_as_one_row_per_direction(built):
    """Every step of a release (start, finish) reads the list of directions; a query that returns every
    pseudo translation to find them (DISTINCT under the model's default ordering) held ≈ 100 MB before a
    release of 90 directions staged anything. Counted in rows the query returns, not in time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        directions = release_selectors.triplet_directions(built)
    assert directions == ["en-de", "en-zh"]
    (query,) = queries.captured_queries
    with connection.cursor() as cursor:
        cursor.execute(query["sql"])
        returned = cursor.fetchall()
    assert len(returned) == len(directions)
    assert PseudoTranslation.objects.filter(segment__project=built).count() > 100 * len(directions)


@pytest.mark.shared_data
@pytest.mark.django_db
def test_pseudo_systems_are_stored_in_bounded_batches_whatever_the_number_of_directions(built, tmp_path, monkeypatch):
    """The store holds at most BATCH_SYSTEMS systems and about BATCH_IDS ids between two writes (one system
    past the bound at most), and the rows it writes are those of one write of everything, in the same order."""
    from core import bulk

    batches = []
    insert = bulk.insert_objects

    def recording(model, objects, *args, **kwargs):  # the real insert, its batch noted
        if model is PseudoSystem and objects:  # (the last write may find nothing left)
            batches.append(
                (len(objects), sum(len(o.triplet_ids) for o in objects), max(len(o.triplet_ids) for o in objects))
            )
        return insert(model, objects, *args, **kwargs)

    monkeypatch.setattr(bulk, "insert_objects", recording)
    monkeypatch.setattr(SystemStore, "BATCH_SYSTEMS", 7)
    monkeypatch.setattr(SystemStore, "BATCH_IDS", 1000)
    release = release_services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "batched")
    assert len(batches) > 2
    for systems, ids, largest in batches:
        assert systems <= 7 and ids < 1000 + largest
    batched = list(
        PseudoSystem.objects.filter(release=release).order_by("id").values_list("name", "seed", "triplet_ids")
    )
    assert len(batched) == sum(n for n, _, _ in batches) == sum(release.manifest["systems"].values())

    monkeypatch.setattr(SystemStore, "BATCH_SYSTEMS", 10**9)
    monkeypatch.setattr(SystemStore, "BATCH_IDS", 10**9)
    whole = release_services.release_create(project=built, version="1.0.1", out_dir=tmp_path / "whole")
    assert batches[-1][0] == len(batched)  # one write of everything
    assert (
        list(PseudoSystem.objects.filter(release=whole).order_by("id").values_list("name", "seed", "triplet_ids"))
        == batched
    )


def _table(n: int, seed: int = 0) -> pa.Table:
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "Ω", "中文"]
    return pa.table(
        {
            "system_id": [f"s{i // 50}" for i in range(n)],
            "text": [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(n)],
            "level": pa.array([rng.randint(0, 5) for _ in range(n)], type=pa.int32()),
        }
    )


@pytest.mark.parametrize("pieces", [[1], [3000], [999, 1, 2000, 5, 1995], [2500, 2500]])
def test_row_group_writer_gives_the_bytes_of_the_whole_table_writer(tmp_path, monkeypatch, pieces):
    monkeypatch.setitem(release_files.PARQUET_OPTIONS, "row_group_size", 1000)
    monkeypatch.setattr(release_files, "ROW_GROUP", 1000)
    table = _table(sum(pieces))
    pq.write_table(table, tmp_path / "whole.parquet", **release_files.PARQUET_OPTIONS)
    writer = release_files._RowGroupWriter(tmp_path / "streamed.parquet", table.schema)
    start = 0
    for n in pieces:
        writer.write(table.slice(start, n))
        start += n
    writer.close()
    whole, streamed = (
        hashlib.sha256((tmp_path / f).read_bytes()).hexdigest() for f in ("whole.parquet", "streamed.parquet")
    )
    assert pq.read_metadata(tmp_path / "streamed.parquet").num_row_groups == -(-sum(pieces) // 1000)
    assert streamed == whole


def test_row_group_writer_writes_an_empty_table_like_the_whole_table_writer(tmp_path):
    table = _table(0)
    pq.write_table(table, tmp_path / "whole.parquet", **release_files.PARQUET_OPTIONS)
    writer = release_files._RowGroupWriter(tmp_path / "streamed.parquet", table.schema)
    writer.close()
    assert (tmp_path / "streamed.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
