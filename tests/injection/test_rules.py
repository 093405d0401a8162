"""The offline rule backend on the shared XQ-MEval references, all 9 languages: every type yields a valid
single-span candidate in the requested half, or a recorded reason why not."""

from __future__ import annotations

import collections

import pandas as pd
import pytest

from core.domain.edit_types import MQM, PERTURBATION, types_of
from core.domain.units import apply_edit, count_edited_regions, diff_edit, position_of_edit, split_units
from injection import services
from injection.domain.checks import run_checks
from injection.domain.rule_edits import DonorPool, RuleRefused, rule_edit
from injection.models import Candidate, InjectionItem
from tests.support.asserts import every

LANGUAGES = ["de", "es", "fr", "id", "ja", "lo", "si", "vi", "zh"]
# What a rule cannot do, by design (needs a lexicon or a word segmenter): the only refusals allowed.
NEEDS_MODEL = {"Synonym", "Intensifier", "Expansion (No Impact)", "Alteration"}
CHAR_LANGS = {"ja", "lo", "zh"}


def gold_pairs(shared_data, language: str) -> list[tuple[str, str, str]]:
    frame = pd.read_parquet(
        shared_data / "candidates" / f"en-{language}-Addition.parquet", columns=["segment_id", "src", "ref"]
    )
    frame = frame.drop_duplicates("segment_id")
    return [(str(row.segment_id), row.src, row.ref) for row in frame.itertuples()]


@pytest.mark.shared_data
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_type_gives_a_single_span_edit_or_a_reason(shared_data, language):
    pairs = gold_pairs(shared_data, language)
    pool = DonorPool([ref for _, _, ref in pairs], language)
    outcomes = collections.Counter()
    for segment_id, source, reference in pairs:
        for kind in (MQM, PERTURBATION):
            for edit_type in types_of(kind):
                for position in edit_type.positions:
                    try:
                        result = rule_edit(
                            reference=reference,
                            source=source,
                            language=language,
                            kind=kind,
                            error_type=edit_type.name,
                            position=position,
                            seed=42,
                            item_key=segment_id,
                            donors=pool,
                        )
                    except RuleRefused as exc:
                        assert str(exc), "a refusal must say why"  # noqa: PT017  (one outcome of the sweep)
                        outcomes[(kind, edit_type.name, "refused")] += 1
                        continue
                    outcomes[(kind, edit_type.name, "ok")] += 1
                    edit = diff_edit(reference, result.text, language)
                    assert edit == result.edit and edit is not None
                    assert split_units(apply_edit(reference, edit, language), language) == split_units(
                        result.text, language
                    )
                    regions = count_edited_regions(reference, result.text, language)
                    assert regions == 1 or (edit_type.name == "Word Order" and regions == 2)
                    if kind == MQM:
                        assert position_of_edit(edit, reference, language) == position
                        checks, flags = run_checks(
                            reference=reference,
                            candidate_text=result.text,
                            edit=edit,
                            language=language,
                            kind=kind,
                            error_type=edit_type.name,
                            position=position,
                            source=source,
                            regions=regions,
                        )
                        hard = {"changed", "single_region", "in_requested_half", "omission_deletes", "local_edit"}
                        assert not hard & set(flags), (segment_id, edit_type.name, position, result.note, checks)
    # Every MQM type succeeds on every reference; refusals only where a rule cannot do the edit.
    for edit_type in types_of(MQM):
        assert outcomes[(MQM, edit_type.name, "refused")] == 0, outcomes
        assert outcomes[(MQM, edit_type.name, "ok")] == 2 * len(pairs)
    for (kind, name, outcome), count in outcomes.items():
        if outcome == "refused":
            assert kind == PERTURBATION and (
                name in NEEDS_MODEL or language in CHAR_LANGS and name in {"Spelling", "Word Order"}
            ), (name, count)


def test_rule_edits_are_deterministic_for_a_seed():
    reference = "Führende Forscher sagen, dass dies die Früherkennung von Krebs für Patienten bringen könnte."
    source = "Lead researchers say this may bring early detection of cancer to patients."
    pool = DonorPool([reference, "Die Gripen stürzte gegen Mittag auf eine Startbahn und explodierte sofort."], "de")
    runs = [
        rule_edit(
            reference=reference,
            source=source,
            language="de",
            kind=MQM,
            error_type="Addition",
            position="end",
            seed=seed,
            item_key="x",
            donors=pool,
        ).text
        for seed in (1, 1, 2, 3, 4)
    ]
    assert runs[0] == runs[1]
    assert len(set(runs)) > 1  # the seed matters


def test_untranslated_uses_english_source_words_not_names():
    reference = "Am Montag haben die Wissenschaftler der Universität ein neues Werkzeug vorgestellt."
    source = "On Monday, scientists from Stanford University announced a new diagnostic tool."
    result = rule_edit(
        reference=reference,
        source=source,
        language="de",
        kind=MQM,
        error_type="Untranslated",
        position="end",
        seed=7,
        item_key="a",
        donors=DonorPool([reference], "de"),
    )
    inserted = " ".join(result.edit.replacement).strip(".,").split()
    assert inserted and every(word.lower() in source.lower() for word in inserted)
    assert "Stanford" not in inserted and "Monday" not in inserted


def test_refusal_reason_for_a_one_word_reference():
    with pytest.raises(RuleRefused, match="fewer than two units"):
        rule_edit(
            reference="Ja.", source="Yes.", language="de", kind=MQM, error_type="Omission", position="head", seed=1
        )


@pytest.mark.shared_data
@pytest.mark.django_db
def test_rule_run_on_shared_data_records_candidates_or_reasons(shared_data, project):
    from core.corpus.domain import CorpusRow
    from core.corpus.services import corpus_rows_import
    from core.services import project_directions_add

    project_directions_add(project=project, codes=[f"en-{lang}" for lang in LANGUAGES])
    for language in LANGUAGES:
        rows = [
            CorpusRow(sid, src, ref, f"{language} row {i}")
            for i, (sid, src, ref) in enumerate(gold_pairs(shared_data, language)[:6])
        ]
        corpus_rows_import(project=project, direction_code=f"en-{language}", rows=rows, source_name="shared")
    directions = [f"en-{lang}" for lang in LANGUAGES]
    mqm = services.run_execute(
        run_id=services.run_plan(
            spec=services.RunSpec(project=project, kind="mqm", backend="rule", directions=directions)
        ).pk
    )
    assert mqm.total == 9 * 6 * 8 and mqm.done == mqm.total and mqm.failed == 0
    assert Candidate.objects.filter(run=mqm, prompt_version__startswith="xqmeval-").count() == mqm.total
    assert not Candidate.objects.filter(run=mqm, flags__icontains='"in_requested_half"').exists()
    perturbation = services.run_execute(
        run_id=services.run_plan(
            spec=services.RunSpec(project=project, kind="perturbation", backend="rule", directions=directions)
        ).pk
    )
    assert perturbation.done + perturbation.failed == perturbation.total == 9 * 6 * 8
    for item in InjectionItem.objects.filter(run=perturbation, status="failed"):
        assert item.error.startswith("rule refused: ") and len(item.error) > 20
    assert Candidate.objects.filter(run=perturbation, error_type="Omission", severity="critical").count() == 9 * 6
