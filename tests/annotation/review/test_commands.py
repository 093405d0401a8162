"""The lock housekeeping task."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import ReviewLock
from annotation.review.tasks import release_expired_locks
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


def test_release_expired_locks(project, languages, annotator_de):
    cands = make_candidates(project, languages, "en-de", count=2)
    now = timezone.now()
    ReviewLock.objects.create(candidate=cands[0], reviewer=annotator_de, expires_at=now - timedelta(seconds=5))
    ReviewLock.objects.create(candidate=cands[1], reviewer=annotator_de, expires_at=now + timedelta(minutes=5))
    assert release_expired_locks.delay().get() == 1
    assert release_expired_locks.delay().get() == 0
    assert ReviewLock.objects.count() == 1
