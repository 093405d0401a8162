"""perf/history.py: docs/performance-history.md is the rendering of perf/history.jsonl, every run is well formed,
and `add` records a run in one command (or refuses it, writing nothing)."""

import datetime
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("perf_history", REPO / "perf" / "history.py")
history = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(history)


@pytest.fixture
def copy(tmp_path):
    """The data and the page copied, and the arguments that point the script at the copies."""
    for name in ("history.jsonl", "benchmarks.json"):
        shutil.copy(REPO / "perf" / name, tmp_path / name)
    shutil.copy(REPO / "docs" / "performance-history.md", tmp_path / "page.md")
    paths = ["--history", str(tmp_path / "history.jsonl"), "--benchmarks", str(tmp_path / "benchmarks.json")]
    return tmp_path, [*paths, "--page", str(tmp_path / "page.md")]


VALID = json.loads((REPO / "perf" / "history.jsonl").read_text(encoding="utf-8").splitlines()[0])
ADD = ["add", "--benchmark", "scale", "--date", "2026-11-30", "--time", "06:01", "--machine", "the 2-core machine",
       "--command", "perf/bench_scale.py --k 1,10", "--figures", "import **0.577** (k = 10 / k = 1)",
       "--target", "k = 10 ≤ 1.2× k = 1", "--met", "yes", "--run-title", "a test run",
       "--number", "import wall, k = 10 / k = 1=0.577", "--number", "candidates/s=4727"]  # fmt: skip


def test_the_page_is_the_rendering_of_the_data():
    benchmarks = history.load_benchmarks()
    page = (REPO / "docs" / "performance-history.md").read_text(encoding="utf-8")
    assert page == history.render(benchmarks, history.load_runs(benchmarks)), (
        "docs/performance-history.md is generated: run .venv/bin/python perf/history.py"
    )
    assert history.main(["--check"]) == 0


def test_every_run_has_its_required_fields_and_a_valid_date():
    benchmarks = history.load_benchmarks()
    lines = (REPO / "perf" / "history.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 41  # the runs converted from the prose page, and any added since
    for number, line in enumerate(lines, 1):
        run = json.loads(line)
        for field in history.REQUIRED:
            assert isinstance(run.get(field), str) and run[field].strip(), f"line {number}: {field}"
        assert datetime.date.fromisoformat(run["date"]) <= datetime.date.today(), f"line {number}: date"
        assert run["benchmark"] in benchmarks, f"line {number}: benchmark"
        assert run.get("met") in (None, *history.MET), f"line {number}: met"
    assert {json.loads(line)["benchmark"] for line in lines} == set(benchmarks), "a benchmark without a run"


def test_every_link_into_the_page_finds_its_heading():
    page = (REPO / "docs" / "performance-history.md").read_text(encoding="utf-8")
    ids = {history.anchor(title) for title in re.findall(r"^#{1,6} (.+)$", page, flags=re.M)}
    links = set()
    for doc in (REPO / "docs").rglob("*.md"):
        links.update(re.findall(r"performance-history\.md#([\w-]+)", doc.read_text(encoding="utf-8")))
    assert {"scale", "gpu-figures", "meta-evaluation-statistics-at-wmt-size-issue-45"} <= links
    assert links <= ids, f"links to missing headings: {sorted(links - ids)}"


def test_add_appends_one_run_and_renders_it_newest_first(copy):
    tmp, paths = copy
    before = (tmp / "history.jsonl").read_text(encoding="utf-8")
    assert history.main([*paths, *ADD]) == 0
    after = (tmp / "history.jsonl").read_text(encoding="utf-8")
    assert after.startswith(before) and after.count("\n") == before.count("\n") + 1
    added = json.loads(after.splitlines()[-1])
    assert added["figures"] == "import **0.577** (k = 10 / k = 1)" and added["source"] == "perf/history.py add"
    assert added["numbers"] == {"import wall, k = 10 / k = 1": 0.577, "candidates/s": 4727}
    page = (tmp / "page.md").read_text(encoding="utf-8")
    scale = page[page.index("\n## Scale\n") :]
    first_run = scale[scale.index("\n### ") :]
    assert first_run.startswith("\n### 2026-11-30 06:01 UTC · a test run\n")
    assert "- **Target:** k = 10 ≤ 1.2× k = 1 (met: yes)" in first_run
    assert "- **Numbers:** import wall, k = 10 / k = 1 **0.577**; candidates/s **4,727**" in first_run
    assert history.main([*paths, "--check"]) == 0


def test_add_of_a_new_benchmark_needs_its_title(copy, capsys):
    tmp, paths = copy
    new = [*ADD[:2], "fresh-bench", *ADD[3:]]
    assert history.main([*paths, *new]) == 2
    assert "--title" in capsys.readouterr().err
    assert history.main([*paths, *new, "--title", "Fresh bench", "--description", "What it measures."]) == 0
    assert json.loads((tmp / "benchmarks.json").read_text())["fresh-bench"]["title"] == "Fresh bench"
    assert "\n## Fresh bench\n\nWhat it measures.\n" in (tmp / "page.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--date", "2026-13-01"], "field 'date' is not a date"),
        (["--date", "29.11.2026"], "field 'date' is not a date"),
        (["--time", "6 pm"], "field 'time'"),
        (["--machine", " "], "field 'machine' is required"),
        (["--figures", "x" * (history.MAX_TEXT + 1)], "field 'figures' is over"),
        (["--number", "ratio=fast"], "is not NAME=NUMBER"),
        (["--number", "ratio=inf"], "'ratio' is not a number"),
    ],
)
def test_add_refuses_a_bad_field_and_writes_nothing(copy, capsys, change, message):
    tmp, paths = copy
    files = {name: (tmp / name).read_bytes() for name in ("history.jsonl", "benchmarks.json", "page.md")}
    assert history.main([*paths, *ADD, *change]) == 2
    assert message in capsys.readouterr().err
    assert files == {name: (tmp / name).read_bytes() for name in files}


def test_check_fails_when_the_page_was_edited_by_hand(copy, capsys):
    tmp, paths = copy
    page = tmp / "page.md"
    page.write_text(page.read_text(encoding="utf-8").replace("1,083", "1,084", 1), encoding="utf-8")
    assert history.main([*paths, "--check"]) == 1
    assert "differs from the rendering" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 42: not JSON"),
        ('{"date": "2026-11-30"}', "line 42: field 'benchmark' is required"),
        (json.dumps({"unknown": 1}), "line 42: unknown field 'unknown'"),
        (json.dumps({**VALID, "met": "maybe"}), "line 42: field 'met' is one of"),
        (json.dumps({**VALID, "date": "2026-02-30"}), "line 42: field 'date' is not a date"),
        (json.dumps({**VALID, "benchmark": "nowhere"}), "line 42: benchmark 'nowhere' is not in"),
        (json.dumps({**VALID, "numbers": {"ratio": "0.9"}}), "line 42: field 'numbers': 'ratio' is not a number"),
        (json.dumps({**VALID, "numbers": [0.9]}), "line 42: field 'numbers' is an object"),
    ],
)
def test_a_bad_row_is_named_by_its_line(copy, capsys, line, message):
    tmp, paths = copy
    rows = (tmp / "history.jsonl").read_text(encoding="utf-8").splitlines()[:41]
    (tmp / "history.jsonl").write_text("\n".join([*rows, line]) + "\n", encoding="utf-8")
    assert history.main([*paths, "--check"]) == 2
    assert message in capsys.readouterr().err
