"""Bulk inserts sized for PostgreSQL: ``COPY … FROM STDIN`` through psycopg, ``bulk_create`` elsewhere.

Django's ``bulk_create`` on psycopg's client-side cursor quotes every value into the SQL text (a regular
expression per string): tens of thousands of JSON-holding rows cost seconds in Python alone. ``COPY``
streams the rows in the server's text format instead. Rows go through the field's own
``get_db_prep_save`` (JSON, dates, choices as the ORM stores them), inside the caller's transaction, so
atomicity is the caller's ``transaction.atomic``; no primary keys come back (``reserve_ids`` draws them
beforehand on PostgreSQL; elsewhere read them with a query). Pure plumbing: validation stays with the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

COPY_BATCH = 5000  # bulk_create batch on other backends


def copy_supported() -> bool:
    return connection.vendor == "postgresql"


PLAIN_TYPES = frozenset(
    {
        "CharField",
        "TextField",
        "SlugField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "PositiveBigIntegerField",
        "BooleanField",
        "FloatField",
        "ForeignKey",
        "OneToOneField",
        "AutoField",
        "BigAutoField",  # only with_pk: otherwise the primary key is left to the database
    }
)


def _row_builder(model, *, with_pk: bool = False, mapping: bool = False):
    """Columns and a function object -> database values, classifying the fields once: plain values as
    they are (one ``attrgetter`` in C), JSON as text (COPY's text format; the server parses it), auto
    timestamps one value for the whole insert, anything else through the field's ``get_db_prep_save``.
    Several times cheaper than Django's per-field ``pre_save`` + ``get_db_prep_save``. ``mapping``: the
    rows are dicts keyed by attname (``insert_dicts``) instead of objects."""
    import json
    from decimal import Decimal
    from operator import attrgetter, itemgetter

    from django.utils import timezone

    now = timezone.now()
    plain, jsons, stamps, decimals, others = [], [], [], [], []
    for f in model._meta.concrete_fields:
        if f.primary_key and f.get_internal_type() in ("AutoField", "BigAutoField") and not with_pk:
            continue
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            stamps.append(f)
        elif f.get_internal_type() == "JSONField":
            jsons.append(f)
        elif f.get_internal_type() == "DecimalField":  # (COPY, so PostgreSQL: its adapter takes a Decimal as it is)
            decimals.append(f)
        elif f.get_internal_type() in PLAIN_TYPES:
            plain.append(f)
        else:
            others.append(f)
    getter = itemgetter if mapping else attrgetter
    getattr_ = (lambda obj, name: obj[name]) if mapping else getattr
    get_plain = getter(*[f.attname for f in plain]) if plain else (lambda obj: ())
    if len(plain) == 1:
        single = get_plain
        get_plain = lambda obj: (single(obj),)  # noqa: E731
    dumps = json.dumps
    json_fields = [(f.attname, f.encoder) for f in jsons]
    stamp_fields = [(f.attname, f.auto_now) for f in stamps]
    exact_numbers = (Decimal, int)

    def row(obj) -> list:
        values = list(get_plain(obj))
        for attname, encoder in json_fields:
            value = getattr_(obj, attname)
            values.append(None if value is None else dumps(value, cls=encoder))
        for attname, auto_now in stamp_fields:
            value = getattr_(obj, attname)
            values.append(now if auto_now or value is None else value)
        for f in decimals:
            # a Decimal or an int is what the field would send to PostgreSQL (its adapter returns the value as
            # it is; the numeric column rounds); anything else (a float, a string) takes the field's own path
            value = getattr_(obj, f.attname)
            values.append(value if type(value) in exact_numbers else f.get_db_prep_save(value, connection))
        for f in others:
            values.append(f.get_db_prep_save(getattr_(obj, f.attname), connection))
        return values

    return [f.column for f in plain + jsons + stamps + decimals + others], row


def reserve_ids(model, n: int) -> list[int] | None:
    """``n`` primary keys drawn from the table's sequence, for rows that COPY writes with their ids, so the
    caller knows them without reading the rows back (a read-back by foreign key plans as a sequential scan
    while the table is too new to have statistics: quadratic over a build). None where the backend has no
    sequences (SQLite): read the keys back there."""
    if not copy_supported():
        return None
    if n <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, n],
        )
        return [row[0] for row in cursor.fetchall()]


def refresh_planner_statistics(*models) -> None:
    """ANALYZE tables a bulk write just filled (PostgreSQL; its own advice after loading data). Until
    autovacuum gets to them the planner has no statistics for the new rows and prices ``fk IN (…)`` at
    half the table, so every chunked read that follows (the release reads 100 gold pairs at a time)
    becomes a sequential scan of the whole table: quadratic in the data. ANALYZE samples a fixed number of
    rows, so its cost does not grow with the table."""
    if not copy_supported():
        return
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {qn(model._meta.db_table)}")


def insert_objects(model, objs: Iterable, *, batch_size: int = COPY_BATCH, with_ids: bool = False) -> int:
    """Insert model instances (auto primary keys left to the database; ``pk`` stays None on PostgreSQL),
    or, ``with_ids``, with the primary keys they carry (drawn by ``reserve_ids``).
    A JSON field holding ``None`` is stored as SQL NULL (MetricScore.spans: null when a metric marks none)."""
    if not copy_supported():
        objs = list(objs)
        model.objects.bulk_create(objs, batch_size=min(batch_size, 1000))
        return len(objs)
    columns, row = _row_builder(model, with_pk=with_ids)
    return copy_rows(model._meta.db_table, columns, (row(obj) for obj in objs))


def insert_dicts(model, rows: Iterable[dict], *, batch_size: int = COPY_BATCH, with_ids: bool = False) -> int:
    """``insert_objects`` for rows given as ``{attname: value}`` (``segment_id``, not ``segment``), without
    building model instances: ``Model.__init__`` costs tens of µs per row, most of a bulk import's Python
    time. A field a row leaves out takes the field's default (a callable default other than ``dict`` or
    ``list`` is called per row); auto timestamps are the insert's time. On PostgreSQL nothing is read back
    (``with_ids``: the rows carry ``id`` from ``reserve_ids``); elsewhere through ``bulk_create``."""
    if not copy_supported():
        objs = [model(**row) for row in rows]
        model.objects.bulk_create(objs, batch_size=min(batch_size, 1000))
        return len(objs)
    shared, per_row = {}, []
    for f in model._meta.concrete_fields:
        if f.primary_key and not with_ids:
            continue
        if not f.has_default() or not callable(f.default) or f.default in (dict, list):
            shared[f.attname] = f.get_default()  # what Model.__init__ would set ("" for a text field without one)
        else:
            per_row.append(f)
    columns, row = _row_builder(model, with_pk=with_ids, mapping=True)

    def complete(values: dict) -> dict:
        full = {**shared, **values}
        for f in per_row:
            if f.attname not in values:
                full[f.attname] = f.get_default()
        return full

    return copy_rows(model._meta.db_table, columns, (row(complete(values)) for values in rows))


def insert_dicts_with_ids(model, rows: list[dict]) -> list[int] | None:
    """``insert_dicts`` with primary keys drawn from the sequence first (``reserve_ids``), set on the rows
    and returned in their order, so the caller links other rows to them without reading anything back.
    None where the backend has no sequences (SQLite): the rows went in without ids; read them back."""
    reserved = reserve_ids(model, len(rows))
    if reserved is not None:
        for row, pk in zip(rows, reserved):
            row[model._meta.pk.attname] = pk
    insert_dicts(model, rows, with_ids=reserved is not None)
    return reserved


def copy_rows(table: str, columns: Sequence[str], rows: Iterable[Sequence], *, batch_size: int = COPY_BATCH) -> int:
    """Insert rows of already database-ready values (JSON as text or wrapped, datetimes adapted) into
    ``table``; COPY on PostgreSQL, ``executemany`` in batches elsewhere. Returns the number of rows."""
    qn = connection.ops.quote_name
    n = 0
    if copy_supported():
        sql = f"COPY {qn(table)} ({', '.join(qn(c) for c in columns)}) FROM STDIN"
        # wrap_database_errors: a violated constraint is Django's IntegrityError, as with bulk_create
        with connection.cursor() as cursor, connection.wrap_database_errors:
            with cursor.copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)
                    n += 1
        return n
    insert = (
        f"INSERT INTO {qn(table)} ({', '.join(qn(c) for c in columns)}) VALUES ({', '.join(['%s'] * len(columns))})"
    )
    batch: list = []
    with connection.cursor() as cursor:
        for row in rows:
            batch.append(tuple(row))
            if len(batch) >= batch_size:
                cursor.executemany(insert, batch)
                n += len(batch)
                batch = []
        if batch:
            cursor.executemany(insert, batch)
            n += len(batch)
    return n
