"""The tests mirror the code: a folder of tests is the path of the package it tests (``tests/annotation/review``
tests ``annotation/review``), so a stage's tests live under its name. A few folders test across the stages, each
named here with what it holds."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
ACROSS = {
    "e2e": "the browser: whole journeys across stages (Playwright)",
    "hardening": "permissions, fuzzing, bad input and production settings over every endpoint",
    "unit": "shared pure modules and checks of the source itself (conventions, contracts)",
    "workers": "the platform and its workers as separate processes (HTTP, object storage)",
    "support": "helpers the tests share (stub servers, the thread race, the Celery worker starter)",
    "fixtures": "reference data made by the authors' own code, with its generators",
}


def folders_of_tests() -> list[Path]:
    return sorted(
        {p.parent for p in TESTS.rglob("test_*.py") if "fixtures" not in p.relative_to(TESTS).parts} - {TESTS}
    )


def test_every_folder_of_tests_mirrors_a_package_of_the_code_or_is_named_as_across_stages():
    folders = folders_of_tests()
    assert len(folders) > 10
    astray = []
    for folder in folders:
        rel = folder.relative_to(TESTS)
        if rel.parts[0] in ACROSS:
            continue
        if not (REPO / rel).is_dir() or not (REPO / rel / "__init__.py").is_file():
            astray.append(str(rel))
    assert astray == [], f"tests/<path> must be a package of the code (or a folder of ACROSS): {astray}"


def test_each_stage_with_code_has_its_tests_under_its_name():
    stages = [
        "core/corpus", "injection", "annotation/review", "annotation/rating", "annotation/people",
        "annotation/agreement", "exports/benchmark", "exports/release", "exports/scores", "exports/metaeval",
        "xqmeval/projects",
    ]  # fmt: skip
    missing = [stage for stage in stages if not any((TESTS / stage).glob("test_*.py"))]
    assert missing == []
