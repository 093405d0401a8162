"""The span meta-evaluation variants (``exports/metaeval/span_measures.py``) against their authors' code:
sted19/span-mt-metrics-eval's ``compute`` (EM, MP), the WMT23 QE script's ``score_new`` and the WMT25 span
task's ``get_char_f1``, run on the committed inputs of ``tests/fixtures/spans`` by
``exports/metaeval/reference/make_span_fixtures.py`` (the EvalSet ratings read by mt-metrics-eval's
``ratings.ReadRatingFile``)."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from exports.metaeval import evalset, span_measures
from exports.metaeval.diagnostics import SpanTranslation, span_agreement
from exports.metaeval.span_measures import Marked, Span

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "spans"
INPUTS = {g["name"]: g for g in json.loads((FIXTURES / "inputs.json").read_text())["groups"]}
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _marked(translations) -> list[Marked]:
    return [
        Marked(t["length"], [Span(*s) for s in t["predicted"]], [Span(*s) for s in t["gold"]]) for t in translations
    ]


def _same(got: dict, want: dict) -> None:
    if want["f1"] is None:  # the WMT23 script stopped (a division by zero): the F-score is undefined here too
        assert got["f1"] is None
        return
    for key in ("precision", "recall", "f1"):
        if want[key] is None:
            assert got[key] is None, key
        else:
            assert got[key] == pytest.approx(want[key], abs=1e-12), key


@pytest.mark.parametrize("case", EXPECTED["groups"], ids=lambda c: c["name"])
@pytest.mark.parametrize("measure", sorted(span_measures.MEASURES))
def test_each_variant_equals_its_authors_code(case, measure):
    got = span_measures.MEASURES[measure](_marked(INPUTS[case["name"]]["translations"]))
    _same(got, case[measure])


@pytest.mark.parametrize("case", EXPECTED["ratings"], ids=lambda c: f"{c['rating']}-vs-{c['gold']}")
def test_evalset_ratings_read_as_mt_metrics_eval_reads_them_give_the_authors_figures(case):
    ratings = evalset.read_ratings(str(FIXTURES / "evalset"), case["evalset"], case["lp"])
    result = evalset.span_meta_evaluate(ratings, case["gold"])
    [row] = [r for r in result["ratings"] if r["rating"] == case["rating"]]
    assert row["n"] == case["n"]
    for measure in span_measures.MEASURES:
        _same(row["variants"][measure], case[measure])


@pytest.mark.parametrize("name", ["two predictions on one gold span", "overlapping predictions count twice for wmt25"])
def test_the_release_diagnostics_carry_the_variants_of_their_spans(name):
    # the release's spans have no severity (every one major): these fixture groups are all major
    [t] = INPUTS[name]["translations"]
    translation = SpanTranslation(
        1, ["Addition"], [tuple(s[:2]) for s in t["predicted"]], [tuple(s[:2]) for s in t["gold"]], t["length"]
    )
    [row, total] = span_agreement([translation])
    want = next(c for c in EXPECTED["groups"] if c["name"] == name)
    for measure in span_measures.MEASURES:
        _same(row["variants"][measure], want[measure])
        _same(total["variants"][measure], want[measure])


def test_the_command_compares_stored_ratings_and_refuses_a_bad_rating_naming_the_line(tmp_path):
    out = io.StringIO()
    root = str(FIXTURES / "evalset")
    call_command("metaeval", import_evalset=root, evalset="spans-demo", lp="en-de", span_gold="mqm", stdout=out)
    want = next(c for c in EXPECTED["ratings"] if (c["gold"], c["rating"]) == ("mqm", "auto-spans"))
    line = next(x for x in out.getvalue().splitlines() if x.strip().startswith("auto-spans"))
    assert f"partial {want['partial']['f1']:.3f}" in line and f"wmt25 {want['wmt25']['f1']:.3f}" in line
    out = io.StringIO()
    call_command(
        "metaeval", import_evalset=root, evalset="spans-demo", lp="en-de", span_gold="mqm", format="json", stdout=out
    )
    rows = {r["rating"]: r for r in json.loads(out.getvalue())["ratings"]}
    assert rows["auto-spans"]["variants"]["exact"]["f1"] == pytest.approx(want["exact"]["f1"])

    import shutil

    from django.core.management.base import CommandError

    bad = tmp_path / "spans-demo"
    shutil.copytree(FIXTURES / "evalset" / "spans-demo", bad)
    path = bad / "human-scores" / "en-de.auto-spans.seg.rating"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].split("\t")[0] + '\t{"errors": [{"start": "4", "end": 9}]}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match=r"en-de.auto-spans.seg.rating, line 4: error 1 needs integer"):
        call_command("metaeval", import_evalset=str(tmp_path), evalset="spans-demo", lp="en-de", span_gold="mqm")
    with pytest.raises(CommandError, match=r"no 'esa' ratings"):
        call_command("metaeval", import_evalset=root, evalset="spans-demo", lp="en-de", span_gold="esa")
