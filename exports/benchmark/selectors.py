"""Read-only queries of the benchmark, shared by views, admin, API, commands and the release writer."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from annotation.agreement.selectors import project_report
from annotation.review import selectors as review_selectors
from core import access
from core import selectors as core_selectors
from core.change_log import ChangeLog
from core.models import GoldSegment, Project
from exports.benchmark import changes_sql
from exports.benchmark import domain as merging
from exports.models import BenchmarkBuild, CandidatePlacement, PseudoTranslation, Release


def level_counts(project: Project) -> dict:
    """Per direction and level: pseudo translations in all, and min/max per gold pair (Tables 4 and 8)."""
    per_pair: dict[str, dict[int, dict[int, int]]] = defaultdict(dict)
    # streamed (server-side cursor on PostgreSQL): the grouped rows are one per gold pair and level, and
    # only their counts are kept
    segments = GoldSegment.objects.filter(project=project).order_by().values_list("direction__code", "id")
    for code, seg_id in segments.iterator(chunk_size=5000):
        per_pair[code][seg_id] = {}
    rows = (
        PseudoTranslation.objects.filter(segment__project=project)
        .values_list("segment__direction__code", "segment_id", "level")
        .annotate(n=Count("id"))
        .order_by()
    )
    for code, seg_id, level, n in rows.iterator(chunk_size=5000):
        per_pair[code].setdefault(seg_id, {})[level] = n
    return merging.counts_table(dict(per_pair), project.max_errors)


CHANGES = ChangeLog(changes_sql.LOG)


def _kept(project: Project, name: str, compute):
    """``compute()`` kept in the cache under the benchmark change log's token for ``project``, so it is
    recomputed only after a change to the rows it reads (``ChangeLog.kept``)."""
    return CHANGES.kept(f"benchmark:{name}:v2", compute, project_id=project.pk)


def segment_counts(project: Project) -> dict[int, int]:
    """Gold segments per direction id of ``project`` (the corpus figures of the project page and the
    projects list). The benchmark change log has a row for every insert and delete of a gold segment and
    every move to another project or direction, so while its token stands the counts kept under it are
    those of the rows (a grouped count of 200,000 segments is ≈ 0.1 s a view); elsewhere counted now."""
    return _kept(
        project,
        "segment-counts",
        lambda: dict(
            GoldSegment.objects.filter(project=project).values_list("direction_id").annotate(n=Count("id")).order_by()
        ),
    )


def current_level_counts(project: Project) -> dict:
    """``level_counts`` of the rows stored now, from the cache when the benchmark change log says nothing
    changed since they were counted (PostgreSQL; a few rows read instead of every pseudo translation),
    else counted now."""
    return _kept(project, "level-counts", lambda: level_counts(project))


LISTED_ON_PAGE = 100  # rows of the excluded and transplanted lists a page shows; every row is in their CSV


def _placements(project: Project, outcome: str, directions: set[str] | None):
    """The latest build's placements of one outcome in the project (of those directions when given), of
    candidates still in the pool: one that review took out since the build is no longer the benchmark's."""
    placements = CandidatePlacement.objects.filter(outcome=outcome, candidate__segment__project=project).filter(
        review_selectors.in_pool("candidate__")
    )
    if directions is not None:
        placements = placements.filter(candidate__segment__direction__code__in=sorted(directions))
    return placements


_CANDIDATE_FIELDS = (
    "candidate__segment__direction__code",
    "candidate__segment__external_id",
    "candidate__error_type",
    "candidate__position",
    "candidate__external_id",
)


def _candidate_row(d: str, seg: str, etype: str, pos: str, ext: str) -> dict:
    return {
        "direction": d,
        "segment_id": seg,
        "candidate": f"{etype}.{pos}",
        "error_type": etype,
        "position": pos,
        "external_id": ext,
    }


def _in_release_order(rows: list[dict]) -> list[dict]:
    rows.sort(key=lambda r: (r["direction"], natural_key(r["segment_id"]), r["candidate"], r["external_id"]))
    return rows


def excluded_count(project: Project, directions: set[str] | None = None) -> int:
    return _placements(project, CandidatePlacement.Outcome.EXCLUDED, directions).count()


def excluded_candidates(project: Project, directions: set[str] | None = None) -> list[dict]:
    """Pool candidates the latest build could not place (``CandidatePlacement``), with their reasons, in a
    stable order (direction, segment, type, position); ``directions``: of those only."""
    rows = _placements(project, CandidatePlacement.Outcome.EXCLUDED, directions).values_list(
        *_CANDIDATE_FIELDS, "candidate__span_start", "candidate__span_end", "reason", "candidate__status_reason"
    )
    return _in_release_order(
        [
            {
                **_candidate_row(*row[:5]),
                "span_start": s,
                "span_end": e,
                "reason": merging.exclusion_note(reason, review_reason),
            }
            for *row, s, e, reason, review_reason in rows
        ]
    )


def transplanted_candidates(project: Project, directions: set[str] | None = None) -> list[dict]:
    """Pool candidates the latest build placed by transplanting their edit onto the reference
    (``CandidatePlacement``): their text outside the span drifts from the reference. With the span the edit
    was placed at (reference units) and the drift, in the same order as the exclusions."""
    rows = _placements(project, CandidatePlacement.Outcome.TRANSPLANTED, directions).values_list(
        *_CANDIDATE_FIELDS, "span_start", "span_end", "drift"
    )
    return _in_release_order(
        [{**_candidate_row(*row[:5]), "span_start": s, "span_end": e, "drift": drift} for *row, s, e, drift in rows]
    )


def natural_key(value: str):
    """Numeric ids in numeric order, others after them in text order (FLORES+ line indices are numbers)."""
    return (0, int(value), "") if str(value).isdigit() else (1, 0, str(value))


def visible_projects(user):
    return core_selectors.visible_projects(user)


def latest_build(project: Project) -> BenchmarkBuild | None:
    return BenchmarkBuild.objects.filter(project=project).order_by("-created_at", "-id").first()


def releases_of(project: Project):
    return Release.objects.filter(project=project).order_by("-created_at", "-id")


def may_manage(user) -> bool:
    return access.is_admin(user)


def agreement_figures(project: Project) -> dict | None:
    """Accept/reject agreement per target language from the review decisions, for the dataset card
    (None when no candidate has two reviewers' decisions, e.g. imported final decisions only).

    Read one target language at a time: a language's figures come from its own decisions only, so they are
    those of the whole report, and a release holds one language's decisions, not the campaign's (≈ 70 MB
    at 73,000 decisions)."""
    languages = (
        GoldSegment.objects.filter(project=project)
        .order_by()
        .values_list("direction__target__code", flat=True)
        .distinct()
    )
    rows = [
        row
        for language in sorted(languages)
        for row in project_report(project, languages=[language], private=False).get("languages", [])
    ]
    figures = {}
    for row in rows:
        if not row.get("units_with_2_or_more"):
            continue
        parts = [f"{row['units_with_2_or_more']} doubly reviewed candidates"]
        for key, label in (
            ("percent_agreement", "percent agreement"),
            ("krippendorff_alpha", "Krippendorff's α (nominal)"),
            ("fleiss_kappa", "Fleiss' κ"),
        ):
            value = row.get(key)
            if value is not None:
                parts.append(f"{label} {value:.3f}")
        figures[row["language"]] = ", ".join(parts)
    return figures or None


def visible_directions(user, project: Project) -> set[str] | None:
    """Direction codes of ``project`` this user may see; None means all (admins)."""
    if access.is_admin(user):
        return None
    languages = set(access.allowed_languages(user, project).values_list("code", flat=True))
    return {d.code for d in project.directions.select_related("target") if d.target.code in languages}


def item_directions(user, project: Project) -> set[str] | None:
    """Direction codes of ``project`` whose candidates this user may list (None: all, for admins): those into
    ``access.item_languages``, so none for a viewer, who reads the counts only (#48.5)."""
    if access.is_admin(user):
        return None
    languages = set(access.item_languages(user, project).values_list("code", flat=True))
    return {d.code for d in project.directions.select_related("target") if d.target.code in languages}


def release_directions(release: Release, directions: set[str] | None = None) -> list[dict]:
    """A release's staging progress per direction (those in ``directions`` when given)."""
    return [
        {
            "direction": code,
            "status": entry.get("status", "pending"),
            "triplets": entry.get("triplets", 0),
            "error": entry.get("error", ""),
        }
        for code, entry in sorted((release.directions or {}).items())
        if directions is None or code in directions
    ]


def release_summary(release: Release, directions: set[str] | None = None) -> dict:
    return {
        "version": release.version,
        "status": "interrupted" if release.interrupted else release.status,  # its process died: release again
        "content_hash": release.content_hash,
        "stage": release.stage,
        "progress": release.progress,
        "error": release.error,
        "triplets": (release.manifest or {}).get("triplets"),
        "hub_repo": release.hub_repo,
        "hub_revision": release.hub_revision,
        "push_status": release.push_status,
        "created_at": release.created_at.isoformat() if release.created_at else None,
        "directions": release_directions(release, directions),
    }


def build_directions(build: BenchmarkBuild | None, directions: set[str] | None = None) -> list[dict]:
    """A build's progress per direction (those in ``directions`` when given): status, gold pairs, rebuilt,
    pseudo translations written, excluded, transplanted, failure reason."""
    if build is None:
        return []
    keys = ("gold_pairs", "rebuilt", "pseudo_created", "excluded", "transplanted")
    return [
        {
            "direction": code,
            "status": entry.get("status", "pending"),
            **{k: entry.get(k, 0) for k in keys},
            "error": entry.get("error", ""),
        }
        for code, entry in sorted((build.directions or {}).items())
        if directions is None or code in directions
    ]


def build_summary(build: BenchmarkBuild | None, directions: set[str] | None = None) -> dict | None:
    if build is None:
        return None
    return {
        "id": build.pk,
        "number": build.number,
        "status": "interrupted" if build.interrupted else build.status,  # its process died: Build resumes it
        "percent": build.percent,
        "done_segments": build.done_segments,
        "total_segments": build.total_segments,
        "rebuilt_segments": build.rebuilt_segments,
        "pseudo_created": build.pseudo_created,
        "excluded": build.excluded,
        "transplanted": build.transplanted,
        "error": build.error,
        "directions": build_directions(build, directions),
    }


def visible_counts(project: Project, directions: set[str] | None) -> dict:
    """``current_level_counts`` of the directions this user may see (None: all)."""
    counts = current_level_counts(project)
    return counts if directions is None else {d: row for d, row in counts.items() if d in directions}


def benchmark_summary(project: Project, directions: set[str] | None) -> dict:
    """What the pages and the API show of the benchmark but its lists of candidates: counts (visible
    directions), latest build, releases. Reads no candidate."""
    counts = visible_counts(project, directions)
    levels = sorted({int(k) for row in counts.values() for k in row["levels"]})
    table = [
        {
            "direction": d,
            "gold_pairs": row["gold_pairs"],
            "cells": [row["levels"][str(k)] for k in levels],
            "total": row["total"],
            "min_per_pair": row["min_per_pair"],
            "max_per_pair": row["max_per_pair"],
        }
        for d, row in sorted(counts.items())
    ]
    build = latest_build(project)
    releases = list(releases_of(project))
    for r in releases:
        r.direction_rows = release_directions(r, directions)  # staging progress, visible directions only
    return {
        "counts": counts,
        "levels": levels,
        "table": table,
        "build": build,
        "build_directions": build_directions(build, directions),
        "releases": releases,
    }


def benchmark_page(project: Project, directions: set[str] | None, listed: set[str] | None = None) -> dict:
    """The benchmark page: the summary, and the first ``LISTED_ON_PAGE`` excluded and transplanted
    candidates of the ``listed`` directions (None: all visible ones) with the totals of the visible
    directions (a FLORES-sized project has thousands; the page links to their CSV)."""
    page = benchmark_summary(project, directions)
    for name, rows in (
        ("excluded", excluded_candidates(project, directions)),
        ("transplanted", transplanted_candidates(project, directions)),
    ):
        page[name] = [row for row in rows if listed is None or row["direction"] in listed][:LISTED_ON_PAGE]
        page[f"{name}_total"] = len(rows)
    return page


def progress_status(project: Project, directions: set[str] | None = None) -> dict:
    """Progress of the latest build (per direction: those in ``directions`` when given) and of every release."""
    return {
        "build": build_summary(latest_build(project), directions),
        "releases": [release_summary(r, directions) for r in releases_of(project)],
    }


def build_warnings(project: Project) -> list[str]:
    """Each active direction a build would leave short, one line each: no candidates, candidates still
    undecided, or none accepted (its pseudo translations would all be level 0). Empty: nothing to confirm."""
    from annotation.review.selectors import candidate_statuses

    statuses = candidate_statuses(project)
    lines = []
    for direction in core_selectors.active_directions(project):
        counts = statuses.get(direction.pk, {})
        total = sum(counts.values())
        if not total:
            lines.append(f"{direction.code}: no candidates")
            continue
        if counts.get("pending"):
            lines.append(f"{direction.code}: {counts['pending']} of {total} candidates undecided")
        if not counts.get("accepted"):
            lines.append(f"{direction.code}: no accepted candidates (its pseudo translations would be level 0 only)")
    return lines
