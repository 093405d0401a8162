"""bin/test hands whole files to its xdist workers longest first (``longest_modules_first`` in
tests/conftest.py, and ``--no-loadscope-reorder`` so xdist keeps that order). Under xdist's own order, by number
of tests, a one-test browser tour of minutes ran last while the other worker sat idle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import longest_modules_first

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Collected:  # what the ordering reads of a collected test: its node id and its markers
    nodeid: str
    markers: list[str] = field(default_factory=list)

    def iter_markers(self):
        return iter([Marker(name) for name in self.markers])


@dataclass
class Marker:
    name: str


def test_a_one_test_browser_file_goes_before_a_file_of_many_quick_tests():
    items = [Collected(f"tests/a/test_many.py::test_{i}") for i in range(40)]
    items += [Collected("tests/b/test_units.py::test_x"), Collected("tests/b/test_units.py::test_y")]
    items += [Collected("tests/e2e/test_tour.py::test_tour", ["browser"])]
    items += [Collected("tests/w/test_worker.py::test_kill", ["subprocess"])]
    ordered = [item.nodeid for item in longest_modules_first(items)]
    assert ordered[:2] == ["tests/e2e/test_tour.py::test_tour", "tests/w/test_worker.py::test_kill"]
    assert ordered[2:42] == [f"tests/a/test_many.py::test_{i}" for i in range(40)]  # 40 × 0.1 s: next
    assert ordered[42:] == ["tests/b/test_units.py::test_x", "tests/b/test_units.py::test_y"]


def test_files_of_equal_cost_keep_their_collection_order_and_a_file_stays_whole():
    items = [Collected("tests/z/test_one.py::test_a"), Collected("tests/y/test_two.py::test_a")]
    items += [Collected("tests/z/test_one.py::test_b"), Collected("tests/y/test_two.py::test_b")]
    ordered = [item.nodeid for item in longest_modules_first(items)]
    assert ordered == [
        "tests/z/test_one.py::test_a",
        "tests/z/test_one.py::test_b",
        "tests/y/test_two.py::test_a",
        "tests/y/test_two.py::test_b",
    ]


def test_bin_test_keeps_this_order_on_the_workers():
    script = (REPO / "bin" / "test").read_text(encoding="utf-8")
    assert "--dist loadfile --no-loadscope-reorder" in script
