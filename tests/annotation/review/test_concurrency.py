"""Concurrent reviewers on PostgreSQL: no candidate gets more than N reviews, none is lost."""

import uuid
from collections import Counter

import pytest
from django.db import connection

from annotation.models import ReviewDecision
from annotation.review import services
from core.services import user_create
from injection.models import Candidate
from tests.annotation.review.factories import make_candidate
from tests.conftest import need
from tests.support.race import race

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.postgres
def test_32_concurrent_reviewers_never_over_assign(project, languages):
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    for i in range(40):
        make_candidate(project, languages["en-de"], f"s{i}", f"a b c d {i}", f"a X c d {i}", external_id=str(i))
    users = [user_create(username=f"r{i}", password="pw-123-xyz", languages=["de"]) for i in range(32)]
    counts: Counter = Counter()

    def work(user):
        while (got := services.candidate_take_next(user=user, project=project)) is not None:
            _, created = services.decision_submit(
                user=user, candidate_id=got.candidate.pk, decision="accept", idempotency_key=uuid.uuid4().hex
            )
            counts[user.pk] += created

    race(users, work)
    per_candidate = Counter(ReviewDecision.objects.values_list("candidate_id", flat=True))
    assert len(per_candidate) == 40 and set(per_candidate.values()) == {2}
    assert sum(counts.values()) == 80 == ReviewDecision.objects.count()
    assert set(Candidate.objects.values_list("status", flat=True)) == {"accepted"}


@pytest.mark.postgres
def test_same_submission_twice_concurrently_is_stored_once(project, languages, annotator_de):
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    cand = make_candidate(project, languages["en-de"], "s", "a b c", "a X c")
    results = []
    race(
        [annotator_de] * 8,
        lambda user: results.append(
            services.decision_submit(user=user, candidate_id=cand.pk, decision="accept", idempotency_key="same-key")
        ),
    )
    assert len(results) == 8 and sum(created for _, created in results) == 1
    assert ReviewDecision.objects.count() == 1


@pytest.mark.slow
def test_sqlite_file_database_never_over_assigns(tmp_path):
    """SQLite has no row locks: the services take its write lock first. 8 threads, 30 candidates, N = 2."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("sqlite_race.py")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("DATABASE_URL", "TEST_DATABASE_NAME")}
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "race.sqlite3")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert result == {"errors": [], "candidates": 30, "counts": {2: 30}}
