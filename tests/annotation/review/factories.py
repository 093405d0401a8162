"""Build review data through the ORM: gold segments, an injection run and candidates with real spans."""

from __future__ import annotations

from core.domain.units import apply_edit, diff_edit, join_units, split_units
from core.models import GoldSegment
from injection.models import Candidate, InjectionRun

# (direction, source, reference, candidate) — candidates differ from the reference by one edit.
SAMPLES = {
    "en-de": [
        ("The cat sat on the mat.", "Die Katze saß auf der Matte.", "Die schwarze Katze saß auf der Matte."),
        ("He bought three apples.", "Er kaufte drei Äpfel.", "Er kaufte Äpfel."),
        ("The train leaves at noon.", "Der Zug fährt mittags ab.", "Der Bus fährt mittags ab."),
        ("She reads a book.", "Sie liest ein Buch.", "Sie reads ein Buch."),
        ("We met in Berlin.", "Wir trafen uns in Berlin.", "Wir trafen uns gestern in Berlin."),
        ("The river is wide.", "Der Fluss ist breit.", "Der Fluss ist schmal."),
        ("They sing loudly.", "Sie singen laut.", "Sie singen."),
    ],
    "en-zh": [
        ("The cat sat on the mat.", "猫坐在垫子上。", "黑猫坐在垫子上。"),
        ("He bought three apples.", "他买了三个苹果。", "他买了苹果。"),
    ],
    "en-ar": [
        ("The book is new.", "الكتاب جديد.", "الكتاب قديم."),
    ],
}
TYPES = ["Addition", "Omission", "Mistranslation", "Untranslated", "Addition", "Mistranslation", "Omission"]


def make_run(project, name="test-run"):
    run, _ = InjectionRun.objects.get_or_create(project=project, name=name, defaults={"backend": "import"})
    return run


def make_candidate(
    project, direction, source, reference, text, *, error_type="Mistranslation", external_id=None, run=None, **fields
):
    lang = direction.target.code
    segment, _ = GoldSegment.objects.get_or_create(
        project=project,
        direction=direction,
        external_id=external_id or f"{direction.code}-{reference[:20]}",
        defaults={"source": source, "reference": reference},
    )
    edit = diff_edit(reference, text, lang)
    assert edit is not None and apply_edit(reference, edit, lang) == join_units(split_units(text, lang), lang)
    return Candidate.objects.create(
        run=run or make_run(project),
        segment=segment,
        error_type=error_type,
        position="head",
        text=text,
        span_start=edit.start,
        span_end=edit.end,
        edit_text=join_units(edit.replacement, lang),
        **fields,
    )


def make_candidates(project, languages, code="en-de", count=None):
    rows = SAMPLES[code][: count or len(SAMPLES[code])]
    return [
        make_candidate(project, languages[code], s, r, t, error_type=TYPES[i % len(TYPES)], external_id=f"{code}-{i}")
        for i, (s, r, t) in enumerate(rows)
    ]
