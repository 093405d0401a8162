"""#46.5, the injection pages a new user met in the demo: a run page shows the settings its backend reads, in
words (not a Python dict, not an LLM's temperature for the rule backend); the project selector names projects
by title; "Candidates and their checks" opens that project's candidates, and the page filters by project."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from core.services import project_directions_add, project_ensure
from injection import services
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db


def _run(project, **kw):
    spec = dict(project=project, kind="mqm", backend="rule", directions=["en-de"], seed=7)
    spec.update(kw)
    return services.run_plan(spec=services.RunSpec(**spec))


def test_a_rule_runs_page_shows_its_seed_in_words_and_no_llm_setting(client, admin_user, segments):
    run = _run(segments[0].project, temperature=0.9, max_attempts=3)
    client.force_login(admin_user)
    page = client.get(reverse("injection:run", args=[run.pk])).content.decode()
    shown = re.search(r'<p class="muted" id="run-settings">(.*?)</p>', page, re.S)
    assert shown is not None, page
    assert re.sub(r"<[^>]+>", "", shown.group(1)) == "Settings of the rule backend: seed 7"
    for raw in ("{&#x27;", "temperature", "max_attempts", "concurrency", "timeout"):
        assert raw not in page


def test_an_openai_runs_page_shows_what_that_backend_reads(admin_user, segments, settings):
    from injection.selectors import run_settings

    run = _run(segments[0].project)
    run.backend = "openai"  # what the page reads of it: its backend and parameters (no endpoint is called)
    run.parameters = {**run.parameters, "rpm": None, "engine_options": {"x": 1}}
    assert run_settings(run) == [
        ("temperature", "0.5"),
        ("seed", "7"),
        ("structured", "yes"),
        ("concurrency", "8"),
        ("max_attempts", "6"),
        ("retry_base_delay", "0.5"),
        ("timeout", "60.0"),
    ]


def test_the_run_forms_project_selector_shows_titles(client, admin_user, project):
    project_ensure(name="second", title="The second project")
    client.force_login(admin_user)
    page = client.get(reverse("injection:runs")).content.decode()
    options = dict(re.findall(r'<option value="(\d+)"[^>]*>([^<]*)</option>', page))
    assert options[str(project.pk)] == "Demo project"
    assert "The second project" in options.values() and "second" not in options.values()


def test_candidates_and_their_checks_opens_the_projects_candidates_only(client, admin_user, project, languages):
    other, _ = project_ensure(name="other", title="Other")
    project_directions_add(project=other, codes=["en-de"])
    make_candidate(project, languages["en-de"], "a", "Der Hund schläft.", "Der Hund schläft nicht.")
    make_candidate(other, languages["en-de"], "b", "Die Katze läuft.", "Die Katze läuft schnell.")
    mine, theirs = "Hund", "Katze"  # a word of each (the list marks the edit inside the text)
    client.force_login(admin_user)
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    link = re.search(r'href="([^"]+)">Candidates and their checks<', page).group(1).replace("&amp;", "&")
    listed = client.get(link).content.decode()
    assert mine in listed and theirs not in listed
    assert '<option value="demo" selected>Demo project</option>' in listed  # the filter, on the page
    other_page = client.get(reverse("injection:candidates"), {"project": "other"}).content.decode()
    assert theirs in other_page and mine not in other_page
    assert "No candidates." in client.get(reverse("injection:candidates"), {"project": "nosuch"}).content.decode()
