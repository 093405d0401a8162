"""A candidate whose diff would take too long fails its item with the reason instead of spinning (#36.5)."""

from __future__ import annotations

import time

import pytest

from core.corpus.domain import CorpusRow
from core.corpus.services import corpus_rows_import
from injection import services
from injection.backends import GenerationResult
from injection.models import Candidate, InjectionItem

pytestmark = pytest.mark.django_db


def test_an_answer_differing_all_over_a_long_reference_fails_its_item_with_the_reason(project):
    reference = " ".join(f"Wort{i}" for i in range(20_000))
    corpus_rows_import(
        project=project,
        direction_code="en-de",
        rows=[CorpusRow("long", "A long text.", reference, "inline")],
        source_name="inline",
    )
    run = services.run_plan(
        spec=services.RunSpec(
            project=project,
            kind="mqm",
            backend="rule",
            directions=["en-de"],
            error_types=["Addition"],
            positions=["head"],
        )
    )
    item = run.items.select_related("segment__direction__target").get()
    request = services._request(item, services._sampling(run))
    answer = "Neu " + reference + " Ende"  # two edits 20,000 words apart: difflib would compare 4e8 pairs
    started = time.perf_counter()
    services.result_record(
        run=run, item_id=item.pk, result=GenerationResult(custom_id=str(item.pk), text=answer), request=request
    )
    assert time.perf_counter() - started < 5.0
    item.refresh_from_db()
    assert item.status == InjectionItem.Status.FAILED
    assert item.error.startswith("not checked: the texts differ over 20000 and 20002 units")
    assert not Candidate.objects.exists()
