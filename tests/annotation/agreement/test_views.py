"""Dashboard, downloads, plots and the command over a project with live decisions and ratings; the
permissions of every endpoint."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.agreement import selectors as sel
from core.services import user_create
from injection.models import Candidate


def login(client, user):
    client.force_login(user)
    return client


def url(name, **kw):
    return reverse(f"agreement:{name}", kwargs=kw)


def command_json(*args) -> dict:
    out = io.StringIO()
    call_command("agreement", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_admin_dashboard_shows_the_numbers(client, world):
    login(client, world.users["admin"])
    response = client.get(url("dashboard", project="demo"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Accept/reject agreement by language" in html and "Annotator quality and gold items" in html
    report = sel.project_report(world.project)
    de = next(r for r in report["languages"] if r["language"] == "de")
    assert f"{de['percent_agreement']:.3f}" in html and f"{de['krippendorff_alpha']:.3f}" in html
    assert "Agreement per reviewer pair" in html and "anna_de" in html
    assert f'href="{url("index")}"' in html  # the nav link in base.html
    for plot in ("by-language", "by-error-type", "rwg", "score-vs-agreement", "annotators"):
        assert url("plot", project="demo", plot=plot) in html


@pytest.mark.parametrize("table", sel.TABLES)
def test_downloads_equal_the_command(client, world, table):
    login(client, world.users["admin"])
    from_command = command_json("demo")["tables"][table]
    as_json = client.get(url("download", project="demo", table=table, fmt="json"))
    assert as_json.status_code == 200 and as_json["Content-Type"] == "application/json"
    assert json.loads(as_json.content)["rows"] == from_command
    assert from_command, f"table {table} is empty over live data"
    as_csv = client.get(url("download", project="demo", table=table, fmt="csv"))
    assert as_csv.status_code == 200 and "attachment" in as_csv["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    assert len(rows) == len(from_command)
    for parsed, original in zip(rows, from_command):
        for key, value in original.items():
            if isinstance(value, float):
                assert float(parsed[key]) == value  # exact, not rounded
            elif value is None:
                assert parsed[key] == ""


def test_command_csv_and_errors(world):
    out = io.StringIO()
    call_command("agreement", "demo", "--format", "csv", "--table", "languages", stdout=out)
    text = out.getvalue()
    assert text.startswith("# table: languages\n")
    rows = list(csv.DictReader(io.StringIO(text.split("\n", 1)[1].strip())))
    assert {r["language"] for r in rows} == {"de", "zh"}
    de = next(r for r in rows if r["language"] == "de")
    assert float(de["percent_agreement"]) == pytest.approx(0.75, abs=1e-12)
    only_zh = command_json("demo", "--language", "zh")["tables"]["languages"]
    assert [r["language"] for r in only_zh] == ["zh"]
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("agreement", "nope", stdout=io.StringIO())


def test_annotator_sees_only_their_languages_aggregates(client, world):
    login(client, world.users["anna_de"])
    assert url("dashboard", project="demo") in client.get(url("index")).content.decode()
    response = client.get(url("dashboard", project="demo"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "your languages: de" in html
    assert "Agreement per reviewer pair" not in html and "Annotator quality and gold items" not in html
    assert "ben_de" not in html
    data = json.loads(client.get(url("download", project="demo", table="languages", fmt="json")).content)
    assert [r["language"] for r in data["rows"]] == ["de"]
    for table in ("reviewer_pairs", "annotators", "likert_raters", "gold"):
        assert client.get(url("download", project="demo", table=table, fmt="csv")).status_code == 403
    assert client.get(url("plot", project="demo", plot="annotators")).status_code == 403
    assert client.get(url("plot", project="demo", plot="by-language")).status_code == 200
    assert client.get(url("annotators", project="demo")).status_code == 403
    assert client.post(url("annotators", project="demo"), {"rate": "0.1"}).status_code == 403
    assert not Candidate.objects.filter(is_gold=True).exists()


def test_outsiders_and_anonymous(client, world):
    for name, kw in [
        ("index", {}),
        ("dashboard", {"project": "demo"}),
        ("annotators", {"project": "demo"}),
        ("download", {"project": "demo", "table": "languages", "fmt": "json"}),
        ("plot", {"project": "demo", "plot": "rwg"}),
    ]:
        response = client.get(url(name, **kw))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], name
    login(client, user_create(username="fr_only", password="fr-pass-123", languages=["fr"]))
    assert "demo" not in client.get(url("index")).content.decode()
    for name, kw in [
        ("dashboard", {"project": "demo"}),
        ("annotators", {"project": "demo"}),
        ("download", {"project": "demo", "table": "languages", "fmt": "json"}),
        ("plot", {"project": "demo", "plot": "by-language"}),
    ]:
        expected = (
            403 if name == "annotators" else 404
        )  # an admin-only page refuses before the lookup, any project alike
        assert client.get(url(name, **kw)).status_code == expected, name


# ---- blind ratings: no Likert figure for anyone but admins -------------------------------------------------

LIKERT_TABLES = ("likert_dimensions", "likert_composite", "likert_items", "likert_raters")


@pytest.mark.parametrize("who", ["anna_de", "viewer"])
def test_likert_ratings_stay_blind_for_annotators_and_viewers(client, world, who):
    """Issue 36: anna, who has not rated an item, read every rater's scores for it in likert_items.csv (with two
    raters she works out the other's from her own). Now no Likert table, plot or section reaches a non-admin."""
    user = (
        world.users[who]
        if who != "viewer"
        else user_create(username="vera_de", password="vera-pass-123", role="viewer", languages=["de"])
    )
    login(client, user)
    for table in LIKERT_TABLES:
        for fmt in ("csv", "json"):
            assert client.get(url("download", project="demo", table=table, fmt=fmt)).status_code == 403, (table, fmt)
    for plot in ("rwg", "score-vs-agreement"):
        assert client.get(url("plot", project="demo", plot=plot)).status_code == 403, plot
    html = client.get(url("dashboard", project="demo")).content.decode()
    assert "Likert ratings stay blind" in html and "likert_items" not in html and "rwg" not in html
    assert (
        client.get(url("download", project="demo", table="languages", fmt="csv")).status_code == 200
    )  # aggregates stay


def test_annotator_sees_her_own_agreement_anonymised(client, world):
    """Issue 37: annotators saw kappa per named reviewer pair. anna and ben share 16 German units (12 in round 1,
    4 in round 2); by hand from the fixture: they agree on 9 + 3 = 12 (0.750); anna accepts 12 of 16, ben 10 of
    16, so chance agreement is (12*10 + 4*6) / 256 = 0.5625 and Cohen's kappa (0.75 - 0.5625) / 0.4375 = 3/7."""
    login(client, world.users["anna_de"])
    html = client.get(url("dashboard", project="demo")).content.decode()
    assert "Your agreement with the other reviewers" in html
    rows = sel.own_agreement(world.users["anna_de"], world.project, frozenset({"de"}))
    assert [(r["language"], r["other_reviewer"], r["units"]) for r in rows] == [("de", "reviewer 1", 16)]
    assert rows[0]["percent_agreement"] == pytest.approx(0.75, abs=1e-12)
    assert rows[0]["cohen_kappa"] == pytest.approx(3 / 7, abs=1e-12)
    assert "reviewer 1" in html and "0.750" in html and "0.429" in html
    assert "ben_de" not in html  # the other reviewer is never named
    # the admin still sees the pairs with their names
    login(client, world.users["admin"])
    admin_html = client.get(url("dashboard", project="demo")).content.decode()
    assert "Agreement per reviewer pair" in admin_html and "ben_de" in admin_html
    assert "Your agreement with the other reviewers" not in admin_html


def test_unknown_table_format_plot(client, world):
    login(client, world.users["admin"])
    assert client.get(url("download", project="demo", table="nope", fmt="csv")).status_code == 404
    assert client.get(url("download", project="demo", table="languages", fmt="xlsx")).status_code == 404
    assert client.get(url("plot", project="demo", plot="nope")).status_code == 404
    assert client.get(url("dashboard", project="nope")).status_code == 404


@pytest.mark.parametrize("plot", ["by-language", "by-error-type", "rwg", "score-vs-agreement", "annotators"])
def test_plots_are_svg(client, world, plot):
    login(client, world.users["admin"])
    response = client.get(url("plot", project="demo", plot=plot))
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    body = response.content.decode()
    assert body.lstrip().startswith("<?xml") and "<svg" in body and "undefined" not in body.split("<svg", 1)[0]


def svg_texts(svg: str) -> list[str]:
    import html
    import re

    return [html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", svg)]


EMPTY_STATES = {  # plot: (its title, its message when empty)
    "by-language": ("Agreement by language", "no units with decisions yet"),
    "by-error-type": ("Agreement by error type (all languages)", "no units with decisions yet"),
    "rwg": ("rwg per item", "no item rated by two or more raters yet"),
    "score-vs-agreement": (
        "Agreement vs mean score per task, language and dimension",
        "no item rated by two or more raters yet",
    ),
    "annotators": (
        "Annotator quality: accept rate and agreement with other reviewers",
        "no annotator decisions yet",
    ),
}


def svg_name(svg: str) -> tuple[str, str]:
    """The SVG's accessible name and description: its root's <title> and <desc>, which label it."""
    import html
    import re

    root = re.search(r"<svg\b[^>]*>", svg).group()
    assert 'role="img"' in root and 'aria-labelledby="plot-title"' in root, root
    title = re.search(r'<title id="plot-title">([^<]*)</title>', svg)
    desc = re.search(r'<desc id="plot-desc">([^<]*)</desc>', svg)
    return html.unescape(title.group(1)) if title else "", html.unescape(desc.group(1)) if desc else ""


def test_plots_of_an_empty_project(client, project, admin_user):
    """An empty plot keeps its title (drawn, and as the SVG's accessible name) above the message, no axis."""
    login(client, admin_user)
    for plot, (title, message) in EMPTY_STATES.items():
        response = client.get(url("plot", project="demo", plot=plot))
        assert response.status_code == 200 and b"<svg" in response.content
        assert svg_texts(response.content.decode()) == [title, message], plot
        assert svg_name(response.content.decode()) == (title, message), plot
    html = client.get(url("dashboard", project="demo")).content.decode()
    assert "No data yet." in html


def test_agreement_plots_with_decisions_from_one_reviewer_only_say_so(
    client, project, admin_user, annotator_de, languages
):
    """Decisions, but no unit with two reviewers: agreement is undefined everywhere, so the chart says so
    instead of drawing empty bars."""
    from annotation.models import ReviewDecision, ReviewRound
    from core.models import GoldSegment
    from injection.models import InjectionRun

    run = InjectionRun.objects.create(project=project, name="rule-1", backend="rule")
    rnd = ReviewRound.objects.create(project=project, number=1)
    seg = GoldSegment.objects.create(
        project=project, direction=languages["en-de"], external_id="1", source="s", reference="Das ist ein Test"
    )
    cand = Candidate.objects.create(
        run=run,
        segment=seg,
        error_type="Addition",
        position="end",
        text="Das ist ein Test extra",
        span_start=4,
        span_end=4,
        edit_text="extra",
    )
    ReviewDecision.objects.create(
        candidate=cand, reviewer=annotator_de, round=rnd, decision="accept", time_spent_ms=3000
    )
    login(client, admin_user)
    for plot in ("by-language", "by-error-type"):
        texts = svg_texts(client.get(url("plot", project="demo", plot=plot)).content.decode())
        assert texts == [EMPTY_STATES[plot][0], "no data yet: no unit has decisions from two reviewers"], (plot, texts)


def test_untrusted_names_are_escaped(client, world):
    Candidate.objects.filter(pk=world.de[0].pk).update(error_type="<script>alert(1)</script>")
    login(client, world.users["admin"])
    html = client.get(url("dashboard", project="demo")).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    svg = client.get(url("plot", project="demo", plot="by-error-type")).content.decode()
    assert "<script>" not in svg
    Candidate.objects.filter(pk=world.de[0].pk).update(error_type='=HYPERLINK("x")')
    body = client.get(url("download", project="demo", table="error_types", fmt="csv")).content.decode()
    assert "'=HYPERLINK" in body and ",=HYPERLINK" not in body


def test_annotator_page_and_gold_planting(client, world):
    login(client, world.users["admin"])
    page = client.get(url("annotators", project="demo"))
    assert page.status_code == 200
    html = page.content.decode()
    for name in ("anna_de", "ben_de", "li_zh", "wang_zh", "accept_rate_vs_peers", "gold_failures"):
        assert name in html
    bad = client.post(url("annotators", project="demo"), {"rate": "0.9"}, follow=True)
    assert "Nothing planted: rate" in bad.content.decode()
    assert not Candidate.objects.filter(is_gold=True).exists()
    ok = client.post(url("annotators", project="demo"), {"rate": "0.25", "seed": "3"}, follow=True)
    assert (
        "Gold items planted: en-de accept: 1, en-de reject: 2, en-zh accept: 1, en-zh reject: 1" in ok.content.decode()
    )
    assert Candidate.objects.filter(is_gold=True).count() == 5
    from annotation.models import AuditEvent

    event = AuditEvent.objects.get(action="plant_gold")
    assert (
        event.actor == world.users["admin"] and event.new["rate"] == 0.25 and event.new["planted"]["en-de/reject"] == 2
    )
    gold = json.loads(client.get(url("download", project="demo", table="gold", fmt="json")).content)["rows"]
    assert {(r["direction"], r["gold_answer"]): r["items"] for r in gold} == {
        ("en-de", "accept"): 1,
        ("en-de", "reject"): 2,
        ("en-zh", "accept"): 1,
        ("en-zh", "reject"): 1,
    }
