"""Review progress counters: reading, folding and recounting ``ReviewTally`` (see tally_sql for the triggers
that keep it exact). Only PostgreSQL has the triggers; elsewhere (SQLite in development) ``available()`` is
False and the selectors count the rows exactly instead."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import connection, transaction

from annotation.models import ReviewTally, ReviewTallyChange
from annotation.review import tally_sql
from core.models import Direction, Project

# Readers fold the change log into the tally rows once it has this many rows for the project; below, they
# sum the changes in (a few hundred small rows cost less than the fold's write).
FOLD_AFTER = 1000
_FOLD_LOCK = 0x7851_7461_6C6C  # pg_try_advisory_xact_lock key: one fold at a time


def available() -> bool:
    return connection.vendor == "postgresql"


@dataclass(frozen=True)
class Unit:
    """``candidates`` candidates of ``language`` stand at (status, reviews) in round ``round_number``."""

    language: str
    round_number: int
    status: str
    reviews: int
    candidates: int


def fold() -> int:
    """Move the change log into the tally rows; 0 (nothing done) when another fold is running."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_FOLD_LOCK])
        if not cursor.fetchone()[0]:
            return 0
        cursor.execute(tally_sql.FOLD)
        return cursor.rowcount


def _rows(project: Project) -> list[tuple]:
    """(direction id, round number, status, reviews, candidates): tally rows plus changes not yet folded,
    read in one statement."""
    if ReviewTallyChange.objects.filter(project_id=project.pk)[FOLD_AFTER - 1 : FOLD_AFTER].exists():
        fold()
    with connection.cursor() as cursor:
        cursor.execute(tally_sql.READ, {"project": project.pk})
        return cursor.fetchall()


def units(project: Project) -> list[Unit]:
    """The project's tally, one unit per (language, round, status, reviews)."""
    rows = _rows(project)
    languages = dict(Direction.objects.filter(pk__in={r[0] for r in rows}).values_list("pk", "target__code"))
    return [Unit(languages[d], rnd, status, reviews, n) for d, rnd, status, reviews, n in rows]


def statuses_by_direction(project: Project) -> dict[int, dict[str, int]]:
    """Candidates of the project per direction id and status (round 1 counts every candidate once)."""
    out: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for direction_id, rnd, status, _reviews, n in _rows(project):
        if rnd == 1 and n:
            out[direction_id][status] += n
    return {d: dict(statuses) for d, statuses in out.items()}


def open_in_scope(units_: list[Unit], round_number: int, codes, required: int) -> int:
    """Candidates of these languages the round still covers with fewer than ``required`` reviews."""
    codes = set(codes)
    return sum(
        u.candidates
        for u in units_
        if u.round_number == round_number
        and u.language in codes
        and u.reviews < required
        and in_scope(u.status, round_number)
    )


def in_scope(status: str, round_number: int) -> bool:
    # Round 1 covers the pending candidates (a final decision always decides the status, so a pending
    # candidate has none); a later round its whole sample but the excluded ones (selectors.round_scope).
    return status == "pending" if round_number == 1 else status != "excluded"


def by_language(units_: list[Unit], round_number: int) -> dict[str, list[Unit]]:
    out: dict[str, list[Unit]] = defaultdict(list)
    for u in units_:
        if u.round_number == round_number:
            out[u.language].append(u)
    return out


def recount(project: Project) -> int:
    """Rebuild the project's tally from its candidates, decisions and samples (upgrades, repairs). Holds
    writers of those tables off while it counts, so no change slips between the count and the rows."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {tally_sql.CANDIDATE}, {tally_sql.DECISION}, {tally_sql.SAMPLE} IN SHARE MODE")
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_FOLD_LOCK])  # no fold moves changes meanwhile
        ReviewTallyChange.objects.filter(project_id=project.pk).delete()
        ReviewTally.objects.filter(project=project).delete()
        cursor.execute(tally_sql.RECOUNT, {"project": project.pk})
        return cursor.rowcount
