"""Import the released XQ-MEval candidates and review decisions (service over ``xqmeval_io``).

Atomic and idempotent: a file set with any bad row imports nothing; importing the same files again
changes nothing; different content under an existing id (segment text, candidate, decision) is an error.
The released decisions are recorded as one imported, final decision per candidate, not as invented
reviewers (per-reviewer decisions were not released).
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from django.db import transaction
from django.db.models import Count

from annotation.review.xqmeval_io import XQMEvalFormatError, read_release
from core import bulk
from core.models import GoldSegment, Project
from core.services import ImportRejected, add_directions, ensure_direction, ensure_project, project_name_problem
from injection.domain.checks import run_checks
from injection.models import Candidate, InjectionRun

RUN_NAME = "xqmeval-release"
STATUS_OF_DECISION = {"accept": Candidate.Status.ACCEPTED, "reject": Candidate.Status.REJECTED}


@dataclass
class XQImportResult:
    project: str
    project_created: bool = False
    segments_created: int = 0
    candidates_created: int = 0
    candidates_unchanged: int = 0
    decisions_created: int = 0
    decisions_unchanged: int = 0
    per_direction_type: Counter = field(default_factory=Counter)
    status_counts: Counter = field(default_factory=Counter)
    flagged: Counter = field(default_factory=Counter)
    seconds: dict = field(default_factory=dict)  # read (parse + validate files), checks, write (database inserts)

    @property
    def changed(self) -> bool:
        return bool(self.project_created or self.segments_created or self.candidates_created or self.decisions_created)


def read_directory(directory: str | Path) -> list[tuple[str, bytes]]:
    directory = Path(directory)
    base = directory / "candidates" if (directory / "candidates").is_dir() else directory
    if not base.is_dir():
        raise ImportRejected(str(directory), ["no such directory"])
    files = [(p.name, p.read_bytes()) for p in sorted(base.glob("*.parquet"))]
    if not files:
        raise ImportRejected(str(base), ["no *.parquet candidate files"])
    return files


def import_xqmeval(
    project_name: str,
    directory: str | Path | None = None,
    decisions_path: str | Path | None = None,
    *,
    files: list[tuple[str, bytes]] | None = None,
    decisions: tuple[str, bytes] | None = None,
    strict: bool = False,
    owner=None,
    progress: Callable[[int], None] | None = None,
) -> XQImportResult:
    """Import from a directory (``candidates/`` inside it is used when present) or from uploaded files."""
    if files is None:
        files = read_directory(directory)
    if decisions is None and decisions_path is not None:
        path = Path(decisions_path)
        if not path.is_file():
            raise ImportRejected(str(path), ["no such file"])
        decisions = (str(path), path.read_bytes())
    try:
        started = time.perf_counter()
        release = read_release(files, decisions, strict=strict)
        read_s = time.perf_counter() - started
    except XQMEvalFormatError as exc:
        raise ImportRejected(str(directory or "upload"), exc.errors) from None

    problem = project_name_problem(project_name)
    if problem:
        raise ImportRejected("project", [f"project name {project_name[:40]!r}: {problem}"])
    with transaction.atomic():
        project, created = ensure_project(project_name, owner=owner, title=project_name)
        result = XQImportResult(project=project.name, project_created=created)
        result.seconds = {"read": read_s, "checks": 0.0, "write": 0.0}
        directions = {code: ensure_direction(code) for code in sorted({d for d, _ in release.gold})}
        try:
            add_directions(project, directions)
        except ValueError as exc:
            raise ImportRejected(str(directory or "upload"), [str(exc)]) from None
        segments = _import_segments(project, directions, release, result)
        run, _ = InjectionRun.objects.get_or_create(
            project=project,
            name=RUN_NAME,
            defaults={
                "backend": "import",
                "model": "gpt-4o",
                "kind": Candidate.Kind.MQM,
                "directions": sorted(directions),
                "error_types": sorted({c.error_type for c in release.candidates}),
                "positions": ["head", "end"],
                "parameters": {"source": "naist-nlp/XQ-MEval", "temperature": 0.5, "seed": 42},
                "status": InjectionRun.Status.DONE,
            },
        )
        candidates = _import_candidates(run, segments, release, result, progress)
        _import_decisions(project, candidates, release, result)
        run.total = run.done = Candidate.objects.filter(run=run).count()
        run.save(update_fields=["total", "done"])
    if result.changed:
        # the review queue query takes seconds instead of milliseconds until the planner sees the new rows
        from annotation.models import ReviewDecision

        bulk.refresh_planner_statistics(GoldSegment, Candidate, ReviewDecision)
    return result


def _import_segments(project: Project, directions, release, result) -> dict[tuple[str, str], GoldSegment]:
    existing = {
        (seg.direction.code, seg.external_id): seg
        for seg in GoldSegment.objects.filter(project=project).select_related("direction__target")
    }
    errors, new = [], []
    for (direction, segment_id), (src, ref) in sorted(release.gold.items()):
        seg = existing.get((direction, segment_id))
        if seg is None:
            new.append(GoldSegment(project=project, direction=directions[direction], external_id=segment_id, source=src, reference=ref))
        elif (seg.source, seg.reference) != (src, ref):
            errors.append(f"segment {direction}#{segment_id} already exists in {project.name} with different text")
    if errors:
        raise ImportRejected("gold segments", errors)
    bulk.insert_objects(GoldSegment, new)
    result.segments_created = len(new)
    return {
        (seg.direction.code, seg.external_id): seg
        for seg in GoldSegment.objects.filter(project=project).select_related("direction__target")
    }


def _import_candidates(run, segments, release, result, progress) -> dict[tuple, Candidate]:
    started = time.perf_counter()
    existing = {
        (c.segment_id, c.error_type, c.position): c for c in Candidate.objects.filter(run=run)
    }
    errors, new = [], []
    by_key: dict[tuple, Candidate] = {}
    for i, xc in enumerate(release.candidates, start=1):
        segment = segments[(xc.direction, xc.segment_id)]
        edit_text = " ".join(xc.edit.replacement) if segment.direction.target.unit == "token" else "".join(xc.edit.replacement)
        old = existing.get((segment.id, xc.error_type, xc.position))
        if old is not None:
            if (old.text, old.span_start, old.span_end, old.external_id) != (xc.text, xc.edit.start, xc.edit.end, str(xc.count_id)):
                errors.append(f"{xc.location}: candidate {xc.language}/{xc.error_type}/{xc.count_id} already imported with different content")
            else:
                result.candidates_unchanged += 1
            by_key[xc.key] = old
            continue
        checks, flags = run_checks(
            reference=xc.ref,
            candidate_text=xc.text,
            edit=xc.edit,
            language=xc.language,
            kind=Candidate.Kind.MQM,
            error_type=xc.error_type,
            position=xc.position,
            source=xc.src,
            marked_outside_ok=xc.outside_ok,
            regions=xc.regions,
        )
        if not xc.outside_ok:
            checks.setdefault("local_edit", {"passed": False, "detail": ""})["detail"] = xc.outside_detail
        if xc.reference_mismatch:
            checks["reference_mismatch"] = {"passed": False, "detail": xc.reference_mismatch}
            flags.append("reference_mismatch")
        candidate = Candidate(
            run=run,
            segment=segment,
            external_id=str(xc.count_id),
            kind=Candidate.Kind.MQM,
            error_type=xc.error_type,
            position=xc.position,
            severity=Candidate.Severity.MAJOR,
            text=xc.text,
            span_start=xc.edit.start,
            span_end=xc.edit.end,
            edit_text=edit_text,
            backend="import",
            model="gpt-4o",
            prompt_version="xqmeval-release",
            sampling={"temperature": 0.5, "seed": 42},
            raw_output=xc.marked,
            checks=checks,
            flags=flags,
        )
        decision = release.decisions.get(xc.key)
        if decision is not None:  # the released final decision decides the status (as _import_decisions would)
            candidate.status = STATUS_OF_DECISION[decision]
            candidate.status_reason = "imported XQ-MEval decision"
        new.append(candidate)
        by_key[xc.key] = candidate
        result.per_direction_type[(xc.direction, xc.error_type)] += 1
        for flag in flags:
            result.flagged[flag] += 1
        if progress and i % 500 == 0:
            progress(500)
    if errors:
        raise ImportRejected("candidates", errors)
    result.seconds["checks"] += time.perf_counter() - started
    started = time.perf_counter()
    reserved = bulk.reserve_ids(Candidate, len(new))
    if reserved is not None:  # PostgreSQL: the rows go in with their ids, nothing is read back
        for c, pk in zip(new, reserved):
            c.pk = pk
            c._state.adding = False
    bulk.insert_objects(Candidate, new, with_ids=reserved is not None)
    result.candidates_created = len(new)
    if reserved is None and any(c.pk is None for c in new):  # a backend without RETURNING gives no ids: read them back
        ids = {
            (seg, etype, pos): pk
            for pk, seg, etype, pos in Candidate.objects.filter(run=run).values_list("id", "segment_id", "error_type", "position")
        }
        for c in new:
            c.pk = c.id = ids[(c.segment_id, c.error_type, c.position)]
            c._state.adding = False
    result.seconds["write"] += time.perf_counter() - started
    return by_key


def _import_decisions(project, candidates, release, result) -> None:
    from annotation.models import ReviewDecision

    existing = {
        d.candidate_id: d
        for d in ReviewDecision.objects.filter(candidate__run__project=project, source=ReviewDecision.Source.IMPORTED)
    }
    errors, new, status_updates = [], [], []
    for key, decision in release.decisions.items():
        candidate = candidates[key]
        old = existing.get(candidate.pk)
        if old is not None:
            if old.decision != decision:
                errors.append(f"decision for {'/'.join(map(str, key))} already imported as {old.decision!r}, file says {decision!r}")
            else:
                result.decisions_unchanged += 1
            continue
        new.append(
            ReviewDecision(
                candidate=candidate,
                reviewer=None,
                decision=decision,
                source=ReviewDecision.Source.IMPORTED,
                is_final=True,
                comment="XQ-MEval released screening decision",
            )
        )
        status = STATUS_OF_DECISION[decision]
        if candidate.status != status:
            candidate.status = status
            candidate.status_reason = "imported XQ-MEval decision"
            status_updates.append(candidate)
    if errors:
        raise ImportRejected("decisions", errors)
    started = time.perf_counter()
    bulk.insert_objects(ReviewDecision, new)
    if status_updates:  # candidates imported earlier without a decision (new ones got theirs at creation)
        Candidate.objects.bulk_update(status_updates, ["status", "status_reason"], batch_size=1000)
    result.seconds["write"] += time.perf_counter() - started
    result.decisions_created = len(new)
    for status, n in Candidate.objects.filter(run__project=project).values_list("status").annotate(n=Count("id")).order_by():
        result.status_counts[status] += n
