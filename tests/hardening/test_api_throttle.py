"""The API's rate limit (#48.5): DRF's throttle per signed-in user. The test run itself raises the rate
(tests/settings.py); here it is set low and the limit is met."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from core.services import user_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def low_rates(settings):
    settings.API_THROTTLE_RATES = {"user": "5/minute"}
    cache.clear()  # the counts of earlier tests
    yield
    cache.clear()


def test_a_user_past_the_rate_gets_429_with_retry_after_and_others_are_not_held(client, low_rates):
    anna = user_create(username="anna", password="pw-123456-x", languages=["de"])
    ben = user_create(username="ben", password="pw-123456-x", languages=["de"])
    url = reverse("review_api:decisions")
    client.force_login(anna)
    assert [client.get(url).status_code for _ in range(5)] == [200] * 5
    refused = client.get(url)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "throttled" in refused.json()["detail"].lower()
    client.force_login(ben)
    assert client.get(url).status_code == 200  # per user, not for everyone


def test_the_rate_is_the_settings_rate_per_request(client, settings, low_rates):
    anna = user_create(username="anna", password="pw-123456-x", languages=["de"])
    client.force_login(anna)
    url = reverse("review_api:decisions")
    assert [client.get(url).status_code for _ in range(6)][-1] == 429
    settings.API_THROTTLE_RATES = {"user": "10/minute"}  # an operator's higher rate
    assert client.get(url).status_code == 200
