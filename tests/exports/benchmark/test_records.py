"""Records with one owner: ``injection.Candidate`` holds what injection and review decide, and nothing else
writes it; what a benchmark build does with a candidate is the build's own table (``CandidatePlacement``).

Shown two ways: a scan of the source (no write to ``Candidate`` outside ``injection/`` and
``annotation/review/``), and builds that leave every candidate row as it was, column for column. The data
migration that moved the old builds' writes out of the candidates is checked against the old form, written
out here as the old build wrote it."""

from __future__ import annotations

import ast
import importlib

import pytest
from django.apps import apps

from core.models import GoldSegment
from exports.benchmark import selectors, services
from exports.models import CandidatePlacement, MergedSegment
from injection.models import Candidate, InjectionRun
from tests.support.record_writes import platform_sources

# The stages that own the candidate row; migrations convert rows once, tests and perf scripts stand in for
# reviewers and importers.
OWNERS = ("injection", "annotation/review")
WRITES = {
    "update",
    "bulk_update",
    "bulk_create",
    "create",
    "get_or_create",
    "update_or_create",
    "delete",
    "_raw_delete",
    "save",
}
SQL_WRITES = ("update injection_candidate", "insert into injection_candidate", "delete from injection_candidate")


def _root(node: ast.AST) -> ast.AST:
    """The start of an attribute/call chain: ``Candidate`` in ``Candidate.objects.filter(...).update``."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node


def candidate_writes(source: str) -> list[str]:
    """Where ``source`` writes candidates: a write method called on a chain that starts at ``Candidate``
    (its manager, a queryset of it, the model itself), ``Candidate``'s table named to bulk helpers
    (``Candidate._meta.db_table``), or SQL that changes ``injection_candidate``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            root = _root(node.func.value)
            if isinstance(root, ast.Name) and root.id == "Candidate":
                found.append(f"line {node.lineno}: Candidate….{node.func.attr}()")
        elif isinstance(node, ast.Attribute) and node.attr == "db_table":
            root = _root(node)
            if isinstance(root, ast.Name) and root.id == "Candidate":
                found.append(f"line {node.lineno}: Candidate._meta.db_table")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = " ".join(node.value.lower().replace('"', "").split())
            if any(statement in text for statement in SQL_WRITES):
                found.append(f"line {node.lineno}: SQL writing injection_candidate")
    return found


def test_the_scan_finds_each_kind_of_write_and_passes_reads():
    writes = """
Candidate.objects.filter(pk=1).update(status="excluded")
Candidate.objects.bulk_update(rows, ["status"], batch_size=10)
Candidate.objects.create(run=run)
Candidate(run=run).save()
copy_rows(Candidate._meta.db_table, cols, rows)
cursor.execute("UPDATE  injection_candidate SET status = 'x'")
cursor.execute('INSERT INTO "injection_candidate" (id) VALUES (1)')
"""
    assert len(candidate_writes(writes)) == 7
    reads = """
Candidate.objects.filter(pk=1).values_list("status")
Candidate.Status.ACCEPTED
PseudoTranslation.objects.filter(candidates__in=ids).delete()
CandidatePlacement.objects.bulk_create(rows)
cursor.execute("SELECT id FROM injection_candidate")
"""
    assert candidate_writes(reads) == []


def test_no_code_outside_injection_and_review_writes_a_candidate():
    scanned, offenders = 0, {}
    for rel, source in platform_sources():
        if rel.startswith(tuple(f"{owner}/" for owner in OWNERS)):
            continue
        scanned += 1
        if found := candidate_writes(source):
            offenders[rel] = found
    assert scanned > 50 and "exports/benchmark/services.py" in {rel for rel, _ in platform_sources()}
    assert offenders == {}, f"only injection and review write Candidate: {offenders}"


def test_the_owners_do_write_candidates_so_the_scan_looks_where_writes_are():
    owned = {rel for rel, source in platform_sources() if rel.startswith(OWNERS) and candidate_writes(source)}
    assert "annotation/review/services.py" in owned and any(rel.startswith("injection/") for rel in owned)


def _candidate_rows() -> list[dict]:
    return list(Candidate.objects.order_by("id").values())


@pytest.mark.django_db
def test_builds_leave_every_candidate_row_as_it_was(seeded):
    before = _candidate_rows()
    services.build_run(project=seeded)
    # the build did decide things: two exclusions and a transplant, recorded in its own table
    recorded = dict(CandidatePlacement.objects.values_list("candidate_id", "outcome"))
    assert sorted(recorded.values()) == ["excluded", "excluded", "transplanted"]
    assert _candidate_rows() == before
    # review moves a candidate out of the pool and another in; the next build (and a forced one) follow
    # the review and still write no candidate
    excluded = [cid for cid, outcome in recorded.items() if outcome == "excluded"]
    Candidate.objects.filter(pk=excluded[0]).update(status="rejected", status_reason="2/2 rejected")
    before = _candidate_rows()
    services.build_run(project=seeded)
    services.build_run(project=seeded, force=True)
    assert _candidate_rows() == before
    assert not CandidatePlacement.objects.filter(candidate_id=excluded[0]).exists()
    # an excluded candidate whose text is repaired is placed again: its record goes, the candidate stays
    cand = Candidate.objects.select_related("segment__direction__target").get(pk=excluded[1])
    Candidate.objects.filter(pk=cand.pk).update(text=cand.text.replace("<b>bold</b> ", ""))
    before = _candidate_rows()
    result = services.build_run(project=seeded)
    assert result.restored == 1 and not CandidatePlacement.objects.filter(candidate_id=cand.pk).exists()
    assert _candidate_rows() == before


@pytest.mark.django_db
def test_the_admin_lists_the_builds_outcome_per_candidate(client, admin_user, seeded):
    services.build_run(project=seeded)
    client.force_login(admin_user)
    html = client.get("/admin/exports/candidateplacement/?outcome=transplanted").content.decode()
    moved = CandidatePlacement.objects.select_related("candidate").get(outcome="transplanted")
    assert f"[{moved.span_start}, {moved.span_end})" in html and moved.drift.replace("'", "&#x27;") in html
    assert "cannot be located" not in html
    html = client.get("/admin/exports/candidateplacement/?outcome=excluded").content.decode()
    assert html.count("cannot be located") == 2
    assert client.get(f"/admin/exports/candidateplacement/{moved.pk}/change/").status_code == 200  # read-only view


# ---- the data migration from the rows old builds wrote ------------------------------------------------

MIGRATION = importlib.import_module("exports.migrations.0012_candidate_placement_from_candidates")
OLD_TRANSPLANT_CHECK = {
    "passed": False,
    "detail": "edit transplanted onto the reference at span [8, 9); drift outside the span: ' .' → ' !'",
    "span": [8, 9],
    "drift": "' .' → ' !'",
}


def _old_build_state(project, direction) -> dict[str, Candidate]:
    """Candidates as builds before ``CandidatePlacement`` left them, written out literally."""
    run = InjectionRun.objects.create(project=project, name="old", backend="import")
    segment = GoldSegment.objects.create(
        project=project, direction=direction, external_id="9", source="s", reference="r"
    )
    common = {"run": run, "segment": segment, "text": "t", "span_start": 0, "span_end": 1}
    length = {"length_ratio": {"passed": False, "detail": "too long"}}
    return {
        "excluded_with_reason": Candidate.objects.create(
            **common,
            error_type="Omission",
            position="head",
            status="excluded",
            status_reason="merge: cannot be placed: the candidate's text outside span [0, 1) differs"
            " (was accepted: imported XQ-MEval decision)",
        ),
        "excluded_bare": Candidate.objects.create(
            **common,
            error_type="Addition",
            position="head",
            status="excluded",
            status_reason="merge: cannot be placed: the candidate's text outside span [2, 3) differs (was accepted)",
            flags=["length_ratio"],
            checks=length,
        ),
        "transplanted": Candidate.objects.create(
            **common,
            error_type="Mistranslation",
            position="end",
            status="accepted",
            status_reason="2/2 accepted (unanimous)",
            flags=["length_ratio", "transplanted"],
            checks={**length, "transplanted": OLD_TRANSPLANT_CHECK},
        ),
        "plain": Candidate.objects.create(
            **common,
            error_type="Untranslated",
            position="end",
            status="rejected",
            status_reason="0/2 accepted",
            flags=["length_ratio"],
            checks=length,
        ),
        "excluded_by_hand": Candidate.objects.create(
            **common,
            error_type="Grammar",
            position="end",
            status="excluded",
            status_reason="withdrawn by the project admin",
        ),
    }


def _record(c: Candidate) -> tuple:
    c.refresh_from_db()
    return (c.status, c.status_reason, c.flags, c.checks)


@pytest.mark.django_db
def test_the_migration_moves_the_old_builds_writes_into_placements_and_restores_the_review_outcome(project, languages):
    old = _old_build_state(project, languages["en-de"])
    as_written = {name: _record(c) for name, c in old.items()}
    MIGRATION.candidates_to_placements(apps, None)
    length = {"length_ratio": {"passed": False, "detail": "too long"}}
    assert _record(old["excluded_with_reason"]) == ("accepted", "imported XQ-MEval decision", [], {})
    assert _record(old["excluded_bare"]) == ("accepted", "", ["length_ratio"], length)
    assert _record(old["transplanted"]) == ("accepted", "2/2 accepted (unanimous)", ["length_ratio"], length)
    assert _record(old["plain"]) == as_written["plain"]
    assert _record(old["excluded_by_hand"]) == as_written["excluded_by_hand"]  # not a build's exclusion: left alone
    rows = {r.candidate_id: r for r in CandidatePlacement.objects.all()}
    assert set(rows) == {old["excluded_with_reason"].pk, old["excluded_bare"].pk, old["transplanted"].pk}
    first = rows[old["excluded_with_reason"].pk]
    assert (first.outcome, first.reason) == ("excluded", "the candidate's text outside span [0, 1) differs")
    moved = rows[old["transplanted"].pk]
    assert (moved.outcome, moved.drift, moved.span_start, moved.span_end, moved.reason) == (
        "transplanted",
        "' .' → ' !'",
        8,
        9,
        "",
    )
    # the pages read the moved rows as they read the old ones
    assert [r["reason"] for r in selectors.excluded_candidates(project)] == [
        as_written["excluded_bare"][1],
        as_written["excluded_with_reason"][1],
    ]
    # backwards gives the old form again, byte for byte, and forwards once more the same placements
    MIGRATION.placements_to_candidates(apps, None)
    assert {name: _record(c) for name, c in old.items()} == as_written and not CandidatePlacement.objects.exists()
    MIGRATION.candidates_to_placements(apps, None)
    assert {
        r.candidate_id: (r.outcome, r.reason, r.drift, r.span_start, r.span_end)
        for r in CandidatePlacement.objects.all()
    } == {cid: (r.outcome, r.reason, r.drift, r.span_start, r.span_end) for cid, r in rows.items()}
    assert MergedSegment.objects.count() == 0  # the conversion writes no build state of its own
