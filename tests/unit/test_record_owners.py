"""Every record has one owner stage, and only its code writes it (docs/records.md, whose table is the registry
read here). The scan is ``tests/support/record_writes.py``; its own test shows it finds each kind of write."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from django.apps import apps

from tests.support.asserts import every
from tests.support.record_writes import ROOT, platform_sources, writes

APPS = ("core", "injection", "annotation", "exports")
DOC = ROOT / "docs" / "records.md"
# Writes the table's owners do not cover, each with its reason. A new entry needs a reason a reviewer accepts.
EXEMPT = {
    # SQLite has no row locks: a write that matches no row takes the database's write lock (``WHERE 0``)
    ("annotation.ReviewRound", "annotation/common/submissions.py"): "serialize_writers writes no row",
}


def models() -> dict[str, type]:
    found = {m._meta.label: m for m in apps.get_models() if m._meta.app_label in APPS}
    assert len(found) > 30
    return found


def owners_from_the_docs() -> dict[str, tuple[str, ...]]:
    """``app.Model`` -> the paths of its owner column, read from the table of docs/records.md."""
    owners: dict[str, tuple[str, ...]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not re.fullmatch(r"(`\w+\.\w+`,? ?)+", cells[0]):
            continue
        paths = tuple(p for p in re.findall(r"`([\w/]+/)`", cells[1]))
        for label in re.findall(r"`(\w+\.\w+)`", cells[0]):
            assert label not in owners, f"docs/records.md names {label} twice"
            owners[label] = paths
    return owners


def test_the_table_names_every_model_once_with_an_owner():
    owners = owners_from_the_docs()
    assert set(owners) == set(models()), "docs/records.md's table and the models differ"
    assert every(owners.values()), [label for label, paths in owners.items() if not paths]


def test_each_record_is_written_only_by_its_owner():
    owners, tables = owners_from_the_docs(), {label: m._meta.db_table for label, m in models().items()}
    by_name = {label.split(".")[1]: label for label in tables}
    names = {label.split(".")[1]: table for label, table in tables.items()}
    seen: defaultdict[str, set[str]] = defaultdict(set)
    offenders = []
    for rel, source in platform_sources():
        for name, line, what in writes(source, names):
            label = by_name[name]
            seen[label].add(rel)
            if not rel.startswith(owners[label]) and (label, rel) not in EXEMPT:
                offenders.append(f"{rel}:{line} writes {label} ({what}); its owner is {', '.join(owners[label])}")
    assert offenders == []
    # the scan looks where writes are: the owners' own services are found writing
    assert (
        "core/services.py" in seen["core.Project"]
        and "exports/release/services/finishing.py" in seen["exports.Release"]
    )
    assert every((label, rel) in {(lb, r) for lb, rels in seen.items() for r in rels} for label, rel in EXEMPT)


WRITES_OF_EVERY_KIND = """
from core import bulk
def f(project: Project, rows, other):
    Project.objects.filter(pk=1).update(name="x")
    Project(name="y").save()
    project.save(update_fields=["pool_rule"])
    project.directions.add(other)
    run = InjectionRun.objects.get(pk=1)
    run.delete()
    fresh, _ = InjectionRun.objects.get_or_create(name="z")
    fresh.save()
    bulk.insert_dicts_with_ids(Candidate, rows)
    bulk.copy_rows(Candidate._meta.db_table, ["id"], rows)
    cursor.execute("UPDATE  injection_candidate SET status = 'x'")
    cursor.execute('DELETE FROM "core_project" WHERE id = 1')
"""
READS = """
def g(project, rows):
    Project.objects.filter(pk=1).values_list("name")
    project.save()  # not known to hold a model row: an unannotated parameter
    table = Candidate._meta.db_table
    cursor.execute("SELECT id FROM injection_candidate")
    PseudoSystem.objects.filter(release=1).count()
"""
MODELS = {"Project": "core_project", "InjectionRun": "injection_injectionrun", "Candidate": "injection_candidate"}


def test_the_scan_finds_each_kind_of_write_and_passes_reads():
    found = [(model, what) for model, _, what in writes(WRITES_OF_EVERY_KIND, MODELS)]
    assert [model for model, _ in found] == [
        "Project", "Project", "Project", "Project", "InjectionRun", "InjectionRun", "InjectionRun",
        "Candidate", "Candidate", "Candidate", "Project",
    ]  # fmt: skip
    assert writes(READS, MODELS) == []


@pytest.mark.parametrize(
    "stray",
    [
        "def f(project: Project):\n    project.save()\n",
        "def f():\n    Project.objects.create(name='x')\n",
        "def f(p: 'Project | None'):\n    p.retired_directions.remove(1)\n",
    ],
)
def test_a_write_added_outside_the_owner_fails_the_check(stray):
    owners = owners_from_the_docs()
    found = writes(stray, {"Project": "core_project"})
    assert found and not "annotation/rating/services.py".startswith(owners["core.Project"])
