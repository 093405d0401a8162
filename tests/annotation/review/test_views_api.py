"""Screens and API: login required, only own languages and own work, CSRF, escaping, idempotency."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import LikertRating, RatingItem, ReviewDecision, ReviewLock
from annotation.review import services
from core.services import user_create
from injection.models import Candidate
from tests.annotation.review.factories import make_candidate, make_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(project, languages):
    de = make_candidates(project, languages, "en-de")
    zh = make_candidates(project, languages, "en-zh")
    item = RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="Hi.",
        reference="Hallo.",
        text="Hallo!",
        system="s1",
    )
    zh_item = RatingItem.objects.create(
        project=project,
        direction=languages["en-zh"],
        kind="system_output",
        source="Hi.",
        reference="你好。",
        text="你好！",
        system="s1",
    )
    return {"de": de, "zh": zh, "item": item, "zh_item": zh_item}


def login(client, user, password):
    assert client.login(username=user.username, password=password)
    return client


@pytest.fixture
def de_client(annotator_de):
    return login(Client(), annotator_de, "anna-pass-123")


@pytest.fixture
def zh_client(annotator_zh):
    return login(Client(), annotator_zh, "li-pass-123")


@pytest.fixture
def admin_client(admin_user):
    return login(Client(), admin_user, "admin-pass-123")


def page_urls(project, data):
    return [
        reverse("review:index"),
        reverse("review:mine"),
        reverse("review:next", args=[project.name]),
        reverse("review:candidate", args=[project.name, data["de"][0].pk]),
        reverse("review:rate_next", args=[project.name]),
        reverse("review:rate", args=[data["item"].pk]),
        reverse("review:manage", args=[project.name]),
        reverse("review:adjudication", args=[project.name]),
        reverse("review:annotators"),
    ]


def api_calls(project, data):
    c = data["de"][0].pk
    return [
        ("post", reverse("review_api:next", args=[project.name]), {}),
        ("get", reverse("review_api:progress", args=[project.name]), None),
        ("post", reverse("review_api:rating_next", args=[project.name]), {}),
        ("get", reverse("review_api:candidate", args=[c]), None),
        ("get", reverse("review_api:decisions"), None),
        ("post", reverse("review_api:decisions"), {"candidate": c, "decision": "accept", "idempotency_key": "k"}),
        ("post", reverse("review_api:skips"), {"candidate": c, "reason": "unsure"}),
        ("get", reverse("review_api:rating_item", args=[data["item"].pk]), None),
        ("get", reverse("review_api:ratings"), None),
        ("post", reverse("review_api:ratings"), {"item": data["item"].pk, "idempotency_key": "r"}),
        ("post", reverse("review_api:adjudications"), {"candidate": c, "decision": "accept"}),
    ]


def call(client, method, url, body):
    if method == "get":
        return client.get(url)
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_every_page_requires_login(project, data):
    client = Client()
    for url in page_urls(project, data):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


def test_every_endpoint_requires_login(project, data):
    client = Client()
    for method, url, body in api_calls(project, data):
        assert call(client, method, url, body).status_code in (401, 403), url
    assert not ReviewDecision.objects.exists()


def test_other_language_gets_no_access(project, data, zh_client):
    de_cand = data["de"][0]
    assert zh_client.get(reverse("review:candidate", args=[project.name, de_cand.pk])).status_code == 404
    assert zh_client.get(reverse("review:rate", args=[data["item"].pk])).status_code == 404
    assert zh_client.get(reverse("review_api:candidate", args=[de_cand.pk])).status_code == 404
    assert zh_client.get(reverse("review_api:rating_item", args=[data["item"].pk])).status_code == 404
    r = call(
        zh_client,
        "post",
        reverse("review_api:decisions"),
        {"candidate": de_cand.pk, "decision": "accept", "idempotency_key": "x"},
    )
    assert r.status_code == 404
    r = call(zh_client, "post", reverse("review_api:skips"), {"candidate": de_cand.pk, "reason": "unsure"})
    assert r.status_code == 404
    scores = {"informativeness": 3, "clarity": 3, "plausibility": 3, "faithfulness": 3}
    r = call(
        zh_client, "post", reverse("review_api:ratings"), {"item": data["item"].pk, "idempotency_key": "y", **scores}
    )
    assert r.status_code == 404
    # the queue only offers zh
    got = call(zh_client, "post", reverse("review_api:next", args=[project.name]), {}).json()
    assert got["candidate"]["language"] == "zh"
    # the HTML form path refuses too
    r = zh_client.post(
        reverse("review:candidate", args=[project.name, de_cand.pk]), {"action": "accept", "idempotency_key": "z"}
    )
    assert r.status_code == 404
    assert not ReviewDecision.objects.filter(candidate=de_cand).exists()
    assert not LikertRating.objects.exists()


def test_admin_pages_are_admin_only(project, data, de_client, admin_client):
    for name in ("review:manage", "review:adjudication"):
        assert de_client.get(reverse(name, args=[project.name])).status_code == 403
        assert admin_client.get(reverse(name, args=[project.name])).status_code == 200
    assert de_client.get(reverse("review:annotators")).status_code == 403
    assert admin_client.get(reverse("review:annotators")).status_code == 200
    r = call(
        de_client, "post", reverse("review_api:adjudications"), {"candidate": data["de"][0].pk, "decision": "accept"}
    )
    assert r.status_code == 403
    r = de_client.post(
        reverse("review:manage", args=[project.name]), {"action": "pool_rule", "pool_rule": "adjudicated"}
    )
    assert r.status_code == 403


def test_the_main_menu_is_the_same_on_every_page_for_a_user(project, data, de_client, admin_client):
    def menu(client, url):
        html = client.get(url).content.decode()
        return html.split('<nav aria-label="Main">', 1)[1].split("</nav>", 1)[0]

    urls = [
        reverse("home"),
        reverse("agreement:index"),
        reverse("benchmarks:index"),
        reverse("scores:index"),
        reverse("projects:detail", args=[project.name]),
        *page_urls(project, data),
    ]
    admin_menus = {url: menu(admin_client, url) for url in urls if admin_client.get(url).status_code == 200}
    annotator_menus = {url: menu(de_client, url) for url in urls if de_client.get(url).status_code == 200}
    assert len(admin_menus) >= 12 and reverse("review:manage", args=[project.name]) in admin_menus
    assert reverse("review:mine") in annotator_menus and reverse("review:index") in annotator_menus
    assert len(set(admin_menus.values())) == 1, admin_menus  # review pages used to add their own entries
    assert len(set(annotator_menus.values())) == 1, annotator_menus
    admin_menu, annotator_menu = admin_menus[urls[0]], annotator_menus[urls[0]]
    assert ">My decisions</a>" in admin_menu and ">My decisions</a>" in annotator_menu
    assert ">Annotators</a>" in admin_menu and ">Annotators</a>" not in annotator_menu  # what each may use
    assert ">Injection</a>" in admin_menu and ">Injection</a>" not in annotator_menu


def test_decisions_list_shows_only_own_work(project, data, de_client, annotator_de):
    other = user_create(username="ben_de", password="ben-pass-123", languages=["de"])
    services.decision_submit(user=other, candidate_id=data["de"][0].pk, decision="reject", idempotency_key="other")
    services.decision_submit(
        user=annotator_de, candidate_id=data["de"][1].pk, decision="accept", idempotency_key="mine"
    )
    rows = de_client.get(reverse("review_api:decisions")).json()["results"]
    assert [r["idempotency_key"] for r in rows] == ["mine"]
    assert "other" not in de_client.get(reverse("review:mine")).content.decode()


def test_own_decisions_show_the_rejection_reason_as_picked_not_its_code(project, data, de_client, annotator_de):
    services.decision_submit(
        user=annotator_de,
        candidate_id=data["de"][0].pk,
        decision="reject",
        idempotency_key="r1",
        reason="outside_changed",
    )
    mine = de_client.get(reverse("review:mine")).content.decode()
    assert "text outside the mark changed" in mine and "outside_changed" not in mine
    screen = de_client.get(reverse("review:candidate", args=[project.name, data["de"][0].pk])).content.decode()
    assert "You rejected this candidate (text outside the mark changed)" in screen


def test_own_decisions_show_the_time_zone_and_the_reviewers_comment_escaped_and_truncated(
    project, data, de_client, annotator_de
):
    from django.utils import timezone

    comment = "<b>odd</b> " + "word " * 40
    decision, _ = services.decision_submit(
        user=annotator_de,
        candidate_id=data["de"][0].pk,
        decision="reject",
        idempotency_key="c1",
        reason="wrong_type",
        comment=comment,
    )
    mine = de_client.get(reverse("review:mine")).content.decode()
    assert f"{timezone.localtime(decision.updated_at):%Y-%m-%d %H:%M} UTC</time>" in mine  # TIME_ZONE, named
    assert "<th>Your comment</th>" in mine and "&lt;b&gt;odd&lt;/b&gt; word word" in mine and "<b>odd</b>" not in mine
    shown = mine.split('<bdi title="', 1)[1].split("</bdi>", 1)[0].split(">", 1)[1]
    assert len(shown) < 100 and shown.endswith("…")  # truncated; the whole comment is the title


def test_api_decision_is_idempotent(project, data, de_client):
    body = {
        "candidate": data["de"][0].pk,
        "decision": "reject",
        "reason": "wrong_type",
        "comment": "no",
        "time_spent_ms": 1200,
        "idempotency_key": "abc",
    }
    first = call(de_client, "post", reverse("review_api:decisions"), body)
    second = call(de_client, "post", reverse("review_api:decisions"), body)
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"]
    assert ReviewDecision.objects.count() == 1
    bad = call(de_client, "post", reverse("review_api:decisions"), {**body, "idempotency_key": "d", "reason": "bogus"})
    assert bad.status_code == 400 and bad.json()["field"] == "reason"


def test_csrf_is_enforced(project, data, annotator_de):
    client = Client(enforce_csrf_checks=True)
    login(client, annotator_de, "anna-pass-123")
    r = call(
        client,
        "post",
        reverse("review_api:decisions"),
        {"candidate": data["de"][0].pk, "decision": "accept", "idempotency_key": "c"},
    )
    assert r.status_code == 403
    r = client.post(
        reverse("review:candidate", args=[project.name, data["de"][0].pk]), {"action": "accept", "idempotency_key": "c"}
    )
    assert r.status_code == 403
    assert not ReviewDecision.objects.exists()


def test_get_next_takes_no_lock_post_does_and_get_then_resumes_it(project, data, de_client):
    url = reverse("review:next", args=[project.name]) + "?lang=de"
    r = de_client.get(url)  # what a prefetcher does
    page = r.content.decode()
    assert r.status_code == 200 and 'id="queue-start"' in page and "data-autostart" in page
    assert not ReviewLock.objects.exists()
    r = de_client.post(url)
    lock = ReviewLock.objects.get()
    assert r.status_code == 302 and f"/candidate/{lock.candidate_id}/" in r["Location"]
    expires = lock.expires_at
    again = de_client.get(url)  # resumes the held item, and leaves its lock as it was
    assert again.status_code == 302 and again["Location"] == r["Location"]
    lock.refresh_from_db()
    assert lock.expires_at == expires and ReviewLock.objects.count() == 1


def test_form_path_decides_and_moves_on(project, data, de_client):
    r = de_client.post(reverse("review:next", args=[project.name]) + "?lang=de")
    assert r.status_code == 302
    page = de_client.get(r["Location"])
    assert page.status_code == 200
    cand_id = page.context["candidate"].pk
    key = page.context["idempotency_key"]
    r = de_client.post(r["Location"], {"action": "accept", "idempotency_key": key, "time_spent_ms": "900"})
    assert r.status_code == 302 and "/next/" in r["Location"]
    d = ReviewDecision.objects.get(candidate_id=cand_id)
    assert d.time_spent_ms == 900 and d.decision == "accept"


def test_review_page_escapes_and_highlights_from_offsets(project, languages, de_client):
    payload = '<script>alert("x")</script>'
    cand = make_candidate(
        project, languages["en-de"], "Hello <b>you</b>", f"Hallo {payload} <v>du</v>", f"Hallo {payload} <v>ihr</v>"
    )
    html = de_client.get(reverse("review:candidate", args=[project.name, cand.pk])).content.decode()
    assert payload not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<b>you</b>" not in html
    # the edited token (from offsets) is the only <mark>; the text's own <v> tags are shown as text
    assert '<mark class="edit" dir="ltr">&lt;v&gt;ihr&lt;/v&gt;</mark>' in html
    assert '<mark class="edit" dir="ltr">&lt;v&gt;du&lt;/v&gt;</mark>' in html


def test_review_page_rtl_and_deletion_marker(project, languages):
    ar = make_candidate(
        project, languages["en-ar"], "The book is new.", "الكتاب جديد جدا.", "الكتاب جدا.", error_type="Omission"
    )
    user = user_create(username="amal_ar", password="amal-pass-123", languages=["ar"])
    client = login(Client(), user, "amal-pass-123")
    html = client.get(reverse("review:candidate", args=[project.name, ar.pk])).content.decode()
    assert 'lang="ar" dir="rtl" id="candidate-text"' in html
    assert 'class="gap delete-point"' in html and '<mark class="edit" dir="rtl">جديد</mark>' in html


def test_admin_progress_page_and_adjudication(project, data, admin_client, annotator_de):
    other = user_create(username="ben_de", password="ben-pass-123", languages=["de"])
    c = data["de"][0]
    services.decision_submit(
        user=annotator_de, candidate_id=c.pk, decision="accept", idempotency_key="a", time_spent_ms=3000
    )
    services.decision_submit(user=other, candidate_id=c.pk, decision="reject", idempotency_key="b", time_spent_ms=5000)
    html = admin_client.get(reverse("review:manage", args=[project.name])).content.decode()
    assert "anna_de" in html and "3.0 s" in html
    page = admin_client.get(reverse("review:adjudication", args=[project.name]))
    assert len(page.context["items"]) == 1
    admin_client.post(reverse("review:adjudication", args=[project.name]), {"candidate": c.pk, "decision": "accept"})
    assert Candidate.objects.get(pk=c.pk).status == "accepted"
    r = admin_client.post(
        reverse("review:manage", args=[project.name]), {"action": "open_round", "sample_size": "5", "seed": "3"}
    )
    assert r.status_code == 302 and project.review_rounds.filter(number=2).exists()


def test_schema_lists_review_endpoints(admin_client):
    schema = admin_client.get("/api/schema/?format=json").json()
    assert "/api/review/decisions/" in schema["paths"] and "/api/review/ratings/" in schema["paths"]


def test_django_admin_lists_review_models(project, data, admin_client, annotator_de):
    services.decision_submit(user=annotator_de, candidate_id=data["de"][0].pk, decision="accept", idempotency_key="adm")
    for model in (
        "reviewround",
        "reviewdecision",
        "reviewskip",
        "reviewlock",
        "ratingitem",
        "likertrating",
        "auditevent",
    ):
        assert admin_client.get(f"/admin/annotation/{model}/").status_code == 200, model
    decision = ReviewDecision.objects.get()
    # decisions change only through the audited services
    assert (
        admin_client.post(f"/admin/annotation/reviewdecision/{decision.pk}/change/", {"decision": "reject"}).status_code
        == 403
    )


def test_review_page_shows_check_warnings_and_criteria(project, languages, de_client):
    cand = make_candidate(
        project,
        languages["en-de"],
        "s",
        "a b c d",
        "a X c d",
        error_type="Untranslated",
        flags=["local_edit"],
        checks={"local_edit": {"passed": False, "detail": "text outside the marked span differs"}},
    )
    page = de_client.get(reverse("review:candidate", args=[project.name, cand.pk]))
    html = page.content.decode()
    assert "Automatic checks" in html and "local_edit" in html and "text outside the marked span differs" in html
    assert "names of people or places" in html  # the Untranslated rejection criterion is in view
    api = de_client.get(reverse("review_api:candidate", args=[cand.pk])).json()
    assert api["warnings"] == [{"name": "local_edit", "detail": "text outside the marked span differs"}]
    assert api["guideline"]["type"] == "Untranslated" and api["span"] == [1, 2]


def test_viewer_cannot_review_or_rate(project, data):
    viewer = user_create(username="vic", password="vic-pass-123", role="viewer", languages=["de"])
    client = login(Client(), viewer, "vic-pass-123")
    assert client.get(reverse("review:candidate", args=[project.name, data["de"][0].pk])).status_code == 404
    assert (
        call(client, "post", reverse("review_api:next", args=[project.name]), {}).status_code == 404
    )  # no queue: as if none
    assert client.get(reverse("review:next", args=[project.name])).status_code == 404
    r = call(
        client,
        "post",
        reverse("review_api:decisions"),
        {"candidate": data["de"][0].pk, "decision": "accept", "idempotency_key": "v"},
    )
    assert r.status_code == 404
    assert client.get(reverse("review:rate", args=[data["item"].pk])).status_code == 404
    assert not ReviewDecision.objects.exists()
