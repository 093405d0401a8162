"""The rating-item import command and the lock housekeeping task."""
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.models import RatingItem, ReviewLock
from annotation.review.tasks import release_expired_locks
from tests.review.factories import make_candidates

pytestmark = pytest.mark.django_db


def test_import_rating_items_jsonl(project, tmp_path, capsys):
    path = tmp_path / "out.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "source": "Hello.", "reference": "Hallo.", "text": "Hallo!"},
        {"id": "2", "source": "Bye.", "text": "Tschüss."},
    ]), encoding="utf-8")
    call_command("import_rating_items", "demo", "en-de", str(path), "--system", "sysA")
    assert RatingItem.objects.filter(system="sysA", kind="system_output").count() == 2
    call_command("import_rating_items", "demo", "en-de", str(path), "--system", "sysA")
    assert "0 rating items created, 2 unchanged" in capsys.readouterr().out


def test_import_rating_items_rejects_bad_rows(project, tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("id\tsource\ttext\n1\tHello.\t\n2\t\tHallo\n", encoding="utf-8")
    with pytest.raises(CommandError) as exc:
        call_command("import_rating_items", "demo", "en-de", str(path))
    assert "bad.tsv line 2: field 'text' is empty" in str(exc.value)
    assert "bad.tsv line 3: field 'source' is empty" in str(exc.value)
    assert not RatingItem.objects.exists()
    with pytest.raises(CommandError, match="not a direction"):
        call_command("import_rating_items", "demo", "en-fr", str(path))


def test_release_expired_locks(project, languages, annotator_de):
    cands = make_candidates(project, languages, "en-de", count=2)
    now = timezone.now()
    ReviewLock.objects.create(candidate=cands[0], reviewer=annotator_de, expires_at=now - timedelta(seconds=5))
    ReviewLock.objects.create(candidate=cands[1], reviewer=annotator_de, expires_at=now + timedelta(minutes=5))
    assert release_expired_locks.delay().get() == 1
    assert release_expired_locks.delay().get() == 0
    assert ReviewLock.objects.count() == 1


def test_make_rating_items_from_accepted_candidates(project, languages, capsys):
    from injection.models import Candidate

    cands = make_candidates(project, languages, "en-de")
    Candidate.objects.filter(pk__in=[c.pk for c in cands[:4]]).update(status="accepted")
    call_command("make_rating_items", "demo", "--from", "accepted-candidates", "--limit", "3", "--seed", "1")
    items = RatingItem.objects.filter(kind="candidate")
    assert items.count() == 3 and all(i.candidate.status == "accepted" and i.text == i.candidate.text for i in items)
    call_command("make_rating_items", "demo", "--from", "accepted-candidates")
    assert RatingItem.objects.filter(kind="candidate").count() == 4


def test_make_rating_items_from_pseudo_translations(project, languages):
    from exports.models import PseudoTranslation

    cand = make_candidates(project, languages, "en-de", count=1)[0]
    PseudoTranslation.objects.create(segment=cand.segment, level=1, key=str(cand.pk), text=cand.text, marked_text=cand.text, mqm_penalty=5)
    call_command("make_rating_items", "demo", "--from", "pseudo-translations", "--level", "1")
    item = RatingItem.objects.get(kind="pseudo_translation")
    assert item.pseudo_translation.level == 1 and item.reference == cand.segment.reference
