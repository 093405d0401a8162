"""Ratings through the rating services, on a real DB: system outputs imported to rate, the Likert rating
with its idempotency key, and rating items made from candidates."""

import pytest

from annotation.models import LikertRating, RatingItem
from annotation.rating import services
from injection.models import Candidate
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def de_candidates(project, languages):
    return make_candidates(project, languages, "en-de")


def test_rating_flow(project, languages, annotator_de, annotator_zh):
    from core.services import ImportRejected

    rows = [{"id": "1", "source": "Hello.", "reference": "Hallo.", "text": "Hallo!", "system": "sysA"}]
    assert (
        services.system_outputs_import(
            project=project, direction_code="en-de", rows=rows, source_name="out.jsonl"
        ).created
        == 1
    )
    assert (
        services.system_outputs_import(
            project=project, direction_code="en-de", rows=rows, source_name="out.jsonl"
        ).unchanged
        == 1
    )
    with pytest.raises(ImportRejected) as exc:
        services.system_outputs_import(
            project=project,
            direction_code="en-de",
            rows=[{"id": "2", "source": "", "text": "x"}],
            source_name="bad.jsonl",
        )
    assert "bad.jsonl:1" in str(exc.value) and "source" in str(exc.value)
    item = services.rating_item_take_next(user=annotator_de, project=project)
    assert item.system == "sysA"
    assert services.rating_item_take_next(user=annotator_zh, project=project) is None
    with pytest.raises(services.Invalid) as exc:
        services.rating_submit(user=annotator_de, item_id=item.pk, scores={"informativeness": 4}, idempotency_key="r1")
    assert "clarity" in exc.value.message
    scores = {"informativeness": 4, "clarity": 5, "plausibility": 5, "faithfulness": 3}
    r, created = services.rating_submit(user=annotator_de, item_id=item.pk, scores=scores, idempotency_key="r1")
    r2, created2 = services.rating_submit(user=annotator_de, item_id=item.pk, scores=scores, idempotency_key="r1")
    assert created and not created2 and r.pk == r2.pk
    assert services.rating_item_take_next(user=annotator_de, project=project) is None
    with pytest.raises(services.NotFound):
        services.rating_submit(user=annotator_zh, item_id=item.pk, scores=scores, idempotency_key="r9")
    assert LikertRating.objects.count() == 1


def test_candidates_become_ratable(project, de_candidates):
    assert services.rating_items_make_for_candidates(project=project, candidates=Candidate.objects.all()) == 7
    assert services.rating_items_make_for_candidates(project=project, candidates=Candidate.objects.all()) == 0
    assert RatingItem.objects.filter(kind="candidate").count() == 7


def test_items_are_made_chunk_by_chunk_with_the_candidates_texts(project, de_candidates):
    first = Candidate.objects.order_by("pk")[:3]
    assert (
        services.rating_items_make(
            project=project, objects=Candidate.objects.filter(pk__in=[c.pk for c in first]), kind="candidate", chunk=2
        )
        == 3
    )
    steps: list[int] = []
    assert (
        services.rating_items_make(
            project=project, objects=Candidate.objects.all(), kind="candidate", progress=steps.append, chunk=2
        )
        == 4
    )  # 3 kept
    assert steps == [2, 2, 2, 1]
    items = {item.candidate_id: item for item in RatingItem.objects.filter(kind="candidate")}
    assert sorted(items) == sorted(c.pk for c in de_candidates)
    for candidate in Candidate.objects.select_related("segment"):
        item = items[candidate.pk]
        assert (item.project_id, item.direction_id, item.external_id) == (
            project.pk,
            candidate.segment.direction_id,
            str(candidate.pk),
        )
        assert (item.source, item.reference, item.text) == (
            candidate.segment.source,
            candidate.segment.reference,
            candidate.text,
        )


def test_a_failure_part_way_leaves_no_items(project, de_candidates):
    def stop_after_the_first_chunk(n):
        raise KeyboardInterrupt  # Ctrl-C under the command's progress bar

    with pytest.raises(KeyboardInterrupt):
        services.rating_items_make(
            project=project,
            objects=Candidate.objects.all(),
            kind="candidate",
            progress=stop_after_the_first_chunk,
            chunk=2,
        )
    assert not RatingItem.objects.exists()
    with pytest.raises(ValueError, match="system_output"):
        services.rating_items_make(project=project, objects=Candidate.objects.all(), kind="system_output")
