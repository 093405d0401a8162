"""The benchmark card's pool per direction (``annotation.review.selectors.pool_counts``): on PostgreSQL
the review counters' accepted count minus the accepted gold items and perturbations, equal to a grouped count of the pool
(accepted, MQM, not gold) after a random mix of kinds, gold flags and status changes; elsewhere that count."""

from __future__ import annotations

import random
import re

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from annotation.review import selectors
from core.models import GoldSegment
from injection.models import Candidate, InjectionRun

pytestmark = pytest.mark.django_db


def grouped_pool(project) -> dict[str, int]:
    """The pool as the SPEC's glossary words it (accepted MQM candidates, never gold items), grouped here,
    and the pool selector grouped the same way: both must agree."""
    spec = Candidate.objects.filter(segment__project=project, status="accepted", kind="mqm", is_gold=False)
    expected = dict(spec.values_list("segment__direction__code").annotate(n=Count("id")).order_by())
    assert (
        dict(
            selectors.pool_candidates(project)
            .values_list("segment__direction__code")
            .annotate(n=Count("id"))
            .order_by()
        )
        == expected
    )
    return expected


def test_pool_counts_equal_the_pool_after_every_change(project, languages):
    rng = random.Random(7)
    run = InjectionRun.objects.create(project=project, name="mix", backend="rule")
    candidates = []
    for code in ("en-de", "en-zh", "en-ja"):
        for i in range(30):
            segment = GoldSegment.objects.create(
                project=project, direction=languages[code], external_id=f"{code}-{i}", source="s", reference="r"
            )
            for position in ("head", "end"):
                candidates.append(
                    Candidate(
                        run=run,
                        segment=segment,
                        kind=rng.choice(["mqm", "mqm", "perturbation"]),
                        error_type="Omission",
                        position=position,
                        text="t",
                        span_start=0,
                        span_end=1,
                        is_gold=rng.random() < 0.15,
                        status=rng.choice(["pending", "accepted", "accepted", "rejected"]),
                    )
                )
    Candidate.objects.bulk_create(candidates)
    assert selectors.pool_counts(project) == grouped_pool(project) and grouped_pool(project)
    ids = list(Candidate.objects.filter(run=run).values_list("id", flat=True))
    for step in range(6):  # status changes, a perturbation turned MQM, gold flags, deletes: as any writer
        chosen = rng.sample(ids, 25)
        if step % 3 == 0:
            Candidate.objects.filter(id__in=chosen).update(status=rng.choice(["accepted", "rejected", "excluded"]))
        elif step % 3 == 1:
            Candidate.objects.filter(id__in=chosen[:10]).update(
                is_gold=rng.random() < 0.5, kind=rng.choice(["mqm", "perturbation"])
            )
        else:
            Candidate.objects.filter(id__in=chosen[:5]).delete()
            ids = [i for i in ids if i not in set(chosen[:5])]
        assert selectors.pool_counts(project) == grouped_pool(project), step


def test_the_card_reads_no_count_of_the_pool(client, admin_user, project, languages):
    if connection.vendor != "postgresql":
        pytest.skip("the review counters are kept by PostgreSQL triggers")
    run = InjectionRun.objects.create(project=project, name="mix", backend="rule")
    segment = GoldSegment.objects.create(
        project=project, direction=languages["en-de"], external_id="1", source="s", reference="r"
    )
    Candidate.objects.create(
        run=run,
        segment=segment,
        error_type="Omission",
        position="head",
        text="t",
        span_start=0,
        span_end=1,
        status="accepted",
    )
    with CaptureQueriesContext(connection) as queries:
        counts = selectors.pool_counts(project)
    assert counts == {"en-de": 1}
    touching = [q["sql"] for q in queries.captured_queries if re.search(r'FROM "injection_candidate"', q["sql"])]
    # one query reads candidates: the accepted gold items and perturbations (their partial indexes)
    assert len(touching) == 1 and re.search(r'"is_gold" OR NOT \("injection_candidate"\."kind" = ', touching[0]), (
        touching
    )
