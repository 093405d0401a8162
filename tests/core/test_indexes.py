"""No index on a table that the bulk paths write (imports, merges, score ingest, review at scale) repeats
another: a plain index whose columns lead a composite index or unique constraint of the same table is
written on every insert and answers nothing the other does not (PostgreSQL; the migrations drop the same
names on SQLite)."""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

BULK_TABLES = (
    "core_goldsegment",
    "injection_candidate",
    "injection_injectionitem",
    "annotation_reviewdecision",
    "annotation_likertrating",
    "annotation_ratingitem",
    "exports_pseudotranslation",
    "exports_mergedsegment",
    "exports_metricscore",
)

REDUNDANT = """
with idx as (
  select i.indexrelid, i.indrelid::regclass::text as tbl, c.relname as name, i.indisunique as uniq,
         i.indpred is not null as partial, string_to_array(i.indkey::text, ' ') as cols, am.amname as method
  from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
  where i.indrelid::regclass::text = any(%s))
select a.tbl, a.name, b.name from idx a join idx b on a.tbl = b.tbl and a.indexrelid <> b.indexrelid
where not a.uniq and not a.partial and not b.partial and a.method = 'btree' and b.method = 'btree'
  and array_length(a.cols, 1) <= array_length(b.cols, 1) and a.cols = b.cols[1:array_length(a.cols, 1)]
order by 1, 2, 3
"""


def test_no_index_of_a_bulk_written_table_repeats_another():
    if connection.vendor != "postgresql":
        pytest.skip("reads PostgreSQL's catalogue")
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_class where relname = any(%s) and relkind = 'r'", [list(BULK_TABLES)])
        assert cursor.fetchone()[0] == len(BULK_TABLES)  # every name is a table: the check looks at them all
        cursor.execute(REDUNDANT, [list(BULK_TABLES)])
        repeated = cursor.fetchall()
    assert repeated == [], (
        "indexes another index of the same table makes redundant (drop them, or say why not): "
        + "; ".join(f"{table}: {index} leads {other}" for table, index, other in repeated)
    )
