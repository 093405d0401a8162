"""The performance history as data: ``perf/history.jsonl`` holds one benchmark run a line,
``perf/benchmarks.json`` what each benchmark is (its title, how it works, what its targets mean), and
``docs/performance-history.md`` is rendered from the two (grouped by benchmark, newest run first).

    .venv/bin/python perf/history.py             # render docs/performance-history.md
    .venv/bin/python perf/history.py --check     # exit 1 if the page is not the rendering of the data
    .venv/bin/python perf/history.py add --benchmark scale --date 2026-11-29 --time 05:10 \\
        --machine "the shared 2-core machine" --load "load average ≈ 3" \\
        --command ".venv/bin/python perf/bench_scale.py --k 1,10" --figures "import 0.61 …" \\
        --target "k = 10 ≤ 1.2× k = 1 per stage" --met yes --number "import, k = 10 / k = 1, wall=0.61"
                                                 # append a run (validated) and render the page again

``--figures-file PATH`` reads the figures (markdown: prose, lists, tables, code blocks) from a file, ``-`` from
standard input. A run of a benchmark not yet in ``benchmarks.json`` needs ``--title`` for its new entry
(``--description`` optional). Standard library only, so it runs in any of the project's virtualenvs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HISTORY = REPO / "perf" / "history.jsonl"
BENCHMARKS = REPO / "perf" / "benchmarks.json"
PAGE = REPO / "docs" / "performance-history.md"

REQUIRED = ("date", "benchmark", "machine", "command", "figures", "source")
OPTIONAL = ("time", "title", "load", "target", "met", "numbers", "date_note")
MET = ("yes", "no", "partly", "not measured")
TIME = re.compile(r"\d\d:\d[\dx](–\d\d:\d\d)?")  # "05:10", "05:16–05:21", "19:2x" (minutes not recorded)
KEY = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
MAX_TEXT = 16_000  # characters of one field; the longest run today is under 9,000
MAX_LINE = 64_000  # characters of one line of history.jsonl
MAX_NUMBERS = 32  # headline figures of one run; the rest stay in its figures

INTRO = """\
Every benchmark run, newest first within each benchmark. The page is generated: the runs are the rows of
`perf/history.jsonl` and the benchmarks' descriptions are in `perf/benchmarks.json`; `perf/history.py`
renders this page and `tests/unit/test_performance_history.py` fails when it differs from the data. Add a run
with `.venv/bin/python perf/history.py add …` ([Performance](performance.md#adding-a-run) shows how). The
latest figure of each benchmark is on [Performance](performance.md).

Scripts in `perf/` (not timed tests); each reports a ratio against a baseline measured in the same run. Runs
on the shared 2-core machine shared it with other jobs unless their load says otherwise; figures from
different machines are not compared with each other."""


class HistoryError(ValueError):
    """A row or a benchmark entry that breaks the format, named by file and line."""


def check_run(run: object, benchmarks: dict, where: str) -> dict:
    """The run if it is well formed; else HistoryError naming ``where`` (file and line) and the field."""
    if not isinstance(run, dict):
        raise HistoryError(f"{where}: a run is a JSON object")
    unknown = sorted(set(run) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise HistoryError(f"{where}: unknown field {unknown[0]!r}")
    for field in REQUIRED:
        if not isinstance(run.get(field), str) or not run[field].strip():
            raise HistoryError(f"{where}: field {field!r} is required (non-empty text)")
    _check_numbers(run.get("numbers"), where)
    for field, value in run.items():
        if field == "numbers":
            continue
        if value is not None and not isinstance(value, str):
            raise HistoryError(f"{where}: field {field!r} must be text")
        if value is not None and len(value) > MAX_TEXT:
            raise HistoryError(f"{where}: field {field!r} is over {MAX_TEXT:,} characters")
    try:
        datetime.date.fromisoformat(run["date"])
    except ValueError:
        raise HistoryError(f"{where}: field 'date' is not a date (YYYY-MM-DD): {run['date']!r}") from None
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", run["date"]):
        raise HistoryError(f"{where}: field 'date' is not a date (YYYY-MM-DD): {run['date']!r}")
    if run.get("time") is not None and not TIME.fullmatch(run["time"]):
        raise HistoryError(f"{where}: field 'time' is not HH:MM or HH:MM–HH:MM (UTC): {run['time']!r}")
    if run.get("met") is not None and run["met"] not in MET:
        raise HistoryError(f"{where}: field 'met' is one of {', '.join(MET)} or null, not {run['met']!r}")
    if run["benchmark"] not in benchmarks:
        raise HistoryError(f"{where}: benchmark {run['benchmark']!r} is not in {BENCHMARKS.name}")
    return run


def _check_numbers(numbers: object, where: str) -> None:
    """``numbers``: a run's headline figures as numbers, name → value (the figures text keeps them all)."""
    if numbers is None:
        return
    if not isinstance(numbers, dict) or len(numbers) > MAX_NUMBERS:
        raise HistoryError(f"{where}: field 'numbers' is an object of at most {MAX_NUMBERS} name → number")
    for name, value in numbers.items():
        if not name.strip() or len(name) > 200:
            raise HistoryError(f"{where}: field 'numbers' has a name that is empty or over 200 characters")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise HistoryError(f"{where}: field 'numbers': {name!r} is not a number")


def load_benchmarks(path: Path = BENCHMARKS) -> dict:
    """Benchmark key → {title, description}, in page order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise HistoryError(f"{path.name}: an object of benchmark key → {{title, description}}")
    for key, entry in data.items():
        if not KEY.fullmatch(key):
            raise HistoryError(f"{path.name}: benchmark key {key!r} is not lower-case words joined by '-'")
        if not isinstance(entry, dict) or set(entry) != {"title", "description"}:
            raise HistoryError(f"{path.name}: benchmark {key!r} has exactly 'title' and 'description'")
        if not all(isinstance(v, str) and len(v) <= MAX_TEXT for v in entry.values()) or not entry["title"]:
            raise HistoryError(f"{path.name}: benchmark {key!r}: title and description are text")
    return data


def load_runs(benchmarks: dict, path: Path = HISTORY) -> list[dict]:
    """Every run of ``history.jsonl``, checked, in file order."""
    runs = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            where = f"{path.name} line {number}"
            if len(line) > MAX_LINE:
                raise HistoryError(f"{where}: over {MAX_LINE:,} characters")
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except json.JSONDecodeError as error:
                raise HistoryError(f"{where}: not JSON ({error.msg})") from None
            runs.append(check_run(run, benchmarks, where))
    return runs


def _newest_first(runs: list[dict]) -> list[dict]:
    # a later line of the file is the newer run when two share a date and time
    order = sorted(enumerate(runs), key=lambda item: (item[1]["date"], item[1].get("time") or "", item[0]))
    return [run for _, run in reversed(order)]


def _when(run: dict) -> str:
    return run["date"] + (f" {run['time']} UTC" if run.get("time") else "")


def _code(text: str) -> str:
    # a command already written as markdown (backticks inside) is kept as it is
    return text if "`" in text else f"`{text}`"


def render_run(run: dict) -> str:
    title = run.get("title") or "run"
    lines = [f"### {_when(run)} · {title}", ""]
    if run.get("date_note"):
        lines.append(f"- **Date:** {run['date_note']}")
    lines.append(f"- **Machine:** {run['machine']}")
    if run.get("load"):
        lines.append(f"- **Load:** {run['load']}")
    lines.append(f"- **Command:** {_code(run['command'])}")
    if run.get("target"):
        met = f" (met: {run['met']})" if run.get("met") else ""
        lines.append(f"- **Target:** {run['target']}{met}")
    if run.get("numbers"):
        lines.append("- **Numbers:** " + "; ".join(f"{name} **{value:,}**" for name, value in run["numbers"].items()))
    lines += ["", run["figures"].strip(), "", f"*Source: {run['source']}*"]
    return "\n".join(lines)


def _summary(benchmarks: dict, latest: dict) -> str:
    rows = ["| benchmark | latest run | target | met |", "| --- | --- | --- | --- |"]
    for key, entry in benchmarks.items():
        if key in latest:
            run = latest[key]
            target = (run.get("target") or "").replace("\n", " ")
            rows.append(
                f"| [{entry['title']}](#{anchor(entry['title'])}) | {_when(run)} | {target} | {run.get('met') or ''} |"
            )
    return "\n".join(rows)


def render(benchmarks: dict, runs: list[dict]) -> str:
    """The page: the intro, a table of each benchmark's latest run, then each benchmark, newest run first."""
    by_benchmark: dict[str, list[dict]] = {key: [] for key in benchmarks}
    for run in _newest_first(runs):
        by_benchmark[run["benchmark"]].append(run)
    latest = {key: group[0] for key, group in by_benchmark.items() if group}
    parts = ["# Performance history", "", INTRO, "", _summary(benchmarks, latest)]
    for key, entry in benchmarks.items():
        # the heading's id is its title's slug: other pages link to #scale and #gpu-figures
        parts += ["", f"## {entry['title']}"]
        if entry["description"]:
            parts += ["", entry["description"].strip()]
        for run in by_benchmark[key]:
            parts += ["", render_run(run)]
    return "\n".join(parts) + "\n"


def anchor(title: str) -> str:
    """A heading's id as the docs' toc extension makes it (its default slugify)."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", ascii_title).strip().lower())


def _figures(args: argparse.Namespace) -> str:
    if (args.figures is None) == (args.figures_file is None):
        raise HistoryError("give the figures with exactly one of --figures and --figures-file")
    if args.figures is not None:
        return args.figures
    if args.figures_file == "-":
        return sys.stdin.read(MAX_TEXT + 1)
    with open(args.figures_file, encoding="utf-8") as file:
        return file.read(MAX_TEXT + 1)


def _numbers(pairs: list[str] | None) -> dict | None:
    numbers = {}
    for pair in pairs or ():
        name, sep, value = pair.rpartition("=")
        try:
            numbers[name.strip()] = int(value) if re.fullmatch(r"-?\d+", value.strip()) else float(value)
        except ValueError:
            raise HistoryError(f"--number {pair!r} is not NAME=NUMBER") from None
        if not sep:
            raise HistoryError(f"--number {pair!r} is not NAME=NUMBER")
    return numbers or None


def add_run(args: argparse.Namespace, benchmarks: dict) -> dict:
    """The run the command line describes, checked; a new benchmark is added to ``benchmarks`` (with --title)."""
    if args.benchmark not in benchmarks:
        if not args.title:
            known = ", ".join(benchmarks)
            raise HistoryError(f"--benchmark {args.benchmark!r} is new: give --title (known: {known})")
        if not KEY.fullmatch(args.benchmark):
            raise HistoryError(f"--benchmark {args.benchmark!r} is not lower-case words joined by '-'")
        benchmarks[args.benchmark] = {"title": args.title, "description": args.description or ""}
    run = {
        "date": args.date,
        "time": args.time,
        "benchmark": args.benchmark,
        "title": args.run_title,
        "machine": args.machine,
        "load": args.load,
        "command": args.command,
        "figures": _figures(args),
        "target": args.target,
        "met": args.met,
        "source": args.source,
        "date_note": args.date_note,
        "numbers": _numbers(args.number),
    }
    run = {field: value for field, value in run.items() if value not in (None, "", {})}
    return check_run(run, benchmarks, "the new run")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs from the rendering")
    parser.add_argument("--history", type=Path, default=HISTORY, help=argparse.SUPPRESS)
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help=argparse.SUPPRESS)
    parser.add_argument("--page", type=Path, default=PAGE, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="action")
    add = commands.add_parser("add", help="append a run to perf/history.jsonl and render the page")
    add.add_argument("--benchmark", required=True, help="its key in perf/benchmarks.json, e.g. scale")
    add.add_argument("--date", required=True, help="YYYY-MM-DD (UTC)")
    add.add_argument("--time", help="HH:MM or HH:MM–HH:MM (UTC)")
    add.add_argument("--machine", required=True, help="the machine (cores, GPU, database)")
    add.add_argument("--load", help="the conditions, e.g. 'load average ≈ 3' or 'quiet'")
    add.add_argument("--command", required=True, help="the command that was run")
    add.add_argument("--figures", help="the figures (markdown)")
    add.add_argument("--figures-file", help="read the figures from this file ('-': standard input)")
    add.add_argument("--target", help="the target, as performance.md states it")
    add.add_argument("--met", choices=MET, help="whether this run meets the target")
    add.add_argument("--number", action="append", help="a headline figure as NAME=NUMBER (repeat it)")
    add.add_argument("--run-title", help="a few words naming the run (its heading)")
    add.add_argument("--source", default="perf/history.py add", help="where the figures were recorded")
    add.add_argument("--date-note", help="what is uncertain about the date or time")
    add.add_argument("--title", help="a new benchmark's title (its heading; keep it, pages link to it)")
    add.add_argument("--description", help="a new benchmark's description (markdown)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        benchmarks = load_benchmarks(args.benchmarks)
        runs = load_runs(benchmarks, args.history)
        if args.action == "add":
            if args.check:
                raise HistoryError("--check renders nothing: run it without add")
            run = add_run(args, benchmarks)
            args.benchmarks.write_text(json.dumps(benchmarks, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            with args.history.open("a", encoding="utf-8") as history:
                history.write(json.dumps(run, ensure_ascii=False) + "\n")
            runs.append(run)
        page = render(benchmarks, runs)
    except (HistoryError, OSError, json.JSONDecodeError) as error:
        print(f"perf/history.py: {error}", file=sys.stderr)
        return 2
    if args.check:
        current = args.page.read_text(encoding="utf-8") if args.page.exists() else ""
        if current != page:
            print(f"{args.page} differs from the rendering of the data: run perf/history.py", file=sys.stderr)
            return 1
        return 0
    args.page.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
