"""The one error vocabulary (core.domain.errors) and the one place per caller that answers it (core.errors):
the API's exception handler, configured in settings, and the HTML views' decorator and form helper."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.http import Http404
from django.test import RequestFactory
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from core import access
from core.domain.errors import KINDS, AppError, Conflict, Forbidden, Invalid, NotFound, answers_as_missing, kind_of
from core.errors import RefusalAsMessage, answers_refusals

pytestmark = pytest.mark.django_db


class KeyReused(Invalid):
    code = "key_reused"
    status = 422


def api_answer(exc: Exception, user) -> tuple[int, bytes]:
    """What the API answers when a view raises ``exc`` (a real DRF view, through the configured handler)."""

    class Raising(APIView):
        def get(self, request):
            raise exc

    request = APIRequestFactory().get("/api/anything")
    force_authenticate(request, user=user)
    response = Raising.as_view()(request)
    response.render()
    return response.status_code, response.content


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (Invalid("decision must be 'accept' or 'reject'", "decision"), 400),
        (KeyReused("idempotency key 'k' was already used", "idempotency_key"), 422),
        (Forbidden("admins only", "client_user"), 403),
        (Conflict("round 1 is closed", "round"), 409),
    ],
    ids=["invalid", "invalid-422", "forbidden", "conflict"],
)
def test_the_api_answers_each_kind_with_its_status_message_field_and_code(error, status, admin_user):
    answered, body = api_answer(error, admin_user)
    assert answered == status
    assert json.loads(body) == {"detail": error.message, "field": error.field, "code": error.code}


@pytest.mark.parametrize(
    "error",
    [NotFound("candidate 7 not found", "candidate"), Forbidden("not in your languages", "candidate", hidden=True)],
    ids=["not-found", "forbidden-hidden"],
)
def test_the_api_answers_not_found_and_hidden_forbidden_exactly_as_a_missing_thing(error, admin_user):
    missing = api_answer(access.not_found(), admin_user)
    assert missing == (404, b'{"detail":"Not found."}')
    assert api_answer(error, admin_user) == missing  # neither the message nor the field tells it exists


def test_an_error_that_is_not_an_app_error_still_answers_as_drf_answers_it(admin_user):
    from rest_framework.exceptions import ValidationError

    assert api_answer(ValidationError({"round": ["bad"]}), admin_user) == (400, b'{"round":["bad"]}')


def test_each_error_is_of_exactly_one_kind_with_a_stable_code():
    """Every AppError subclass the platform defines maps to one of the four kinds, and no two share a code
    unless one is the kind itself."""
    import core.services
    import exports.benchmark.services
    import exports.metaeval.selectors
    import exports.rating_items
    import exports.release.services
    import exports.scores.domain
    import injection.backends.base
    import injection.services  # noqa: F401  (the modules that define errors, so that subclasses exist)

    seen: dict[str, type] = {}
    stack = list(AppError.__subclasses__())
    classes = []
    while stack:
        cls = stack.pop()
        classes.append(cls)
        stack.extend(cls.__subclasses__())
    platform = [c for c in classes if not c.__module__.startswith("tests.")]
    assert len(platform) > 20  # the re-based classes are found: the check below is not vacuous
    for cls in platform:
        assert sum(issubclass(cls, kind) for kind in KINDS) == 1, cls
        assert cls.code, cls
        if cls.code in seen and cls.__dict__.get("code"):
            raise AssertionError(f"{cls} and {seen[cls.code]} share the code {cls.code!r}")
        if cls.__dict__.get("code"):
            seen[cls.code] = cls
    assert kind_of(exports.release.services.ReleaseRunning(_Named())) is Conflict
    assert kind_of(core.services.ImportRejected("corpus.tsv", ["line 2: empty source"])) is Invalid


class _Named:
    """Just what ReleaseRunning's message reads."""

    version, stage, progress = "1.0", "", 0

    class project:
        name = "demo"


def test_errors_that_were_value_errors_still_are():
    """Callers that catch ValueError (commands, imports) keep catching the re-based errors."""
    from core.domain.units import MarkupError
    from exports.release.domain.sampling import SamplingError
    from injection.services import RunRejected

    for error in (MarkupError("no <v> region"), SamplingError("level 3 has no triplets"), RunRejected("no items")):
        assert isinstance(error, ValueError) and isinstance(error, Invalid)


def test_only_not_found_and_hidden_forbidden_answer_as_missing():
    assert answers_as_missing(NotFound("x")) and answers_as_missing(Forbidden("x", hidden=True))
    assert not any(answers_as_missing(e) for e in (Forbidden("x"), Invalid("x"), Conflict("x")))


def _page_request(user):
    request = RequestFactory().post("/somewhere")
    request.user = user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


@pytest.mark.parametrize(
    ("error", "status"),
    [(Invalid("bad seed", "seed"), 400), (Forbidden("admins only"), 403), (Conflict("closed"), 409)],
)
def test_a_page_shows_the_message_with_the_errors_status(error, status, annotator_de):
    @answers_refusals
    def view(request):
        raise error

    response = view(_page_request(annotator_de))
    assert response.status_code == status
    assert error.message in response.content.decode()


@pytest.mark.parametrize("error", [NotFound("candidate 7 not found"), Forbidden("hidden", hidden=True)])
def test_a_page_answers_not_found_and_hidden_forbidden_as_a_missing_page(error, annotator_de):
    @answers_refusals
    def view(request):
        raise error

    with pytest.raises(Http404) as raised:
        view(_page_request(annotator_de))
    assert str(raised.value) == access.NOT_FOUND  # the site's 404 page, as for any missing thing


def test_a_form_write_refused_becomes_the_pages_message_and_other_errors_pass(annotator_de):
    request = _page_request(annotator_de)
    with RefusalAsMessage(request) as refusal:
        raise Conflict("round 2 is closed", "round")
    assert isinstance(refusal.error, Conflict)
    assert [m.message for m in get_messages(request)] == ["round 2 is closed"]
    with RefusalAsMessage(request) as refusal:
        pass
    assert refusal.error is None
    with pytest.raises(ZeroDivisionError), RefusalAsMessage(request):
        raise ZeroDivisionError
