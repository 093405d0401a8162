"""Items made from existing rows (``exports/span_items.py``, ``manage.py make_span_items``): pseudo translations
with their injected errors' spans and ESA-AI spans from a metric's stored spans in a release; the command's
refusals write nothing."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import SpanItem
from annotation.spans import services
from exports.models import MetricScore, PseudoTranslation, Release
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def pseudo(project, languages, admin_user):
    cand = make_candidates(project, languages, "en-de", count=3)[2]  # "Der Bus fährt mittags ab."
    seg = cand.segment
    pt = PseudoTranslation.objects.create(
        segment=seg,
        level=1,
        key=str(cand.pk),
        text="Der Bus fährt mittags ab.",
        marked_text="Der <v>Bus</v> fährt mittags ab.",
        mqm_penalty=5,
        spans=[
            {
                "label": "Mistranslation-head",
                "error_type": "Mistranslation",
                "ref_start": 1,
                "ref_end": 2,
                "mt_start": 1,
                "mt_end": 2,
            }
        ],
    )
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    MetricScore.objects.create(
        release=release,
        metric="xcomet",
        direction=seg.direction,
        triplet_id=f"en-de/{seg.external_id}/Mistranslation-head",
        score=0.4,
        spans=[
            [4, 7],
            [14, 21, "minor"],
            [3, 5],
            [20, 99],
        ],  # the third overlaps the first, the last runs past the text
    )
    task = services.span_task_create(actor=admin_user, project=project, name="ai", protocol="esa", ai_metric="xcomet")
    return task, pt


def test_pseudo_translations_carry_injected_and_metric_spans(pseudo):
    task, pt = pseudo
    call_command("make_span_items", "demo", "ai", "--from", "pseudo-translations", "--level", "1", "--release", "1.0.0")
    item = SpanItem.objects.get(task=task)
    assert item.pseudo_translation_id == pt.pk and item.kind == "pseudo_translation"
    assert [item.translation[s:e] for s, e in item.injected_spans] == ["Bus"]
    assert item.ai_metric == "xcomet"
    assert item.ai_spans == [{"start": 4, "end": 7, "severity": "major"}, {"start": 14, "end": 21, "severity": "minor"}]
    assert [item.translation[a["start"] : a["end"]] for a in item.ai_spans] == ["Bus", "mittags"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "pseudo-translations", "--release", "9.9"], "--release 9.9: no release"),
        (
            ["--from", "pseudo-translations", "--release", "1.0.0", "--metric", "bleu"],
            "--metric bleu: release 1.0.0 holds no scores",
        ),
        (["--from", "pseudo-translations", "--direction", "en-fr"], "--direction en-fr: not a direction"),
        (["--from", "pseudo-translations", "--attention"], "--attention"),
        (["--from", "file"], "needs FILE and --direction"),
    ],
)
def test_bad_options_write_nothing(pseudo, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("make_span_items", "demo", "ai", *args)
    assert not SpanItem.objects.exists()
