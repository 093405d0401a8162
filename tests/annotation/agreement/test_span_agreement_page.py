"""The span agreement page of an error-span task: the statistics of the stored annotations (through the span
room's own services) per direction, equal to the pure report on the same spans worked out by hand, and seen
only by those who see the project's direction."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.agreement import selectors as sel
from annotation.agreement.domain import spans as sp
from annotation.spans import services
from core.services import user_create
from tests.support.asserts import every

pytestmark = pytest.mark.django_db

TEXTS = [
    {"id": "s1", "source": "The cat sat on the mat.", "text": "Die Katze saß auf der Matte."},
    {"id": "s2", "source": "It rains today.", "text": "Es regnet heute."},
]


@pytest.fixture
def annotated(project, admin_user):
    task = services.span_task_create(
        actor=admin_user, project=project, name="esa-1", protocol="esa", annotators_per_item=2
    )
    services.span_items_import(task=task, direction_code="en-de", rows=TEXTS, source_name="texts.jsonl")
    marks = {  # annotator -> item id -> (spans, score)
        "ann_a": {"s1": ([{"start": 4, "end": 9, "severity": "major"}], 60), "s2": ([], 95)},
        "ann_b": {
            "s1": ([{"start": 4, "end": 9, "severity": "minor"}, {"start": 10, "end": 13, "severity": "minor"}], 70),
            "s2": ([], 90),
        },
    }
    for name, per_item in marks.items():
        user = user_create(username=name, password=f"{name}-pass-123", languages=["de"])
        for n in range(2):
            annotation = services.span_annotation_take_next(user=user, task=task)
            spans, score = per_item[annotation.item.external_id]
            services.span_annotation_submit(
                user=user, annotation_id=annotation.pk, spans=spans, score=score, idempotency_key=f"{name}-{n}"
            )
    return task


def test_the_inputs_are_the_stored_spans_and_the_figures_those_of_the_pure_report(annotated):
    inputs = sel.span_inputs(annotated)
    assert list(inputs) == ["en-de"]
    items, annotations = inputs["en-de"]
    assert sorted(i.mt_length for i in items) == [16, 28] and every(i.injected is None for i in items)
    assert len(annotations) == 4
    # s1: a marks 4–9 major (5 chars), b marks 4–9 minor + 10–13 (8 chars): any-severity F1 2·5/(5+8); s2 none
    report = sel.span_agreement(annotated)[0]
    assert report["direction"] == "en-de" and report["items_with_two"] == 2
    assert report["character_f1"]["estimate"] == pytest.approx(10 / 13)
    assert report["character_f1_severity"]["estimate"] == 0.0
    assert report["character_alpha"]["estimate"] == pytest.approx(sp.character_alpha(items, annotations))
    assert report["score_alpha"]["estimate"] == pytest.approx(sp.score_alpha_ci(items, annotations).estimate)
    assert report["injected"]["found"]["estimate"] is None  # no known errors in a file's texts


def test_the_page_shows_them_to_whoever_sees_the_direction(annotated, client, admin_user, annotator_zh):
    url = reverse("agreement:spans", args=["demo", "esa-1"])
    client.force_login(admin_user)
    page = client.get(url).content.decode()
    assert "Character F1 between annotators (any severity)" in page and "0.769" in page
    assert f'href="{url}"' in client.get(reverse("agreement:dashboard", args=["demo"])).content.decode()
    viewer = user_create(username="viewer_de", password="viewer-pass-123", role="viewer", languages=["de"])
    client.force_login(viewer)
    assert client.get(url).status_code == 200
    client.force_login(annotator_zh)  # sees the project, not en-de
    page = client.get(url)
    assert page.status_code == 200 and "direction-en-de" not in page.content.decode()
    assert client.get(reverse("agreement:spans", args=["demo", "nope"])).status_code == 404
    stranger = user_create(username="stranger", password="stranger-pass-123", languages=["fr"])
    client.force_login(stranger)
    assert client.get(url).status_code == 404


def test_the_quality_page_links_the_agreement_page(annotated, client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("spans:quality", args=["demo", "esa-1"])).content.decode()
    assert reverse("agreement:spans", args=["demo", "esa-1"]) in page


def test_the_page_never_computes_while_a_computation_is_queued(annotated, client, admin_user):
    """With a worker queue, the page shows what the cache holds: while the task's computation is pending it
    says so and reloads; once the task has run, the figures (the task is idempotent: a second run is a hit)."""
    from django.core.cache import cache

    from annotation.agreement import tasks

    cache.clear()
    cache.add(tasks._span_pending_key(annotated.pk, None), 1, 300)  # a computation queued for a worker
    client.force_login(admin_user)
    url = reverse("agreement:spans", args=["demo", "esa-1"])
    page = client.get(url).content.decode()
    assert "being computed in the background" in page and "0.769" not in page
    assert sel.cached_span_agreement(annotated) is None
    assert tasks.refresh_span_agreement.apply((annotated.pk, None)).get() == {"task": annotated.pk, "directions": 1}
    assert sel.cached_span_agreement(annotated)[0]["character_f1"]["estimate"] == pytest.approx(10 / 13)
    assert tasks.refresh_span_agreement.apply((annotated.pk, None)).get() == {"task": annotated.pk, "directions": 1}
    page = client.get(url).content.decode()
    assert "0.769" in page and "being computed" not in page
