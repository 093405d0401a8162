"""The span pages: the task list (aggregates for viewers), start and resume, the screen's tokens and bidi
isolation, the admin's quality page and actions, the items page, and the Prolific link."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import CrowdWorker, SpanAnnotatorAction, SpanItem
from annotation.spans import services
from core.services import user_create
from tests.annotation.spans.conftest import client_for, make_task

pytestmark = pytest.mark.django_db


def test_admin_makes_a_task_and_annotators_start_it(project, admin_user, annotator_de):
    admin = client_for(admin_user, "admin-pass-123")
    r = admin.post(
        reverse("spans:tasks", args=[project.name]), {"name": "wmt", "protocol": "mqm", "annotators_per_item": "1"}
    )
    assert r.status_code == 302
    r = admin.post(reverse("spans:tasks", args=[project.name]), {"name": "bad name!", "protocol": "mqm"}, follow=True)
    assert "letters, digits" in r.content.decode()
    annotator = client_for(annotator_de, "anna-pass-123")
    assert (
        annotator.post(reverse("spans:tasks", args=[project.name]), {"name": "x", "protocol": "esa"}).status_code == 404
    )
    r = admin.post(
        reverse("projects:span_items", args=[project.name, "wmt"]),
        {
            "source": "system-outputs",
            "direction": "en-de",
            "file": _upload("id\tsource\ttext\n1\tThe cat.\tDie Katze.\n"),
        },
    )
    assert r.status_code == 302 and SpanItem.objects.filter(task__name="wmt").count() == 1
    page = annotator.get(reverse("spans:tasks", args=[project.name])).content.decode()
    assert "wmt" in page and "Quality" not in page
    r = annotator.post(reverse("spans:start", args=[project.name, "wmt"]))
    assert r.status_code == 302 and "/spans/a/" in r["Location"]
    page = annotator.get(r["Location"]).content.decode()
    assert 'data-s="4" data-e="10"' in page and "Katze." in page and 'id="spans-config"' in page
    # a reload resumes the same item
    assert annotator.post(reverse("spans:start", args=[project.name, "wmt"]))["Location"] == r["Location"]


def _upload(text):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("items.tsv", text.encode())


def _post_items(project, admin_user, text):
    """An ESA task ``t`` made by the admin, and ``text`` posted as its items file: (answer, task)."""
    task = services.span_task_create(actor=admin_user, project=project, name="t", protocol="esa")
    admin = client_for(admin_user, "admin-pass-123")
    answer = admin.post(
        reverse("projects:span_items", args=[project.name, task.name]),
        {"source": "system-outputs", "direction": "en-de", "file": _upload(text)},
    )
    return answer, task


def test_the_items_page_names_a_bad_line_and_imports_nothing(project, admin_user):
    r, task = _post_items(project, admin_user, "id\tsource\ttext\n1\tA.\tB.\n2\t\tC.\n")
    assert r.status_code == 200 and "items.tsv line 3: field &#x27;source&#x27; is empty" in r.content.decode()
    assert not SpanItem.objects.filter(task=task).exists()


def test_an_oversized_items_file_is_refused_before_it_is_read(project, admin_user, settings):
    """The upload limit of every upload form (docs/security.md, "Input limits") holds on the span items page too."""
    settings.CORPUS_UPLOAD_MAX_BYTES = 10
    r, task = _post_items(project, admin_user, "id\tsource\ttext\n1\tA.\tB.\n")
    assert r.status_code == 200 and "more than the 10 allowed" in r.content.decode()
    assert not SpanItem.objects.filter(task=task).exists()


def test_rtl_text_is_rendered_right_to_left_in_its_own_isolate(project, admin_user, annotator_ar):
    task = make_task(project, admin_user)
    a = services.span_annotation_take_next(user=annotator_ar, task=task)
    page = client_for(annotator_ar, "sara-pass-123").get(reverse("spans:annotate", args=[a.pk])).content.decode()
    assert 'id="target-text" data-side="target" lang="ar" dir="rtl"' in page and '<bdi dir="rtl">' in page


def test_quality_page_and_actions_are_the_admins(project, admin_user, annotator_de, esa_task):
    a = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    services.span_annotation_submit(user=annotator_de, annotation_id=a.pk, spans=[], score=10, idempotency_key="q1")
    url = reverse("spans:quality", args=[project.name, esa_task.name])
    assert client_for(annotator_de, "anna-pass-123").get(url).status_code == 404
    admin = client_for(admin_user, "admin-pass-123")
    page = admin.get(url).content.decode()
    assert "anna_de" in page and 'id="agreement-link"' in page
    action = reverse("spans:annotator_action", args=[project.name, esa_task.name, annotator_de.pk])
    assert client_for(annotator_de, "anna-pass-123").post(action, {"action": "exclude"}).status_code == 404
    assert admin.post(action, {"action": "retrain", "reason": "re-read"}).status_code == 302
    assert SpanAnnotatorAction.objects.get().action == "retrain"
    start = client_for(annotator_de, "anna-pass-123").get(reverse("spans:start", args=[project.name, esa_task.name]))
    assert 'id="retrain-notice"' in start.content.decode()


def test_prolific_link_makes_a_one_campaign_annotator(project, admin_user):
    task = make_task(project, admin_user, name="crowd", is_crowd=True, crowd_items=1)
    client = Client()
    url = reverse("spans:crowd", args=[task.pk, task.crowd_token])
    assert client.get(url + "?PROLIFIC_PID=abc").status_code == 400  # the study and session ids are missing
    assert (
        client.get(
            reverse("spans:crowd", args=[task.pk, "nope"]) + "?PROLIFIC_PID=a&STUDY_ID=b&SESSION_ID=c"
        ).status_code
        == 404
    )
    r = client.get(url + "?PROLIFIC_PID=abc&STUDY_ID=st1&SESSION_ID=se1")
    assert r.status_code == 302 and r["Location"] == reverse("spans:start", args=[project.name, task.name])
    worker = CrowdWorker.objects.get()
    assert (worker.prolific_pid, worker.study_id, worker.session_id) == ("abc", "st1", "se1")
    r = client.post(r["Location"])
    a = worker.user.span_annotations.get()
    services.span_annotation_submit(user=worker.user, annotation_id=a.pk, spans=[], score=40, idempotency_key="c1")
    r = client.post(reverse("spans:start", args=[project.name, task.name]))
    assert r["Location"] == reverse("spans:done", args=[project.name, task.name])
    assert task.completion_code in client.get(r["Location"]).content.decode()
    # the worker reaches nothing else of the project
    assert client.get(reverse("projects:detail", args=[project.name])).status_code == 404
    other = user_create(username="zed", password="zed-pass-123", role="viewer", languages=["de"])
    assert other.pk != worker.user_id


def test_previous_item_reopens_the_submitted_one_with_its_spans(project, annotator_de, esa_task):
    client = client_for(annotator_de, "anna-pass-123")
    first = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    spans = [{"side": "target", "start": 0, "end": 3, "severity": "major"}]
    services.span_annotation_submit(
        user=annotator_de, annotation_id=first.pk, spans=spans, score=12, idempotency_key="p1"
    )
    second = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    page = client.get(reverse("spans:annotate", args=[second.pk])).content.decode()
    assert f'href="{reverse("spans:annotate", args=[first.pk])}"' in page
    page = client.get(reverse("spans:annotate", args=[first.pk])).content.decode()
    assert 'id="resubmit-notice"' in page and '"spans": [{"side": "target", "start": 0, "end": 3' in page
