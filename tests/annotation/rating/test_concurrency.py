"""Concurrent raters on PostgreSQL: no rating item gets more than its raters."""

import uuid
from collections import Counter

import pytest
from django.db import connection

from annotation.rating import services as rating_services
from core.domain.errors import Conflict
from core.services import user_create
from tests.conftest import need
from tests.support.race import race

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.postgres
def test_concurrent_raters_never_over_fill_a_rating_item(project, languages):
    """16 raters race for 10 items with 2 raters each: every item ends with exactly 2 ratings; a rater who
    loses the race for an item's last slot gets a Conflict and takes the next item."""
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    from annotation.models import LikertRating, RatingItem

    for i in range(10):
        RatingItem.objects.create(
            project=project, direction=languages["en-de"], kind="system_output", source=f"s{i}", text=f"t{i}"
        )
    users = [user_create(username=f"rater{i}", password="pw-123-xyz", languages=["de"]) for i in range(16)]
    scores = {"informativeness": 4, "clarity": 4, "plausibility": 5, "faithfulness": 3}

    def work(user):
        while (item := rating_services.rating_item_take_next(user=user, project=project)) is not None:
            try:
                rating_services.rating_submit(
                    user=user, item_id=item.pk, scores=scores, idempotency_key=uuid.uuid4().hex
                )
            except Conflict:
                pass  # lost the race for the item's last slot: take the next one

    race(users, work)
    per_item = Counter(LikertRating.objects.values_list("item_id", flat=True))
    assert len(per_item) == 10 and set(per_item.values()) == {2}
