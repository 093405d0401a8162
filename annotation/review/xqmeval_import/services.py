"""Import the released XQ-MEval candidates and review decisions (service over ``xqmeval_import.domain``).

Atomic and idempotent: a file set with any bad row imports nothing; importing the same files again
changes nothing; different content under an existing id (segment text, candidate, decision) is an error.
The released decisions are recorded as one imported, final decision per candidate, not as invented
reviewers (per-reviewer decisions were not released).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, fields
from pathlib import Path

from django.db import transaction
from django.db.models import Count

from annotation.review.xqmeval_import.domain import (
    FileGroup,
    GroupRead,
    XQCandidate,
    candidate_checks,
    count_rows,
    match_decisions,
    plan_files,
    read_and_check_group,
    read_group,
    read_spooled,
    spool_decisions,
    unmatched_decisions,
    validate_group,
)
from core import bulk
from core.corpus.selectors import corpus_limits
from core.corpus.services import corpus_segments_create
from core.domain.errors import Conflict
from core.models import GoldSegment, Project
from core.services import ImportRejected, direction_ensure, project_directions_add, project_ensure, project_name_check
from injection.models import Candidate, InjectionRun
from injection.services import candidate_rows_create, run_ensure, run_totals_set

RUN_NAME = "xqmeval-release"
STATUS_OF_DECISION = {"accept": Candidate.Status.ACCEPTED, "reject": Candidate.Status.REJECTED}
SAMPLING = {"temperature": 0.5, "seed": 42}


@dataclass
class ImportCounts:
    """What an import, or one language of it, added and found stored already."""

    segments_created: int = 0
    candidates_created: int = 0
    candidates_unchanged: int = 0
    decisions_created: int = 0
    decisions_unchanged: int = 0
    per_direction_type: Counter = field(default_factory=Counter)
    flagged: Counter = field(default_factory=Counter)

    def add(self, other: ImportCounts) -> None:
        for f in fields(ImportCounts):
            mine = getattr(self, f.name)
            if isinstance(mine, Counter):
                mine.update(getattr(other, f.name))
            else:
                setattr(self, f.name, mine + getattr(other, f.name))


@dataclass
class XQImportResult(ImportCounts):
    project: str = ""
    project_created: bool = False
    status_counts: Counter = field(default_factory=Counter)
    seconds: dict = field(default_factory=dict)  # read (parse + validate files), checks, write (database inserts)

    @property
    def changed(self) -> bool:
        return bool(self.project_created or self.segments_created or self.candidates_created or self.decisions_created)


def xqmeval_directory_read(*, directory: str | Path) -> list[tuple[str, Path]]:
    """The candidate files of a directory as (name, path): each is read when its language's turn comes."""
    directory = Path(directory)
    base = directory / "candidates" if (directory / "candidates").is_dir() else directory
    if not base.is_dir():
        raise ImportRejected(str(directory), ["no such directory"])
    files = [(p.name, p) for p in sorted(base.glob("*.parquet"))]
    if not files:
        raise ImportRejected(str(base), ["no *.parquet candidate files"])
    return files


def xqmeval_import(
    *,
    project_name: str,
    directory: str | Path | None = None,
    decisions_path: str | Path | None = None,
    files: list[tuple[str, bytes | Path]] | None = None,
    decisions: tuple[str, bytes | Path] | None = None,
    strict: bool = False,
    owner=None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_language: Callable[[str, int, int], None] | None = None,
    jobs: int = 1,
    writers: int = 0,
) -> XQImportResult:
    """Import from a directory (``candidates/`` inside it is used when present) or from uploaded files.

    One target language at a time (read, validated, checked, written), so memory holds one language's
    files and candidates, not the release's; all of it in one transaction, so a problem anywhere writes
    nothing. After the first problem nothing more is written, but every file is still read, so the error
    lists every problem. ``jobs`` > 1 reads and checks languages in that many worker processes (pure code:
    no database) while this process writes the languages read before. ``on_language(language, candidates,
    problems so far)`` is called as each language is done.

    ``writers`` > 1 (PostgreSQL): that many processes each read, check and write whole languages, one
    transaction per language, after a first pass has validated every file and decision (so bad input
    still writes nothing). The database work is then spread over as many server processes, which one
    transaction cannot do; the price is that a conflict with stored rows found while writing leaves the
    languages written before it (``ImportIncomplete``), and running the import again completes it."""
    listeners = _Listeners(progress, on_total, on_language)
    if writers > 1:
        _check_parallel_writers()
    files, decisions, source = _inputs(project_name, directory, files, decisions, decisions_path)
    if writers > 1:
        return _import_by_language(project_name, owner, files, decisions, source, strict, listeners, writers)
    return _import_in_one_transaction(project_name, owner, files, decisions, source, strict, listeners, jobs)


def _import_in_one_transaction(
    project_name: str, owner, files, decisions, source: str, strict: bool, listeners: _Listeners, jobs: int
) -> XQImportResult:
    """``import_xqmeval`` in one transaction, language by language (read in ``jobs`` processes)."""
    started = time.perf_counter()
    groups, errors = plan_files(files, corpus_limits())
    spool, decision_errors = spool_decisions(decisions, corpus_limits())
    with spool, transaction.atomic():  # the spool's files are deleted however it ends
        seconds = {"read": time.perf_counter() - started, "checks": 0.0, "write": 0.0}
        listeners.total(lambda: sum(count_rows(g) for g in groups))
        project, created = project_ensure(name=project_name, owner=owner, title=project_name)
        result = XQImportResult(project=project.name, project_created=created, seconds=seconds)
        run, directions = _ensure_run(project, groups, source)
        units = {code: direction.target.unit for code, direction in directions.items()}  # span unit per direction
        stored_directions = set(
            GoldSegment.objects.filter(project=project).values_list("direction_id", flat=True).distinct()
        )
        for read in _read_groups(groups, strict, jobs, seconds):
            errors += read.errors
            rows = spool.take(read.language, errors)
            decided = match_decisions(read.candidates, rows, errors)
            errors += unmatched_decisions(rows)
            if (
                not errors and not decision_errors
            ):  # after the first problem: keep reading to report them all, write nothing more
                started = time.perf_counter()
                _write_language(project, run, directions, units, read, decided, result, errors, stored_directions)
                seconds["write"] += time.perf_counter() - started
            listeners.language_done(read.language, len(read.candidates), len(errors) + len(decision_errors))
        errors += decision_errors + unmatched_decisions(spool.rest(errors))
        if errors:
            raise ImportRejected(source, errors)
        _finish(project, run, result)
    _refresh_statistics(result)
    return result


def _inputs(project_name, directory, files, decisions, decisions_path) -> tuple[list, tuple | None, str]:
    """The candidate files, the decisions (name, content or path) and the source's name, checked."""
    if files is None:
        files = xqmeval_directory_read(directory=directory)
    if decisions is None and decisions_path is not None:
        path = Path(decisions_path)
        if not path.is_file():
            raise ImportRejected(str(path), ["no such file"])
        decisions = (str(path), path)  # read as a stream, into one temporary file per language
    problem = project_name_check(name=project_name)
    if problem:
        raise ImportRejected("project", [f"project name {project_name[:40]!r}: {problem}"])
    return files, decisions, str(directory or "upload")


def _ensure_run(project: Project, groups: list[FileGroup], source: str) -> tuple[InjectionRun, dict]:
    """The import's injection run (made once) and its directions by code (added to the project)."""
    codes = sorted({direction for g in groups for _, direction, _, _ in g.files})
    directions = {code: direction_ensure(code=code) for code in codes}
    try:
        project_directions_add(project=project, codes=directions)
    except ValueError as exc:
        raise ImportRejected(source, [str(exc)]) from None
    run = run_ensure(
        project=project,
        name=RUN_NAME,
        defaults={
            "backend": "import",
            "model": "gpt-4o",
            "kind": Candidate.Kind.MQM,
            "directions": codes,
            "error_types": sorted({etype for g in groups for _, _, etype, _ in g.files}),
            "positions": ["head", "end"],
            "parameters": {"source": "naist-nlp/XQ-MEval", **SAMPLING},
            "status": InjectionRun.Status.DONE,
        },
    )
    return run, directions


class ImportIncomplete(ImportRejected):
    """Parallel writers (``writers`` > 1) met conflicts with stored rows in some languages: each of those
    was rolled back, the other languages were written (``written``) and stay. Fix the input and import
    again: what was written comes back unchanged and the rest is added."""

    def __init__(self, source: str, errors: list[str], written: list[str]):
        super().__init__(source, errors)
        self.written = written
        head, _, rest = self.args[0].partition("\n")
        kept = ", ".join(written) if written else "none"
        self.args = (
            head.replace("nothing imported", f"{len(written)} language(s) written and kept ({kept}), the others not")
            + "\n"
            + rest,
        )


@dataclass(frozen=True)
class _Listeners:
    """Who hears how an import goes (each optional): ``progress(candidates)`` and ``on_language(language,
    candidates, problems so far)`` as each language is done, ``on_total(candidates)`` once before."""

    progress: Callable[[int], None] | None = None
    on_total: Callable[[int], None] | None = None
    on_language: Callable[[str, int, int], None] | None = None

    def total(self, count: Callable[[], int]) -> None:
        if self.on_total is not None:  # counted only for a listener
            self.on_total(count())

    def language_done(self, language: str, candidates: int, problems: int) -> None:
        if self.progress is not None:
            self.progress(candidates)
        if self.on_language is not None:
            self.on_language(language, candidates, problems)


def _check_parallel_writers() -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        raise ImportRejected(
            "writers", [f"parallel writers need PostgreSQL (this database is {connection.vendor}: use one writer)"]
        )
    if connection.in_atomic_block:  # the writers' connections could not see what this transaction holds
        raise ImportRejected(
            "writers", ["parallel writers commit each language: call the import outside a transaction"]
        )


def _import_by_language(
    project_name: str, owner, files, decisions, source: str, strict: bool, listeners: _Listeners, writers: int
) -> XQImportResult:
    """``import_xqmeval`` with ``writers`` processes, each writing whole languages in their own transaction."""
    from annotation.review.xqmeval_import import writers as xqmeval_writers

    started = time.perf_counter()
    groups, errors = plan_files(files, corpus_limits())
    pool = _writer_pool(writers)
    written: list[str] = []
    try:
        with pool:
            pool.submit(int)  # the writers start (Python, Django) while the decisions are spooled
            spool, decision_errors = spool_decisions(decisions, corpus_limits())
            with spool:
                errors += decision_errors
                name = decisions[0] if decisions is not None else ""
                paths, total = _validate_languages(pool, groups, strict, spool, name, errors)
                if errors:
                    raise ImportRejected(source, errors)
                seconds = {"read": time.perf_counter() - started, "checks": 0.0, "write": 0.0}
                listeners.total(lambda: total)
                with transaction.atomic():  # committed before the writers start: they see the project and the run
                    project, created = project_ensure(name=project_name, owner=owner, title=project_name)
                    run, _ = _ensure_run(project, groups, source)
                result = XQImportResult(project=project.name, project_created=created, seconds=seconds)
                # 2. the writers: one language, one transaction
                futures = {
                    pool.submit(
                        xqmeval_writers.write_language, project.pk, run.pk, g, strict, paths[g.language], name
                    ): g
                    for g in groups
                }
                for future in as_completed(futures):
                    language = futures[future].language
                    part = _language_written(future, language)
                    errors += part.errors
                    if not part.errors:
                        written.append(language)
                        result.add(part)
                    listeners.language_done(language, part.candidates, len(errors))
                seconds["write"] = time.perf_counter() - started - seconds["read"]
            if errors:
                raise ImportIncomplete(source, errors, sorted(written))
            # the planner statistics, one table per writer, while this process counts what the run holds
            analyzed = (
                [pool.submit(xqmeval_writers.analyze, label) for label in STATISTICS_TABLES] if result.changed else []
            )
            _finish(project, run, result)
            for future in analyzed:
                future.result()
    except BrokenProcessPool as exc:
        raise ImportIncomplete(
            source,
            [f"an import writer process died ({exc}): run the import again (with fewer writers)"],
            sorted(written),
        ) from None
    return result


def _writer_pool(writers: int):
    """The writer processes, each with its own connection to this database."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from django.db import connection

    from annotation.review.xqmeval_import import writers as xqmeval_writers

    database = {key: connection.settings_dict[key] for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT", "OPTIONS")}
    # spawn, not fork: a forked child would share this process's database connection
    return ProcessPoolExecutor(
        max_workers=writers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=xqmeval_writers.setup,
        initargs=(database,),
    )


def _validate_languages(pool, groups: list[FileGroup], strict: bool, spool, name: str, errors: list[str]):
    """Step 1 of the parallel import: every language's files and decisions validated in the writers before
    anything is written, problems into ``errors``. Returns each language's spooled decisions, and the
    candidates counted."""
    paths = {g.language: spool.finish(g.language) for g in groups}
    total = 0
    for future in [pool.submit(validate_group, g, strict, paths[g.language], name) for g in groups]:
        _, candidates, problems = future.result()
        total += candidates
        errors += problems
    for language in spool.languages():
        if language not in paths:
            errors += unmatched_decisions(read_spooled(spool.finish(language), language, name, errors))
    return paths, total


def _language_written(future, language: str) -> LanguageWritten:
    """What a writer did for ``language``; a database error in its transaction (rolled back there) as a problem."""
    try:
        _, part = future.result()
    except BrokenProcessPool:
        raise
    except Exception as exc:
        part = LanguageWritten(
            errors=[f"language {language}: writing failed ({type(exc).__name__}: {exc}); nothing of it was kept"]
        )
    return part


@dataclass
class LanguageWritten(ImportCounts):
    """What one writer did for one language (rolled back, counting nothing, when ``errors``)."""

    candidates: int = 0
    errors: list = field(default_factory=list)


class _Conflict(Conflict):
    code = "stored_row_conflict"


def language_task_write(
    *, project_id: int, run_id: int, group: FileGroup, strict: bool, decisions_path: str | None, name: str
) -> tuple[str, LanguageWritten]:
    """A writer's unit of work (``writers.write_language``): read, check and write one language in
    one transaction; a conflict with stored rows rolls that language back and is reported."""
    from core.models import Direction

    read = read_and_check_group(group, strict)
    part = LanguageWritten(candidates=len(read.candidates))
    errors = list(read.errors)
    decided = match_decisions(read.candidates, read_spooled(decisions_path, group.language, name, errors), errors)
    if errors:  # (the validation pass saw the same files: only a file changed since then gets here)
        part.errors = errors
        return group.language, part
    project = Project.objects.get(pk=project_id)
    run = InjectionRun.objects.get(pk=run_id)
    codes = sorted({d for d, _ in read.gold})
    directions = {d.code: d for d in Direction.objects.filter(code__in=codes).select_related("target")}
    units = {code: direction.target.unit for code, direction in directions.items()}
    stored_directions = set(
        GoldSegment.objects.filter(project=project, direction__in=directions.values())
        .values_list("direction_id", flat=True)
        .distinct()
    )
    try:
        with transaction.atomic():
            _write_language(project, run, directions, units, read, decided, part, errors, stored_directions)
            if errors:
                raise _Conflict
    except _Conflict:
        part = LanguageWritten(candidates=len(read.candidates), errors=errors)
    return group.language, part


def _finish(project: Project, run: InjectionRun, result: XQImportResult) -> None:
    run_totals_set(run=run)
    for status, n in (
        Candidate.objects.filter(run__project=project).values_list("status").annotate(n=Count("id")).order_by()
    ):
        result.status_counts[status] += n


STATISTICS_TABLES = ("core.GoldSegment", "injection.Candidate", "annotation.ReviewDecision")


def _refresh_statistics(result: XQImportResult) -> None:
    if result.changed:
        # the review queue query takes seconds instead of milliseconds until the planner sees the new rows
        from django.apps import apps

        bulk.refresh_planner_statistics(*(apps.get_model(label) for label in STATISTICS_TABLES))


def _write_language(
    project, run, directions, units, read: GroupRead, decided, result, errors, stored_directions
) -> None:
    """One language's gold pairs, candidates and decisions (what is new of them), in the caller's transaction;
    a conflict with what is stored goes to ``errors`` and stops the writing."""
    group_directions = sorted({d for d, _ in read.gold})
    segments, result.segments_created, stored_before = _import_segments(
        project, directions, units, group_directions, read.gold, errors, result.segments_created, stored_directions
    )
    if not errors:
        ids = _import_candidates(run, segments, group_directions, read, decided, result, errors, stored_before)
        if not errors:
            _import_decisions(ids, decided, result, errors)


def _read_groups(groups: list[FileGroup], strict: bool, jobs: int, seconds: dict) -> Iterator[GroupRead]:
    """Each language's files read, validated and checked, in order: here, or in ``jobs`` worker processes
    (at most ``jobs`` + 1 languages in flight, so memory stays bounded when writing is the slower side)."""
    if jobs <= 1 or len(groups) < 2:
        for group in groups:
            started = time.perf_counter()
            read = read_group(group, strict=strict)
            seconds["read"] += time.perf_counter() - started
            started = time.perf_counter()
            if not read.errors:
                read.checks = [candidate_checks(xc) for xc in read.candidates]
            seconds["checks"] += time.perf_counter() - started
            yield read
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: a forked child would share this process's database connection
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = deque(pool.submit(read_and_check_group, g, strict) for g in groups[: jobs + 1])
        queued = iter(groups[jobs + 1 :])
        while pending:
            started = time.perf_counter()
            read = pending.popleft().result()
            seconds["read"] += time.perf_counter() - started  # waiting for the workers (reading and checks)
            following = next(queued, None)
            if following is not None:
                pending.append(pool.submit(read_and_check_group, following, strict))
            yield read


def _import_segments(
    project: Project, directions, units, group_directions, gold, errors, created: int, stored_directions: set[int]
) -> tuple[dict, int, bool]:
    """(direction, segment id) -> (gold segment pk, span unit) for one language's gold pairs, new ones
    inserted; also ``created`` + their number, and whether any of them was stored before (only then can
    candidates of this language be stored already). ``stored_directions``: the directions that had gold
    segments in the project before this import; a first import asks nothing per language."""
    direction_ids = [directions[code].pk for code in group_directions]
    existing = {}
    if stored_directions.intersection(direction_ids):  # (a new table's scan per language would be quadratic)
        existing = {
            (code, external_id): (pk, src, ref)
            for pk, code, external_id, src, ref in GoldSegment.objects.filter(
                project=project, direction_id__in=direction_ids
            ).values_list("id", "direction__code", "external_id", "source", "reference")
        }
    new, new_keys = [], []
    for (direction, segment_id), (src, ref) in sorted(gold.items()):
        old = existing.get((direction, segment_id))
        if old is None:
            new_keys.append((direction, segment_id))
            new.append(
                {
                    "project_id": project.pk,
                    "direction_id": directions[direction].pk,
                    "external_id": segment_id,
                    "source": src,
                    "reference": ref,
                }
            )
        elif (old[1], old[2]) != (src, ref):
            errors.append(f"segment {direction}#{segment_id} already exists in {project.name} with different text")
    if errors:
        return {}, created, bool(existing)
    reserved = corpus_segments_create(rows=new)  # PostgreSQL: nothing is read back
    segments = {key: value[0] for key, value in existing.items()}
    if reserved is not None:
        segments.update(zip(new_keys, reserved))
    elif new:
        segments = dict(
            ((code, external_id), pk)
            for pk, code, external_id in GoldSegment.objects.filter(
                project=project, direction_id__in=direction_ids
            ).values_list("id", "direction__code", "external_id")
        )
    return {key: (pk, units[key[0]]) for key, pk in segments.items()}, created + len(new), bool(existing)


def _import_candidates(
    run, segments, group_directions, read: GroupRead, decided, result, errors, stored_before: bool
) -> dict[tuple, tuple[int, str, bool]]:
    """Insert one language's new candidates; returns candidate key -> (pk, status, new) for its decisions."""
    existing = {}
    if stored_before:
        existing = {
            (seg, etype, pos): (pk, text, start, end, external_id, status)
            for pk, seg, etype, pos, text, start, end, external_id, status in Candidate.objects.filter(
                run=run, segment__direction__code__in=group_directions
            ).values_list(
                "id", "segment_id", "error_type", "position", "text", "span_start", "span_end", "external_id", "status"
            )
        }
    ids: dict[tuple, tuple[int, str, bool]] = {}
    new: list[dict] = []
    new_keys: list[tuple] = []
    for xc, (checks, flags) in zip(read.candidates, read.checks):
        segment_id, unit = segments[(xc.direction_code, xc.segment_id)]
        old = existing.get((segment_id, xc.error_type, xc.position))
        if old is not None:
            if old[1:5] != (xc.text, xc.edit.start, xc.edit.end, str(xc.count_id)):
                errors.append(
                    f"{xc.location}: candidate {xc.language}/{xc.error_type}/{xc.count_id} already imported with different content"
                )
            else:
                result.candidates_unchanged += 1
            ids[xc.key] = (old[0], old[5], False)
            continue
        new.append(_candidate_row(run, xc, segment_id, unit, checks, flags, decided.get(xc.key)))
        new_keys.append(xc.key)
        result.per_direction_type[(xc.direction_code, xc.error_type)] += 1
        for flag in flags:
            result.flagged[flag] += 1
    if errors:
        return {}
    reserved = candidate_rows_create(rows=new)  # PostgreSQL: nothing is read back
    result.candidates_created += len(new)
    if reserved is None and new:  # a backend without sequences: read the ids back
        stored = {
            (seg, etype, pos): pk
            for pk, seg, etype, pos in Candidate.objects.filter(
                run=run, segment__direction__code__in=group_directions
            ).values_list("id", "segment_id", "error_type", "position")
        }
        reserved = [stored[(row["segment_id"], row["error_type"], row["position"])] for row in new]
    for key, row, pk in zip(new_keys, new, reserved or []):
        ids[key] = (pk, row.get("status", Candidate.Status.PENDING), True)
    return ids


def _candidate_row(run, xc: XQCandidate, segment_id: int, unit: str, checks, flags, decision: str | None) -> dict:
    """The candidate row of ``xc`` (its segment's span ``unit``), with its released ``decision``'s status if any."""
    row = {
        "run_id": run.pk,
        "segment_id": segment_id,
        "external_id": str(xc.count_id),
        "kind": Candidate.Kind.MQM,
        "error_type": xc.error_type,
        "position": xc.position,
        "severity": Candidate.Severity.MAJOR,
        "text": xc.text,
        "span_start": xc.edit.start,
        "span_end": xc.edit.end,
        "edit_text": (" " if unit == "token" else "").join(xc.edit.replacement),
        "backend": "import",
        "model": "gpt-4o",
        "prompt_version": "xqmeval-release",
        "sampling": SAMPLING,
        "raw_output": xc.marked,
        "checks": checks,
        "flags": flags,
    }
    if decision is not None:  # the released final decision decides the status (as _import_decisions would)
        row["status"] = STATUS_OF_DECISION[decision]
        row["status_reason"] = "imported XQ-MEval decision"
    return row


def _import_decisions(ids, decided, result, errors) -> None:
    """One final imported decision per decided candidate of one language (an imported one is kept)."""
    from annotation.models import ReviewDecision

    stored = [ids[key][0] for key in decided if not ids[key][2]]  # a candidate inserted just now has no decision yet
    existing = {}
    for i in range(0, len(stored), 1000):
        existing.update(
            ReviewDecision.objects.filter(
                candidate_id__in=stored[i : i + 1000], source=ReviewDecision.Source.IMPORTED
            ).values_list("candidate_id", "decision")
        )
    new, status_updates = [], {}
    for key, decision in decided.items():
        pk, status, _ = ids[key]
        old = existing.get(pk)
        if old is not None:
            if old != decision:
                errors.append(
                    f"decision for {'/'.join(map(str, key))} already imported as {old!r}, file says {decision!r}"
                )
            else:
                result.decisions_unchanged += 1
            continue
        new.append(
            {
                "candidate_id": pk,
                "reviewer_id": None,
                "decision": decision,
                "source": ReviewDecision.Source.IMPORTED,
                "is_final": True,
                "comment": "XQ-MEval released screening decision",
            }
        )
        if status != STATUS_OF_DECISION[decision]:
            status_updates.setdefault(STATUS_OF_DECISION[decision], []).append(pk)
    if errors:
        return
    bulk.insert_dicts(ReviewDecision, new)
    # candidates imported earlier without a decision (new ones got theirs at creation)
    for status, pks in status_updates.items():
        for i in range(0, len(pks), 500):
            Candidate.objects.filter(pk__in=pks[i : i + 500]).update(
                status=status, status_reason="imported XQ-MEval decision"
            )
    result.decisions_created += len(new)
