"""Migrations are frozen: each carries the SQL it ran and imports nothing of the project, so the history a
database went through stays what it was when the code around it changes (read from the source, no import of
the project's modules except to compare the live SQL modules with what their latest migration ran)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APPS = ("core", "injection", "annotation", "exports")
ALLOWED = {"django", "__future__"} | set(sys.stdlib_module_names)

# The live SQL modules the pages and commands still read, and the migration that last ran each one's install().
# A change to one of these modules changes no database: it needs a new migration that freezes the new SQL,
# named here.
LIVE_SQL = {
    "annotation.review.changes_sql": "annotation.migrations.0007_review_change_log",
    "annotation.review.tally_sql": "annotation.migrations.0005_review_tally",
    "injection.changes_sql": "injection.migrations.0007_flag_change_log",
    "exports.benchmark.changes_sql": "exports.migrations.0007_benchmark_change_log",
}


def live_imports(source: str) -> list[str]:
    """The modules ``source`` imports that are neither Django nor the standard library."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [("." * node.level) + (node.module or "")]
        else:
            continue
        found += [name for name in names if name.split(".")[0] not in ALLOWED]
    return found


def migration_files() -> list[Path]:
    files = sorted(p for app in APPS for p in (REPO / app / "migrations").glob("[0-9]*.py"))
    assert len(files) > 40  # the scan sees the migrations (a wrong path would pass on nothing)
    return files


@pytest.mark.parametrize("path", migration_files(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_migration_imports_only_django_and_the_standard_library(path):
    assert live_imports(path.read_text()) == [], f"{path.relative_to(REPO)} imports live code: copy what it ran in"


def test_the_scan_finds_each_kind_of_live_import():
    source = (
        "import django.db.models.deletion\nfrom django.db import migrations\nimport json\n"
        "from annotation.review import changes_sql\nimport core.triggers_sql\nfrom .helpers import x\n"
    )
    assert live_imports(source) == ["annotation.review", "core.triggers_sql", ".helpers"]


@pytest.mark.parametrize(("module", "migration"), LIVE_SQL.items())
def test_the_live_sql_is_what_its_latest_migration_ran(module, migration):
    live, frozen = importlib.import_module(module), importlib.import_module(migration)
    assert frozen.INSTALL == live.install(), f"{module} changed: add a migration that runs the new SQL, name it here"
    assert frozen.UNINSTALL == live.uninstall()
