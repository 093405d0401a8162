"""The API's rate limit (#48.5): DRF's throttle per signed-in user, at the rate of ``API_THROTTLE_RATES``
(environment ``API_THROTTLE_USER``). Past it a client gets 429 with ``Retry-After``. Every API endpoint needs
a signed-in user, and DRF refuses an anonymous request before it throttles; guessing a password through
Basic auth is held by the login throttling (django-axes, core.auth).

DRF's own classes read their rates once, when they are imported; these read them per request, so a test
(or an operator's settings override) sets a rate and the next request follows it. The counts live in the
default cache (Redis in production: ``CACHE_URL``, shared by every gunicorn worker).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import UserRateThrottle


class ApiUserThrottle(UserRateThrottle):
    def get_rate(self):
        return settings.API_THROTTLE_RATES.get(self.scope)
