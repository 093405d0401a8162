"""core.bulk: COPY inserts store what the ORM stores, inside the caller's transaction; and a replica of
the shared data imports with the same checks and statuses as the original."""

import shutil
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import IntegrityError, transaction

from core import bulk
from core.models import GoldSegment
from core.services import direction_ensure, project_ensure
from injection.models import Candidate, InjectionRun
from tests.support.asserts import every

FIELDS = [
    "segment_id",
    "external_id",
    "kind",
    "error_type",
    "position",
    "severity",
    "text",
    "span_start",
    "span_end",
    "edit_text",
    "backend",
    "model",
    "sampling",
    "checks",
    "flags",
    "status",
    "status_reason",
    "is_gold",
    "raw_output",
    "cost_usd",
]
# what a cost can be on a model instance: the default, a Decimal with more places than the column keeps, a float
COSTS = [0, Decimal("0.0012345678"), 0.1, Decimal("12.5"), "0.25"]


def make(run, segment, n, **extra):
    return [
        Candidate(
            run=run,
            segment=segment,
            external_id=f"c{i}",
            kind="mqm",
            error_type=f"Type{i}",
            position="head",
            severity="major",
            text=f'text {i} \u00e9\t\\ "quoted"\n',
            span_start=i,
            span_end=i + 1,
            edit_text="x",
            backend="import",
            model="m",
            sampling={"seed": i, "nested": [1, None, "é"]},
            checks={"local_edit": {"passed": i % 2 == 0, "detail": "a\tb"}},
            flags=["x"] if i % 3 else [],
            cost_usd=COSTS[i % len(COSTS)],
            **extra,
        )
        for i in range(n)
    ]


@pytest.fixture
def two_runs(db):
    """A gold segment and two runs on it: run a filled by ``bulk_create``, run b by the code under test."""
    project, _ = project_ensure(name="bulk")
    direction = direction_ensure(code="en-de")
    segment = GoldSegment.objects.create(
        project=project, direction=direction, external_id="1", source="s", reference="r"
    )
    return (
        segment,
        InjectionRun.objects.create(project=project, name="a"),
        InjectionRun.objects.create(project=project, name="b"),
    )


def stored(run) -> list:
    return list(Candidate.objects.filter(run=run).order_by("external_id").values_list(*FIELDS))


def test_insert_objects_stores_what_bulk_create_stores(two_runs):
    segment, run_a, run_b = two_runs
    Candidate.objects.bulk_create(make(run_a, segment, 25))
    assert bulk.insert_objects(Candidate, make(run_b, segment, 25)) == 25
    a, b = stored(run_a), stored(run_b)
    assert a == b and len(b) == 25
    assert every(c.created_at is not None for c in Candidate.objects.filter(run=run_b))


@pytest.mark.django_db(transaction=True)
def test_a_failing_bulk_insert_leaves_nothing_inside_the_callers_transaction():
    project, _ = project_ensure(name="bulk")
    direction = direction_ensure(code="en-de")
    segment = GoldSegment.objects.create(
        project=project, direction=direction, external_id="1", source="s", reference="r"
    )
    run = InjectionRun.objects.create(project=project, name="a")
    rows = make(run, segment, 10) + make(run, segment, 1)  # the last one repeats (run, segment, type, position)
    with pytest.raises(IntegrityError):  # noqa: PT012  (the atomic block is under test: both writes roll back)
        with transaction.atomic():
            GoldSegment.objects.create(project=project, direction=direction, external_id="2", source="s", reference="r")
            bulk.insert_objects(Candidate, rows)
    assert not Candidate.objects.exists()
    assert not GoldSegment.objects.filter(external_id="2").exists()


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_replica_of_the_shared_data_imports_with_the_same_checks_and_statuses(shared_data, tmp_path):
    from annotation.review.xqmeval_import.services import xqmeval_import
    from core.domain.languages import replica_code

    (tmp_path / "candidates").mkdir()
    for path in sorted((shared_data / "candidates").glob("en-zh-*.parquet")):
        shutil.copy(path, tmp_path / "candidates" / path.name)
        table = pq.read_table(path)
        code = replica_code("zh", 2)
        table = table.set_column(
            table.schema.get_field_index("language"), "language", pa.array([code] * table.num_rows)
        )
        pq.write_table(table, tmp_path / "candidates" / path.name.replace("-zh-", f"-{code}-"))
    lines = (shared_data / "decisions.csv").read_text(encoding="utf-8").splitlines()
    zh = [line for line in lines[1:] if line.startswith("zh,")]
    (tmp_path / "decisions.csv").write_text(
        "\n".join([lines[0], *zh, *[line.replace("zh,", f"{code},", 1) for line in zh]]) + "\n", encoding="utf-8"
    )
    result = xqmeval_import(
        project_name="rep", directory=tmp_path / "candidates", decisions_path=tmp_path / "decisions.csv"
    )
    assert result.candidates_created == 2 * len(zh)

    def view(direction):
        return sorted(
            Candidate.objects.filter(segment__direction__code=direction).values_list(
                "segment__external_id",
                "error_type",
                "position",
                "span_start",
                "span_end",
                "text",
                "status",
                "status_reason",
                "checks",
                "flags",
            )
        )

    original, replica = view("en-zh"), view(f"en-{code}")
    assert original == replica and len(original) == len(zh)
    assert (
        GoldSegment.objects.get(direction__code=f"en-{code}", external_id=original[0][0]).direction.target.unit
        == "char"
    )


@pytest.mark.django_db(transaction=True)
def test_reserved_ids_are_fresh_distinct_and_accepted_by_copy():
    from django.db import connection

    project, _ = project_ensure(name="bulk")
    direction = direction_ensure(code="en-de")
    reserved = bulk.reserve_ids(GoldSegment, 3)
    if connection.vendor != "postgresql":
        assert reserved is None  # no sequences: callers read keys back
        return
    assert len(set(reserved)) == 3 and bulk.reserve_ids(GoldSegment, 0) == []
    columns = ["id", "project_id", "direction_id", "external_id", "source", "reference", "metadata", "created_at"]
    from django.utils import timezone

    with transaction.atomic():
        bulk.copy_rows(
            GoldSegment._meta.db_table,
            columns,
            [(pk, project.pk, direction.pk, f"r{pk}", "s", "r", "{}", timezone.now()) for pk in reserved],
        )
    assert sorted(GoldSegment.objects.values_list("id", flat=True)) == sorted(reserved)
    later = GoldSegment.objects.create(
        project=project, direction=direction, external_id="after", source="s", reference="r"
    )
    assert later.id > max(reserved)  # the sequence moved past them: no collision with ORM inserts


def test_insert_objects_with_reserved_ids_stores_the_objects_under_their_ids(two_runs):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("reserved ids are PostgreSQL's (sequences)")
    segment, run_a, run_b = two_runs
    Candidate.objects.bulk_create(make(run_a, segment, 12))
    objs = make(run_b, segment, 12)
    reserved = bulk.reserve_ids(Candidate, len(objs))
    for obj, pk in zip(objs, reserved):
        obj.pk = pk
    assert bulk.insert_objects(Candidate, objs, with_ids=True) == 12
    ids = dict(Candidate.objects.filter(run=run_b).values_list("external_id", "id"))
    assert ids == {obj.external_id: pk for obj, pk in zip(objs, reserved)}
    assert stored(run_a) == stored(run_b)


def as_dicts(objs, *, leave_out=("status", "status_reason", "is_gold", "prompt_tokens")) -> list[dict]:
    """The attname -> value rows of ``make``'s candidates, leaving some fields to their defaults."""
    names = [f.attname for f in Candidate._meta.concrete_fields if not f.primary_key and f.attname not in leave_out]
    return [{name: getattr(obj, name) for name in names if name != "created_at"} for obj in objs]


def test_insert_dicts_stores_what_bulk_create_stores_with_defaults_for_what_a_row_leaves_out(two_runs):
    segment, run_a, run_b = two_runs
    Candidate.objects.bulk_create(make(run_a, segment, 25))
    rows = as_dicts(make(run_b, segment, 25))
    assert "status" not in rows[0] and "created_at" not in rows[0]
    assert bulk.insert_dicts(Candidate, rows) == 25
    assert stored(run_a) == stored(run_b)
    assert set(Candidate.objects.filter(run=run_b).values_list("status", "is_gold", "prompt_tokens")) == {
        ("pending", False, 0)
    }
    assert every(c.created_at is not None for c in Candidate.objects.filter(run=run_b))


def test_insert_dicts_with_reserved_ids(db):
    from django.db import connection

    project, _ = project_ensure(name="bulk")
    direction = direction_ensure(code="en-de")
    reserved = bulk.reserve_ids(GoldSegment, 3)
    rows = [
        {
            "project_id": project.pk,
            "direction_id": direction.pk,
            "external_id": f"g{i}",
            "source": "s",
            "reference": "r",
        }
        for i in range(3)
    ]
    if connection.vendor != "postgresql":
        assert reserved is None
        assert bulk.insert_dicts(GoldSegment, rows) == 3
    else:
        for row, pk in zip(rows, reserved):
            row["id"] = pk
        assert bulk.insert_dicts(GoldSegment, rows, with_ids=True) == 3
        assert dict(GoldSegment.objects.filter(project=project).values_list("external_id", "id")) == {
            f"g{i}": pk for i, pk in enumerate(reserved)
        }
    assert list(GoldSegment.objects.filter(project=project).values_list("metadata", flat=True)) == [
        {},
        {},
        {},
    ]  # default=dict


def test_insert_dicts_fills_callable_defaults(db):
    """auth's User.date_joined defaults to ``timezone.now`` (a callable other than dict/list, called for
    each row as ``Model.__init__`` would); ``is_active`` and ``is_staff`` to constants."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    before = timezone.now()
    rows = [{"username": f"u{i}", "password": "!", "email": "", "first_name": "", "last_name": ""} for i in range(3)]
    assert bulk.insert_dicts(get_user_model(), rows) == 3
    joined = list(get_user_model().objects.filter(username__startswith="u").values_list("date_joined", flat=True))
    assert len(joined) == 3 and every(before <= value <= timezone.now() for value in joined)
    assert set(get_user_model().objects.filter(username__startswith="u").values_list("is_active", "is_staff")) == {
        (True, False)
    }
