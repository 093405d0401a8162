"""RTL in every list (#37 item 9): every page and Django admin list that shows corpus or LLM text sets the
text's ``lang`` and ``dir`` from its language (the target's for references, candidates and answers, the
source's for source text) and isolates it, as the review screen does. One world with an English→Arabic
and an Arabic→English project; each route is rendered and every run of Arabic text on it is checked."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from annotation.rating import services as rating_services
from annotation.review import services
from core.models import ReviewerAssignment
from core.services import project_directions_add, project_ensure, user_create
from injection.models import Candidate, InjectionItem
from tests.annotation.review.factories import make_candidate, make_run

pytestmark = pytest.mark.django_db

ARABIC = re.compile(r"[\u0600-\u06ff]")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Runs(HTMLParser):
    """Every text run of the page with the elements it sits in (innermost last)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.runs: list[tuple[str, list[tuple[str, dict]]]] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if data.strip():
            self.runs.append((data, list(self.stack)))


def arabic_runs(page: str) -> list[tuple[str, list[tuple[str, dict]]]]:
    parser = Runs()
    parser.feed(page)
    return [(text, stack) for text, stack in parser.runs if ARABIC.search(text) and stack[-1][0] != "title"]


def problems_of(page: str, *, structured: tuple[str, ...] = ()) -> list[str]:
    """Each Arabic run must read as Arabic: the nearest ``lang`` is ar, the nearest ``dir`` is rtl (``auto``
    inside a ``structured`` element: an LLM's JSON answer, whose keys set its base direction), and the run
    is isolated (a <bdi>, or an element with ``dir``: HTML isolates both) inside its table cell or block."""
    found = []
    for text, stack in arabic_runs(page):
        lang = next((attrs["lang"] for _tag, attrs in reversed(stack) if "lang" in attrs), None)
        owner = next(((tag, attrs) for tag, attrs in reversed(stack) if "dir" in attrs), None)
        wanted = "auto" if any(tag in structured for tag, _ in stack) else "rtl"
        if lang != "ar":
            found.append(f"{text.strip()[:30]!r}: lang {lang!r}")
        if owner is None or owner[1]["dir"] != wanted:
            found.append(f"{text.strip()[:30]!r}: dir {owner and owner[1]['dir']!r} on <{owner and owner[0]}>")
        cell = max((i for i, (tag, _) in enumerate(stack) if tag in ("td", "th", "p", "pre", "div")), default=-1)
        if not any(tag == "bdi" or "dir" in attrs for tag, attrs in stack[cell:]):
            found.append(f"{text.strip()[:30]!r}: not isolated")
    return found


@pytest.fixture
def arabic_world(project, languages, admin_user):
    en_ar = languages["en-ar"]
    amal = user_create(username="amal_ar", password="amal-pass-123", languages=["ar"])
    omar = user_create(username="omar_ar", password="omar-pass-123", languages=["ar"])
    decided = make_candidate(project, en_ar, "The book is new.", "الكتاب جديد.", "الكتاب قديم.", external_id="book")
    skipped = make_candidate(project, en_ar, "The sun is hot.", "الشمس حارة.", "الشمس باردة.", external_id="sun")
    services.decision_submit(user=amal, candidate_id=decided.pk, decision="accept", idempotency_key="a1")
    services.decision_submit(user=omar, candidate_id=decided.pk, decision="reject", idempotency_key="o1")
    services.candidate_skip(user=amal, candidate_id=skipped.pk, reason="broken_item", comment="half of it is missing")
    rating_services.rating_items_make_for_candidates(
        project=project, candidates=Candidate.objects.filter(pk=decided.pk)
    )
    run = make_run(project, "failed-run")
    InjectionItem.objects.create(
        run=run,
        segment=skipped.segment,
        kind="mqm",
        error_type="Addition",
        position="end",
        status=InjectionItem.Status.FAILED,
        error="the answer is not JSON",
        raw_output='{"text": "الشمس باردة جدا"',
    )
    # the source side: an Arabic→English project, reviewed by an annotator assigned there
    source_ar, _ = project_ensure(name="from-arabic", title="From Arabic", source_language="ar")
    (ar_en,) = project_directions_add(project=source_ar, codes=["ar-en"])
    english = make_candidate(
        source_ar, ar_en, "القطة نائمة.", "The cat is asleep.", "The dog is asleep.", external_id="cat"
    )
    rating_services.rating_items_make_for_candidates(
        project=source_ar, candidates=Candidate.objects.filter(pk=english.pk)
    )
    eve = user_create(username="eve_en", password="eve-pass-123")
    finn = user_create(username="finn_en", password="finn-pass-123")
    for reviewer in (eve, finn):
        ReviewerAssignment.objects.create(project=source_ar, direction=ar_en, user=reviewer)
    services.decision_submit(user=eve, candidate_id=english.pk, decision="accept", idempotency_key="e1")
    services.decision_submit(
        user=finn, candidate_id=english.pk, decision="reject", reason="other", comment="why", idempotency_key="f1"
    )
    return {"amal": amal, "eve": eve, "admin": admin_user, "decided": decided, "english": english, "run": run}


def _item(candidate):
    from annotation.models import RatingItem

    return RatingItem.objects.get(candidate=candidate).pk


# (who, url, elements whose text is a structured answer): every page and admin list that shows text
ROUTES = [
    ("amal", lambda w: reverse("review:candidate", args=["demo", w["decided"].pk]), ()),
    ("amal", lambda w: reverse("review:mine"), ()),
    ("amal", lambda w: reverse("review:rate", args=[_item(w["decided"])]), ()),
    ("admin", lambda w: reverse("review:manage", args=["demo"]), ()),
    ("admin", lambda w: reverse("review:adjudication", args=["demo"]), ()),
    ("admin", lambda w: reverse("injection:candidates"), ()),
    ("admin", lambda w: reverse("injection:run", args=[w["run"].pk]), ("pre",)),
    ("admin", lambda w: reverse("admin:core_goldsegment_changelist"), ()),
    ("admin", lambda w: reverse("admin:injection_candidate_changelist"), ()),
    ("eve", lambda w: reverse("review:candidate", args=["from-arabic", w["english"].pk]), ()),
    ("eve", lambda w: reverse("review:rate", args=[_item(w["english"])]), ()),
    ("admin", lambda w: reverse("review:adjudication", args=["from-arabic"]), ()),
]


@pytest.mark.parametrize(("who", "url", "structured"), ROUTES, ids=[f"{w}-{i}" for i, (w, _, _) in enumerate(ROUTES)])
def test_every_list_shows_arabic_text_right_to_left_and_isolated(arabic_world, who, url, structured):
    client = Client()
    client.force_login(arabic_world[who])
    response = client.get(url(arabic_world))
    assert response.status_code == 200
    page = response.content.decode()
    assert arabic_runs(page), "the page shows no Arabic text: the route proves nothing"
    assert problems_of(page, structured=structured) == []


def test_the_check_fails_on_a_cell_without_dir():
    """The checker itself: the admin list's old cell (text without lang, dir or isolation) is caught."""
    assert problems_of("<table><tr><td>الكتاب قديم.</td></tr></table>") == [
        "'الكتاب قديم.': lang None",
        "'الكتاب قديم.': dir None on <None>",
        "'الكتاب قديم.': not isolated",
    ]
    assert problems_of('<td lang="ar" dir="rtl"><bdi>الكتاب</bdi></td>') == []
