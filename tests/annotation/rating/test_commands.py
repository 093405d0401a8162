"""The rating-item commands: import_rating_items (system outputs to rate) and make_rating_items (from accepted
candidates or pseudo translations)."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import RatingItem
from tests.annotation.review.factories import make_candidates
from tests.support.asserts import every

pytestmark = pytest.mark.django_db


def test_import_rating_items_jsonl(project, tmp_path, capsys):
    path = tmp_path / "out.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": "1", "source": "Hello.", "reference": "Hallo.", "text": "Hallo!"},
                {"id": "2", "source": "Bye.", "text": "Tschüss."},
            ]
        ),
        encoding="utf-8",
    )
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


def test_make_rating_items_from_accepted_candidates(project, languages, capsys):
    from injection.models import Candidate

    cands = make_candidates(project, languages, "en-de")
    Candidate.objects.filter(pk__in=[c.pk for c in cands[:4]]).update(status="accepted")
    call_command("make_rating_items", "demo", "--from", "accepted-candidates", "--limit", "3", "--seed", "1")
    items = RatingItem.objects.filter(kind="candidate")
    assert items.count() == 3 and every(i.candidate.status == "accepted" and i.text == i.candidate.text for i in items)
    call_command("make_rating_items", "demo", "--from", "accepted-candidates")
    assert RatingItem.objects.filter(kind="candidate").count() == 4


def test_make_rating_items_from_pseudo_translations(project, languages):
    from exports.models import PseudoTranslation

    cand = make_candidates(project, languages, "en-de", count=1)[0]
    PseudoTranslation.objects.create(
        segment=cand.segment, level=1, key=str(cand.pk), text=cand.text, marked_text=cand.text, mqm_penalty=5
    )
    call_command("make_rating_items", "demo", "--from", "pseudo-translations", "--level", "1")
    item = RatingItem.objects.get(kind="pseudo_translation")
    assert item.pseudo_translation.level == 1 and item.reference == cand.segment.reference


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--from", "pseudo-translations", "--limit", "0"],
            "argument --limit: must be at least 1, got 0",
        ),  # was: every item
        (
            ["--from", "pseudo-translations", "--limit", "-1"],
            "argument --limit: must be at least 1, got -1",
        ),  # was: a traceback
        (["--from", "pseudo-translations", "--level", "-1"], "--level -1: project demo has levels 0 to 5"),
        (["--from", "pseudo-translations", "--level", "6"], "--level 6: project demo has levels 0 to 5"),
        (["--from", "accepted-candidates", "--level", "1"], "use it with pseudo translations"),
        (
            ["--from", "accepted-candidates", "--direction", "en-fr"],
            r"--direction en-fr: not a direction of project demo \(en-ar, en-de, en-ja, en-zh\)",
        ),
    ],
)
def test_make_rating_items_refuses_bad_options_and_makes_nothing(project, languages, args, message):
    """Each used to make 0 items (or all, or fail with a traceback) without saying why."""
    from exports.models import PseudoTranslation
    from injection.models import Candidate

    cands = make_candidates(project, languages, "en-de", count=2)
    Candidate.objects.filter(pk__in=[c.pk for c in cands]).update(status="accepted")
    PseudoTranslation.objects.create(
        segment=cands[0].segment,
        level=1,
        key=str(cands[0].pk),
        text=cands[0].text,
        marked_text=cands[0].text,
        mqm_penalty=5,
    )
    with pytest.raises(CommandError, match=message):
        call_command("make_rating_items", "demo", *args)
    assert not RatingItem.objects.exists()


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ("s" * 201, "--system is 201 characters long, at most 200 fit"),
        ("sys\x00tem", "--system contains"),
        ("sys\x07tem", "--system contains control character"),
    ],
)
def test_import_rating_items_checks_the_system_option_like_the_column(project, tmp_path, system, message):
    path = tmp_path / "outputs.jsonl"
    path.write_text(json.dumps({"source": "Hello", "text": "Hallo"}) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=message):
        call_command("import_rating_items", "demo", "en-de", str(path), "--system", system)
    assert not RatingItem.objects.exists()
