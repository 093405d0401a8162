"""No test asserts ``all(…)`` alone: it passes when the query or fixture it checks found nothing. Tests assert
``every(…)`` (tests/support/asserts.py, and its copy in scoring/tests), which fails on an empty iterable."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.asserts import every

REPO = Path(__file__).resolve().parents[2]
SUITES = [REPO / "tests", REPO / "scoring" / "tests"]


def bare_all_asserts(source: str) -> list[int]:
    """Lines of ``assert all(…)`` (also as a term of ``and``/``or``) in ``source``; ``not all(…)`` fails on
    nothing, so it stays."""

    def is_all(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "all"

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert):
            terms = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            lines += [node.lineno for term in terms if is_all(term)][:1]
    return lines


def test_no_test_asserts_a_bare_all():
    files = [p for suite in SUITES for p in suite.rglob("*.py")]
    assert len(files) > 100
    found = {str(p.relative_to(REPO)): lines for p in files if (lines := bare_all_asserts(p.read_text()))}
    assert found == {}, f"assert every(…) instead (tests/support/asserts.py): {found}"


def test_the_scan_finds_a_bare_all_and_every_fails_on_nothing():
    source = "assert all(x for x in xs)\nassert ok and all(xs), 'm'\nassert every(xs)\nassert not all(xs)\n"
    assert bare_all_asserts(source) == [1, 2]
    assert every([1, True]) and not every([]) and not every(x for x in []) and not every([1, 0])


@pytest.mark.parametrize("path", [REPO / "tests/support/asserts.py", REPO / "scoring/tests/asserts.py"])
def test_the_two_copies_of_every_agree(path):
    body = path.read_text().split("def every")[1].split('"""')[-1]
    assert body == (REPO / "tests/support/asserts.py").read_text().split("def every")[1].split('"""')[-1]
