"""A stage reaches another only through what that one exposes: no platform module imports a private name
(``_name``) of another stage's module, or uses one through a module it imported (read from the source, no
import). The three rooms of stage 3 (review, rating, people) and what they share (``annotation.common``)
count as stages here; import-linter's contracts say which stage may import which at all (pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APPS = ("xqmeval", "core", "injection", "annotation", "exports")
STAGES = (
    "core.corpus",
    "annotation.review",
    "annotation.rating",
    "annotation.people",
    "annotation.common",
    "annotation.agreement",
    "exports.benchmark",
    "exports.release",
    "exports.scores",
    "exports.metaeval",
    "xqmeval.projects",
    "xqmeval.demo",
)


def stage_of(module: str) -> str:
    """The stage a module belongs to: the longest stage package it lies in, else its app."""
    inside = [s for s in STAGES if module == s or module.startswith(s + ".")]
    return max(inside, key=len) if inside else module.split(".")[0]


def private_uses(source: str, importer: str) -> list[str]:
    """Private names of another stage that ``source`` (the module ``importer``) imports or reads."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # a name bound by an import -> the module it may be
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if _private(alias.name) and _elsewhere(node.module, importer):
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            module = modules.get(node.value.id)
            if module and module.split(".")[0] in APPS and _elsewhere(module, importer):
                found.append(f"{node.value.id}.{node.attr} ({module})")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_meta"  # Django's public model API


def _elsewhere(module: str, importer: str) -> bool:
    return module.split(".")[0] in APPS and stage_of(module) != stage_of(importer)


MODULES = sorted(p for app in APPS for p in (REPO / app).rglob("*.py") if "migrations" not in p.relative_to(REPO).parts)


def test_the_scan_finds_a_private_name_of_another_room_and_passes_its_own():
    source = (
        "from annotation.review.services import _check_owner, candidate_skip\n"
        "from annotation.rating import selectors\n"
        "from annotation.rating.services import _helper\n"
        "selectors._hidden\n"
    )
    assert private_uses(source, "annotation.rating.views") == ["from annotation.review.services import _check_owner"]
    assert private_uses(source, "annotation.people.views") == [
        "from annotation.review.services import _check_owner",
        "from annotation.rating.services import _helper",
        "selectors._hidden (annotation.rating.selectors)",
    ]
    assert len(MODULES) > 150


@pytest.mark.parametrize("path", MODULES, ids=[p.relative_to(REPO).as_posix() for p in MODULES])
def test_no_module_reaches_into_another_stage(path):
    importer = ".".join(path.relative_to(REPO).with_suffix("").parts)
    found = private_uses(path.read_text(), importer)
    assert not found, f"{importer} uses private names of another stage; expose them there: {found}"
