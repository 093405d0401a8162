"""Span annotation's writes against PostgreSQL: tasks and items, handing items out and resuming, submissions
(ESA score, MQM score from the weights, ESA-AI fates), attention items, exclusion, crowd workers."""

import pytest

from annotation.models import AuditEvent, CrowdWorker, ErrorSpan, SpanAnnotation, SpanItem, SpanTask
from annotation.spans import selectors, services
from core.domain.errors import Conflict, Forbidden, Invalid, NotFound
from core.services import ImportRejected
from exports import span_items
from tests.annotation.review.factories import make_candidates
from tests.annotation.spans.conftest import make_task

pytestmark = pytest.mark.django_db


def test_task_create_checks_and_audits(project, admin_user, annotator_de):
    with pytest.raises(Forbidden):
        services.span_task_create(actor=annotator_de, project=project, name="t", protocol="esa")
    with pytest.raises(Invalid) as exc:
        services.span_task_create(actor=admin_user, project=project, name="t", protocol="likert")
    assert exc.value.field == "protocol"
    task = services.span_task_create(actor=admin_user, project=project, name="t", protocol="mqm", is_crowd=True)
    assert task.crowd_token and task.completion_code
    with pytest.raises(Conflict):
        services.span_task_create(actor=admin_user, project=project, name="t", protocol="esa")
    assert AuditEvent.objects.filter(action="span_task.create", object_id=str(task.pk)).exists()


def test_a_bad_row_rejects_the_file_and_writes_nothing(project, admin_user):
    task = services.span_task_create(actor=admin_user, project=project, name="t", protocol="esa")
    rows = [
        {"id": "1", "source": "A.", "text": "B."},
        {"id": "2", "source": "", "text": "C."},
        {"id": "1", "source": "A", "text": "D"},
    ]
    with pytest.raises(ImportRejected) as exc:
        services.span_items_import(task=task, direction_code="en-de", rows=rows, source_name="f.tsv")
    assert any("f.tsv:2" in e and "source" in e for e in exc.value.errors)
    assert any("duplicate id '1'" in e for e in exc.value.errors)
    with pytest.raises(ImportRejected, match="not a direction"):
        services.span_items_import(task=task, direction_code="en-fr", rows=rows[:1], source_name="f.tsv")
    assert not SpanItem.objects.filter(task=task).exists()
    assert services.span_items_import(task=task, direction_code="en-de", rows=rows[:1], source_name="f.tsv") == 1
    assert services.span_items_import(task=task, direction_code="en-de", rows=rows[:1], source_name="f.tsv") == 0


def test_take_next_resumes_the_held_item_and_respects_the_languages(project, esa_task, annotator_de, annotator_ar):
    first = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    again = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    assert first.pk == again.pk and first.item.direction.code == "en-de"  # a reload resumes it
    ar = services.span_annotation_take_next(user=annotator_ar, task=esa_task)
    assert ar.item.direction.code == "en-ar"
    with pytest.raises(NotFound):  # another annotator's item answers as a missing one
        services.span_annotation_submit(
            user=annotator_ar, annotation_id=first.pk, spans=[], score=50, idempotency_key="k"
        )


def test_esa_submit_stores_spans_score_and_time(esa_task, annotator_de):
    a = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    spans = [
        {"side": "target", "start": 0, "end": 3, "severity": "major"},
        {"side": "source", "start": 0, "end": 3, "severity": "minor"},
    ]
    got, first = services.span_annotation_submit(
        user=annotator_de, annotation_id=a.pk, spans=spans, score=42, active_ms=1234, idempotency_key="k1"
    )
    assert first and got.score == 42 and got.active_ms == 1234 and got.submitted_at is not None
    assert sorted(ErrorSpan.objects.filter(annotation=a).values_list("side", "start", "end", "severity")) == [
        ("source", 0, 3, "minor"),
        ("target", 0, 3, "major"),
    ]
    # the same key and body again: the stored answer, nothing new
    again, first = services.span_annotation_submit(
        user=annotator_de, annotation_id=a.pk, spans=spans, score=42, idempotency_key="k1"
    )
    assert not first and again.pk == a.pk
    # a change with a new key: replaces the spans, adds the time
    services.span_annotation_submit(
        user=annotator_de, annotation_id=a.pk, spans=[], score=90, active_ms=100, idempotency_key="k2"
    )
    a.refresh_from_db()
    assert a.score == 90 and a.active_ms == 1334 and not a.spans.exists()
    assert AuditEvent.objects.filter(action="span_annotation.change").count() == 1


def test_mqm_score_is_computed_from_the_weights(mqm_task, annotator_de):
    a = services.span_annotation_take_next(user=annotator_de, task=mqm_task)
    n = len(a.item.translation)
    spans = [
        {"side": "target", "start": 0, "end": 3, "severity": "minor", "category": "fluency/grammar"},
        {"side": "target", "start": 4, "end": 9, "severity": "major", "category": "accuracy/mistranslation"},
    ]
    assert n > 9
    got, _ = services.span_annotation_submit(user=annotator_de, annotation_id=a.pk, spans=spans, idempotency_key="m1")
    assert got.score == -6.0
    with pytest.raises(Invalid, match="send no score"):
        services.span_annotation_submit(
            user=annotator_de, annotation_id=a.pk, spans=spans, score=50, idempotency_key="m2"
        )


def test_ai_spans_kept_edited_deleted_are_recorded(project, admin_user, annotator_de):
    task = services.span_task_create(actor=admin_user, project=project, name="ai", protocol="esa", ai_metric="xcomet")
    ai = [
        {"start": 0, "end": 3, "severity": "major"},
        {"start": 4, "end": 9, "severity": "minor"},
        {"start": 10, "end": 13, "severity": "major"},
    ]
    services.span_items_add(
        task=task,
        entries=[
            {
                "direction_id": project.directions.get(code="en-de").pk,
                "kind": "file",
                "external_id": "1",
                "source": "The cat sat.",
                "translation": "Die Katze saß hier.",
                "ai_spans": ai,
                "ai_metric": "xcomet",
            }
        ],
    )
    a = services.span_annotation_take_next(user=annotator_de, task=task)
    spans = [
        {"side": "target", "start": 0, "end": 3, "severity": "major", "ai_index": 0},  # kept
        {"side": "target", "start": 4, "end": 13, "severity": "minor", "ai_index": 1},  # widened: edited
        {"side": "target", "start": 14, "end": 19, "severity": "minor"},  # a new human span
    ]
    got, _ = services.span_annotation_submit(
        user=annotator_de, annotation_id=a.pk, spans=spans, score=30, idempotency_key="a1"
    )
    assert got.ai_fates == ["kept", "edited", "deleted"]
    assert sorted(ErrorSpan.objects.filter(annotation=a).values_list("origin", "ai_index")) == [
        ("human", None),
        ("metric", 0),
        ("metric", 1),
    ]


def test_attention_item_is_failed_by_missing_the_injected_span(project, languages, admin_user, annotator_de):
    task = services.span_task_create(actor=admin_user, project=project, name="att", protocol="esa")
    candidates = make_candidates(project, languages, "en-de", count=3)
    for c in candidates:
        c.status = "accepted"
        c.save(update_fields=["status"])
    assert span_items.make_span_items(task, span_items.ACCEPTED_CANDIDATES, attention=True) == 3
    item = SpanItem.objects.get(task=task, candidate=candidates[0])
    assert item.is_attention and item.translation[item.injected_spans[0][0] : item.injected_spans[0][1]] == "schwarze"
    # only attention items: none is handed out (no regular item left), so they never come last
    assert services.span_annotation_take_next(user=annotator_de, task=task) is None
    services.span_items_import(
        task=task, direction_code="en-de", rows=[{"source": "A b.", "text": "C d."}], source_name="f"
    )
    a = SpanAnnotation.objects.create(item=item, annotator=annotator_de)
    got, _ = services.span_annotation_submit(
        user=annotator_de,
        annotation_id=a.pk,
        spans=[{"side": "target", "start": 0, "end": 3, "severity": "minor"}],
        score=80,
        idempotency_key="t1",
    )
    assert got.attention_passed is False
    s, e = item.injected_spans[0]
    got, _ = services.span_annotation_submit(
        user=annotator_de,
        annotation_id=a.pk,
        spans=[{"side": "target", "start": s, "end": e, "severity": "major"}],
        score=60,
        idempotency_key="t2",
    )
    assert got.attention_passed is True


def test_exclusion_reopens_the_items_and_leaves_the_figures(esa_task, admin_user, annotator_de, second_de):
    taken = []
    while (a := services.span_annotation_take_next(user=annotator_de, task=esa_task)) is not None:
        services.span_annotation_submit(
            user=annotator_de, annotation_id=a.pk, spans=[], score=70, idempotency_key=f"x{a.pk}"
        )
        taken.append(a.item_id)
    assert len(taken) == 3 and services.span_annotation_take_next(user=second_de, task=esa_task) is None  # one per item
    with pytest.raises(Forbidden):
        services.annotator_action_record(actor=second_de, task=esa_task, annotator_id=annotator_de.pk, action="exclude")
    with pytest.raises(NotFound):
        services.annotator_action_record(actor=admin_user, task=esa_task, annotator_id=second_de.pk, action="exclude")
    services.annotator_action_record(
        actor=admin_user, task=esa_task, annotator_id=annotator_de.pk, action="exclude", reason="fails checks"
    )
    assert selectors.completed_annotations(esa_task).count() == 0
    assert services.span_annotation_take_next(user=annotator_de, task=esa_task) is None
    b = services.span_annotation_take_next(user=second_de, task=esa_task)
    assert b is not None and b.item_id in taken
    row = next(r for r in selectors.quality_rows(esa_task) if r["username"] == annotator_de.username)
    assert row["excluded"] and row["last_action"] == "exclude"
    assert AuditEvent.objects.filter(action="span_annotator.exclude").exists()


def test_crowd_worker_keeps_only_prolific_ids_and_gets_the_code(project, admin_user):
    task = make_task(project, admin_user, name="crowd", is_crowd=True, crowd_items=2)
    with pytest.raises(NotFound):
        services.crowd_worker_ensure(task_id=task.pk, token="wrong", prolific_pid="P1", study_id="S1", session_id="X1")
    with pytest.raises(Invalid) as exc:
        services.crowd_worker_ensure(
            task_id=task.pk, token=task.crowd_token, prolific_pid="P 1<", study_id="S1", session_id="X1"
        )
    assert exc.value.field == "PROLIFIC_PID"
    user, _ = services.crowd_worker_ensure(
        task_id=task.pk, token=task.crowd_token, prolific_pid="P1", study_id="S1", session_id="X1"
    )
    assert not user.has_usable_password() and not user.email and not user.first_name
    same, _ = services.crowd_worker_ensure(
        task_id=task.pk, token=task.crowd_token, prolific_pid="P1", study_id="S1", session_id="X2"
    )
    assert same.pk == user.pk and CrowdWorker.objects.count() == 1
    assert services.crowd_completion_code_read(user=user, task=task) is None
    for i in range(2):
        a = services.span_annotation_take_next(user=user, task=task)
        assert a is not None
        services.span_annotation_submit(user=user, annotation_id=a.pk, spans=[], score=50, idempotency_key=f"c{i}")
    assert services.span_annotation_take_next(user=user, task=task) is None  # the worker's share is done
    assert services.crowd_completion_code_read(user=user, task=task) == task.completion_code
    assert CrowdWorker.objects.get(user=user).completed_at is not None
    # a crowd worker sees this task only
    other = SpanTask.objects.create(project=project, name="other", protocol="esa")
    with pytest.raises(Exception):  # noqa: B017 - Http404 of access.not_found
        selectors.work_task(user, project.name, other.name)


def test_a_closed_task_hands_out_nothing_and_refuses_submissions(esa_task, annotator_de):
    a = services.span_annotation_take_next(user=annotator_de, task=esa_task)
    SpanTask.objects.filter(pk=esa_task.pk).update(is_open=False)
    esa_task.refresh_from_db()
    assert services.span_annotation_take_next(user=annotator_de, task=esa_task) is None
    with pytest.raises(Conflict, match="closed"):
        services.span_annotation_submit(user=annotator_de, annotation_id=a.pk, spans=[], score=50, idempotency_key="z1")
    a.refresh_from_db()
    assert a.submitted_at is None
