"""The counts per direction and level kept for the pages (``selectors.current_level_counts``): equal to the
count of the rows stored now after every kind of write that changes them (a build, a pseudo translation
deleted by hand, a gold segment added, a project's number of levels), read from the cache otherwise
(no pass over the pseudo translations per view). PostgreSQL: the benchmark change log is kept by its
triggers; elsewhere the pages count on every view."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core.models import GoldSegment, Project
from exports.benchmark import selectors, services
from exports.models import BenchmarkChange, PseudoTranslation
from tests.exports.conftest import import_languages

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def postgresql_only(db):
    if connection.vendor != "postgresql":
        pytest.skip("the benchmark change log is kept by PostgreSQL triggers")


def import_and_build(shared_data) -> int:
    import_languages("xqm", shared_data, ["zh"])
    project = Project.objects.get(name="xqm")
    services.build_run(project=project)
    return project.pk


@pytest.fixture(scope="module")
def built_once(module_data, shared_data):
    """Imported and built once for the module (each test's changes are rolled back after it), with the
    (local-memory) cache as the build left it: the counts it kept."""
    pk = module_data(lambda: import_and_build(shared_data))
    return pk, dict(cache._cache), dict(cache._expire_info)


@pytest.fixture
def built(db, built_once):
    """The built project, and the cache as the build left it (an earlier test's kept counts are of rows
    rolled back since)."""
    pk, kept, expiry = built_once
    cache.clear()
    cache._cache.update(kept)
    cache._expire_info.update(expiry)
    return Project.objects.get(pk=pk)


def counted(fn):
    """(result, the queries that read the pseudo translations)."""
    with CaptureQueriesContext(connection) as queries:
        result = fn()
    return result, [
        q["sql"] for q in queries.captured_queries if re.search(r'FROM "exports_pseudotranslation"', q["sql"])
    ]


def test_kept_counts_follow_every_write_that_changes_them(built):
    project = built
    counts, read = counted(lambda: selectors.current_level_counts(project))
    assert read == []  # the build kept them
    assert counts == selectors.level_counts(project) and counts["en-zh"]["total"] > 0
    assert BenchmarkChange.objects.filter(project_id=project.pk).count() == 1  # the build pruned its log

    # a pseudo translation deleted outside the services
    victim = PseudoTranslation.objects.filter(segment__project=project, level=2).first()
    with connection.cursor() as cur:
        cur.execute("DELETE FROM exports_pseudotranslation_candidates WHERE pseudotranslation_id = %s", [victim.pk])
        cur.execute("DELETE FROM exports_pseudotranslation WHERE id = %s", [victim.pk])
    after, read = counted(lambda: selectors.current_level_counts(project))
    assert read and after == selectors.level_counts(project)
    assert after["en-zh"]["levels"]["2"]["total"] == counts["en-zh"]["levels"]["2"]["total"] - 1
    assert counted(lambda: selectors.current_level_counts(project))[1] == []  # kept again

    # a gold segment added: one more gold pair, with no pseudo translation (the minimum per pair is 0)
    direction = GoldSegment.objects.filter(project=project).first().direction
    GoldSegment.objects.create(project=project, direction=direction, external_id="new-1", source="s", reference="r")
    added = selectors.current_level_counts(project)
    assert added["en-zh"]["gold_pairs"] == after["en-zh"]["gold_pairs"] + 1 and added["en-zh"]["min_per_pair"] == 0
    assert added == selectors.level_counts(project)

    # the project's number of levels
    Project.objects.filter(pk=project.pk).update(max_errors=2)
    project.refresh_from_db()
    fewer = selectors.current_level_counts(project)
    assert sorted(fewer["en-zh"]["levels"]) == ["0", "1", "2"] and fewer == selectors.level_counts(project)

    # a rebuild: kept by the build's end again
    services.build_run(project=project, force=True)
    rebuilt, read = counted(lambda: selectors.current_level_counts(project))
    assert read == [] and rebuilt == selectors.level_counts(project)


def test_another_projects_writes_leave_the_kept_counts_alone(built, shared_data):
    project = built
    selectors.current_level_counts(project)
    import_languages("other", shared_data, ["de"])
    other = Project.objects.get(name="other")
    services.build_run(project=other)
    assert counted(lambda: selectors.current_level_counts(project))[1] == []


def test_the_project_page_reads_no_pseudo_translation_once_counts_are_kept(client, built, admin_user):
    client.force_login(admin_user)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("projects:detail", args=[built.name]))
    assert response.status_code == 200
    assert not [
        q for q in queries.captured_queries if "GROUP BY" in q["sql"] and '"exports_pseudotranslation"' in q["sql"]
    ]
    total = selectors.level_counts(built)["en-zh"]["total"]
    assert f"{total:,}" in response.content.decode() or str(total) in response.content.decode()
