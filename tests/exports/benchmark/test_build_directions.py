"""The directions a build merges are read as one row each: a DISTINCT over the direction codes alone, not
over the gold segments' default ordering (project, direction, id), which would make every segment a row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exports.benchmark.services import build_directions_list
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


def test_the_build_reads_each_direction_once_however_many_gold_pairs_it_holds(project, languages):
    make_candidates(project, languages, "en-de")  # 7 gold pairs
    make_candidates(project, languages, "en-zh")  # 2 gold pairs
    with CaptureQueriesContext(connection) as queries:
        assert build_directions_list(project=project) == ["en-de", "en-zh"]
    # the statement the database ran, run again: its rows, not the Python set the function makes of them
    (statement,) = [q["sql"] for q in queries.captured_queries if "core_goldsegment" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(statement)
        rows = cursor.fetchall()
    assert sorted(rows) == [("en-de",), ("en-zh",)]
