"""Likert items made on the site (#37.5): from accepted candidates, from pseudo translations of one level,
or from an uploaded file of system outputs, by the rules the command-line tools apply; a bad file names
its line and writes nothing; annotators and viewers get the page as a missing one."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import RatingItem
from core.services import user_create
from exports.models import PseudoTranslation
from injection.models import Candidate
from tests.annotation.review.factories import make_candidates
from tests.support.asserts import every

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client, admin_user):
    client.force_login(admin_user)
    return client


def _masked(answer) -> bytes:
    """The page without its per-request CSRF token (the logout form's)."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", answer.content)


def _url(project) -> str:
    return reverse("projects:rating_items", args=[project.name])


def _pseudo(candidate, level: int) -> PseudoTranslation:
    return PseudoTranslation.objects.create(
        segment=candidate.segment,
        level=level,
        key=f"{candidate.pk}-{level}",
        text=f"{candidate.text} ({level})",
        marked_text=candidate.text,
        mqm_penalty=5 * level,
    )


def test_accepted_candidates_become_items_once(admin, project, languages):
    cands = make_candidates(project, languages, "en-de")
    accepted = cands[:3]
    Candidate.objects.filter(pk__in=[c.pk for c in accepted]).update(status="accepted")
    answer = admin.post(_url(project), {"source": "accepted-candidates", "direction": "en-de"})
    assert answer.status_code == 302
    items = RatingItem.objects.filter(kind="candidate")
    assert sorted(items.values_list("candidate_id", flat=True)) == sorted(c.pk for c in accepted)
    assert {i.text for i in items} == {c.text for c in accepted}
    admin.post(_url(project), {"source": "accepted-candidates"})  # again: the items made before are kept
    assert RatingItem.objects.filter(kind="candidate").count() == 3
    page = admin.get(_url(project)).content.decode()
    assert "3 from candidates" in page


def test_pseudo_translations_of_one_level_only(admin, project, languages):
    cands = make_candidates(project, languages, "en-de", count=2)
    wanted = [_pseudo(c, 2) for c in cands]
    for c in cands:
        _pseudo(c, 1)
    answer = admin.post(_url(project), {"source": "pseudo-translations", "level": "2"})
    assert answer.status_code == 302
    items = RatingItem.objects.filter(kind="pseudo_translation")
    assert sorted(items.values_list("pseudo_translation_id", flat=True)) == sorted(p.pk for p in wanted)
    assert every(i.reference == i.pseudo_translation.segment.reference for i in items)


def test_a_level_beyond_the_project_is_refused_on_its_field(admin, project, languages):
    cand = make_candidates(project, languages, "en-de", count=1)[0]
    _pseudo(cand, 1)
    answer = admin.post(_url(project), {"source": "pseudo-translations", "level": str(project.max_errors + 1)})
    assert answer.status_code == 200
    assert f"has levels 0 to {project.max_errors}" in answer.context["form"].errors["level"][0]
    level_with_candidates = admin.post(_url(project), {"source": "accepted-candidates", "level": "1"})
    assert "use it with pseudo translations" in level_with_candidates.context["form"].errors["level"][0]
    assert not RatingItem.objects.exists()


def test_an_uploaded_file_of_system_outputs(admin, project):
    data = (
        b'{"id": "s1", "source": "Hello.", "reference": "Hallo.", "text": "Hallo!"}\n'
        b'{"id": "s2", "source": "Good night.", "text": "Gute Nacht.", "system": "sysB"}\n'
    )
    upload = SimpleUploadedFile("outputs.jsonl", data)
    answer = admin.post(
        _url(project), {"source": "system-outputs", "direction": "en-de", "system": "sysA", "file": upload}
    )
    assert answer.status_code == 302
    items = {i.external_id: i for i in RatingItem.objects.filter(kind="system_output")}
    assert set(items) == {"s1", "s2"}
    assert (items["s1"].system, items["s1"].text, items["s1"].direction.code) == ("sysA", "Hallo!", "en-de")
    assert items["s2"].system == "sysB"


def test_a_bad_file_names_its_lines_and_writes_nothing(admin, project):
    upload = SimpleUploadedFile("bad.tsv", b"id\tsource\ttext\n1\tHello.\t\n2\t\tHallo\n")
    answer = admin.post(_url(project), {"source": "system-outputs", "direction": "en-de", "file": upload})
    assert answer.status_code == 200
    errors = answer.context["form"].errors["file"]
    assert any("bad.tsv line 2: field 'text' is empty" in e for e in errors)
    assert any("bad.tsv line 3: field 'source' is empty" in e for e in errors)
    assert "bad.tsv line 2" in answer.content.decode()
    assert not RatingItem.objects.exists()


def test_a_file_needs_a_direction_and_a_file_needs_its_source(admin, project):
    answer = admin.post(_url(project), {"source": "system-outputs"})
    form = answer.context["form"]
    assert answer.status_code == 200 and "direction" in form.errors and "file" in form.errors
    stray = SimpleUploadedFile("outputs.jsonl", b'{"source": "a", "text": "b"}\n')
    answer = admin.post(_url(project), {"source": "accepted-candidates", "file": stray})
    assert answer.status_code == 200 and "file" in answer.context["form"].errors
    assert not RatingItem.objects.exists()


def test_an_oversized_file_is_refused_before_it_is_read(admin, project, settings):
    settings.CORPUS_UPLOAD_MAX_BYTES = 10
    upload = SimpleUploadedFile("big.jsonl", b'{"source": "Hello.", "text": "Hallo."}\n')
    answer = admin.post(_url(project), {"source": "system-outputs", "direction": "en-de", "file": upload})
    assert "more than the 10 allowed" in answer.context["form"].errors["file"][0]
    assert not RatingItem.objects.exists()


@pytest.mark.parametrize(
    ("name", "body", "where"),
    [
        ("long.jsonl", ('{"source": "Hello.", "text": "' + "x" * 20_000 + '"}\n').encode(), "line 1: field 'text'"),
        (
            "long.tsv",
            ("source\treference\ttext\nHello.\t" + "y" * 20_000 + "\tHallo.\n").encode(),
            "line 2: field 'reference'",
        ),
    ],
    ids=["text-jsonl", "reference-tsv"],
)
def test_a_20000_character_rating_item_is_refused_like_a_corpus_segment(admin, project, name, body, where):
    """#48.3: rating items stored texts of 2 M characters (JSONL) and 100 k (TSV); the corpus caps at 5,000."""
    upload = SimpleUploadedFile(name, body)
    answer = admin.post(_url(project), {"source": "system-outputs", "direction": "en-de", "file": upload})
    errors = " ".join(answer.context["form"].errors["file"])
    assert f"{name} {where} has 20000 characters, more than the 5000 allowed" in errors
    assert not RatingItem.objects.exists()


def test_the_rating_file_has_the_corpus_files_row_limit(admin, project, settings):
    settings.CORPUS_LIMITS = {**settings.CORPUS_LIMITS, "rows": 2}
    upload = SimpleUploadedFile("rows.jsonl", b'{"source": "a", "text": "b"}\n' * 3)
    answer = admin.post(_url(project), {"source": "system-outputs", "direction": "en-de", "file": upload})
    assert "more than 2 rows" in " ".join(answer.context["form"].errors["file"])
    assert not RatingItem.objects.exists()


@pytest.mark.parametrize("role", ["annotator", "viewer"])
def test_annotators_and_viewers_get_a_missing_page(client, project, languages, role):
    cands = make_candidates(project, languages, "en-de", count=1)
    Candidate.objects.filter(pk=cands[0].pk).update(status="accepted")
    client.force_login(user_create(username=f"someone_{role}", password="pass-123-abc", role=role, languages=["de"]))
    url, body = _url(project), {"source": "accepted-candidates"}
    hidden = [client.get(url), client.post(url, body)]
    assert not RatingItem.objects.exists()
    project.delete()  # the same requests for a project that is not there: the same answers, byte for byte
    for answer, missing in zip(hidden, [client.get(url), client.post(url, body)]):
        assert answer.status_code == 404 and _masked(answer) == _masked(missing)


def test_the_review_pages_link_to_it(admin, project):
    url = _url(project)  # on the review stage even before there is anything to review: files need no candidates
    assert url in admin.get(reverse("review:manage", args=[project.name])).content.decode()
    assert url in admin.get(reverse("projects:stage", args=[project.name, "review"])).content.decode()
