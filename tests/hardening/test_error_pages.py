"""Error pages (404, 403, CSRF failure, 400, 500) are the site's own: they say what happened and where to go,
in the site's layout, and echo nothing unescaped. Django's defaults (a bare "Not Found", or a page that
talks about CSRF tokens) would leave an annotator with an expired form nowhere to go."""

import pytest
from django.test import Client, RequestFactory
from django.views import defaults

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotator_client(annotator_de):
    client = Client(raise_request_exception=False)
    client.force_login(annotator_de)
    return client


def test_an_unknown_address_gets_the_sites_404_with_the_path_escaped(annotator_client):
    response = annotator_client.get('/review/no-such-page/"><script>alert(1)</script>/')
    body = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in body and 'href="/review/"' in body  # the site's layout and a way back
    assert "/review/no-such-page/" in body
    assert "<script>alert(1)</script>" not in body and "&quot;&gt;" not in body  # quoted: %22%3E%3Cscript%3E
    assert "%3Cscript%3E" in body


def test_a_page_for_admins_answers_403_with_its_reason_for_an_annotator(annotator_client):
    response = annotator_client.get("/injection/")
    body = response.content.decode()
    assert response.status_code == 403
    assert "Not allowed" in body
    assert "injection runs are managed by admins" in body  # the reason the view gave
    assert "anna_de" in body


def test_a_form_sent_without_its_csrf_token_explains_the_expired_form(annotator_de):
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator_de)
    response = client.post("/accounts/logout/")
    assert response.status_code == 403
    assert "This form has expired" in response.content.decode()


def test_the_project_list_address_leads_to_the_home_page(annotator_client):
    response = annotator_client.get("/projects/")
    assert response.status_code == 302 and response.headers["Location"] == "/"


def test_bad_request_and_server_error_pages_render_on_their_own():
    request = RequestFactory().get("/anything/")
    bad = defaults.bad_request(request, exception=ValueError("x"))
    assert bad.status_code == 400 and "Bad request" in bad.content.decode()
    # server_error renders 500.html with no request context: it must need none
    error = defaults.server_error(request)
    body = error.content.decode()
    assert error.status_code == 500
    assert "Server error" in body and "/static/css/app.css" in body
