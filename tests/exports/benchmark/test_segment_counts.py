"""Gold segments per direction as the project page and the projects list show them
(``selectors.segment_counts``): equal to the rows after every kind of write that changes them (the ORM,
raw SQL, a delete, a move to another direction or project), and read from the cache otherwise (no
grouped count of the segments per view). PostgreSQL: the benchmark change log is kept by its triggers."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from core.models import GoldSegment
from core.services import project_directions_add, project_ensure
from exports.benchmark import selectors

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def postgresql_only(db):
    if connection.vendor != "postgresql":
        pytest.skip("the benchmark change log is kept by PostgreSQL triggers")


def exact(project) -> dict[int, int]:
    return dict(
        GoldSegment.objects.filter(project=project).values_list("direction_id").annotate(n=Count("id")).order_by()
    )


def counted(project):
    """(segment counts, the queries that read the gold segments)."""
    with CaptureQueriesContext(connection) as queries:
        counts = selectors.segment_counts(project)
    return counts, [q["sql"] for q in queries.captured_queries if re.search(r'FROM "core_goldsegment"', q["sql"])]


def test_segment_counts_follow_every_write(project, languages):
    de, zh = languages["en-de"], languages["en-zh"]
    GoldSegment.objects.bulk_create(
        GoldSegment(project=project, direction=de, external_id=f"d{i}", source="s", reference="r") for i in range(5)
    )
    counts, read = counted(project)
    assert counts == exact(project) == {de.pk: 5} and read
    assert counted(project) == ({de.pk: 5}, [])  # kept: nothing read

    with connection.cursor() as cur:  # raw SQL, as a COPY import would
        cur.execute(
            "INSERT INTO core_goldsegment (project_id, direction_id, external_id, source, reference, metadata, created_at) "
            "VALUES (%s, %s, 'z1', 's', 'r', '{}', now()), (%s, %s, 'z2', 's', 'r', '{}', now())",
            [project.pk, zh.pk, project.pk, zh.pk],
        )
    assert counted(project)[0] == exact(project) == {de.pk: 5, zh.pk: 2}

    GoldSegment.objects.filter(project=project, external_id="d0").delete()
    assert counted(project)[0] == exact(project) == {de.pk: 4, zh.pk: 2}

    GoldSegment.objects.filter(project=project, external_id="d1").update(direction=zh)
    assert counted(project)[0] == exact(project) == {de.pk: 3, zh.pk: 3}

    other, _ = project_ensure(name="other")
    project_directions_add(project=other, codes=["en-de"])
    GoldSegment.objects.filter(project=project, external_id="d2").update(project=other)
    assert counted(project)[0] == exact(project) == {de.pk: 2, zh.pk: 3}
    assert counted(other)[0] == exact(other) == {de.pk: 1}

    # a segment's text changes nothing the counts read: still kept
    GoldSegment.objects.filter(project=project, external_id="d3").update(reference="new text")
    assert counted(project) == ({de.pk: 2, zh.pk: 3}, [])


def test_the_pages_read_the_kept_counts(client, admin_user, project, languages):
    GoldSegment.objects.bulk_create(
        GoldSegment(project=project, direction=languages["en-de"], external_id=f"d{i}", source="s", reference="r")
        for i in range(7)
    )
    client.force_login(admin_user)
    for url in ("/", f"/projects/{project.name}/"):
        client.get(url)  # counts kept
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200
        assert not [q["sql"] for q in queries.captured_queries if re.search(r'COUNT\("core_goldsegment"', q["sql"])], (
            url
        )
        assert "<td>en-de</td><td>7</td>" in response.content.decode(), url
