"""Creating a project (one service for the site, the admin and the commands), the project page with its
pipeline stages, imports from the page, and who may do what."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import GoldSegment, Project
from core.services import ProjectRejected, project_create, user_create
from xqmeval.projects.selectors import STAGES, Stage, next_step

pytestmark = pytest.mark.django_db

TSV = "id\tsource\treference\n1\tThe cat sat on the mat.\tDie Katze saß auf der Matte.\n2\tHe bought three apples.\tEr kaufte drei Äpfel.\n"


def create_form(**overrides) -> dict:
    data = {
        "title": "FLORES+ into German and Chinese",
        "name": "flores",
        "source_language": "en",
        "directions": "en-de, en-zh",
        "error_types": ["Omission", "Addition"],
        "perturbations": ["Spelling"],
        "reviewers_per_candidate": 3,
        "max_errors": 4,
        "description": "",
    }
    data.update(overrides)
    return data


# ---- the service ---------------------------------------------------------------------------------


def test_project_create_stores_every_setting(languages):
    project = project_create(
        name="flores",
        title="FLORES+",
        source_language="en",
        directions=["en-de", "en-zh"],
        error_types=["Omission"],
        perturbations=["Spelling", "Synonym"],
        reviewers_per_candidate=3,
        max_errors=4,
    )
    project.refresh_from_db()
    assert sorted(project.directions.values_list("code", flat=True)) == ["en-de", "en-zh"]
    assert (project.title, project.source_language.code, project.error_types, project.options["perturbations"]) == (
        "FLORES+",
        "en",
        ["Omission"],
        ["Spelling", "Synonym"],
    )
    assert (project.reviewers_per_candidate, project.max_errors) == (3, 4)


def test_project_create_names_every_bad_field_and_writes_nothing(languages):
    project_create(name="taken")
    with pytest.raises(ProjectRejected) as caught:
        project_create(
            name="taken",
            source_language="en",
            directions=["de-en", "en-xx", "ende"],
            error_types=["Typo"],
            perturbations=["Addition"],
            reviewers_per_candidate=0,
            max_errors=11,
        )
    errors = caught.value.errors
    assert "name: a project 'taken' already exists" in errors
    assert "directions: de-en does not start from the source language en" in errors
    assert any(e.startswith("directions: ") and "'xx'" in e for e in errors)
    assert any(e.startswith("directions: ") and "'ende'" in e for e in errors)
    assert any(e.startswith("error_types: unknown mqm type 'Typo'") for e in errors)
    assert any(e.startswith("perturbations: unknown perturbation type 'Addition'") for e in errors)
    assert any(e.startswith("reviewers_per_candidate:") for e in errors) and any(
        e.startswith("max_errors:") for e in errors
    )
    with pytest.raises(ProjectRejected, match="must be a slug"):
        project_create(name="has space")
    assert list(Project.objects.values_list("name", flat=True)) == ["taken"]


def test_injection_runs_default_to_the_projects_types(languages):
    from injection import services

    project = project_create(name="p", directions=["en-de"], error_types=["Omission"], perturbations=["Spelling"])
    GoldSegment.objects.create(
        project=project, direction=languages["en-de"], external_id="1", source="a b", reference="x y z"
    )
    mqm = services.run_plan(spec=services.RunSpec(project=project, kind="mqm"))
    perturbation = services.run_plan(spec=services.RunSpec(project=project, kind="perturbation"))
    assert mqm.error_types == ["Omission"] and perturbation.error_types == ["Spelling"]
    assert set(mqm.items.values_list("error_type", flat=True)) == {"Omission"}


def test_import_corpus_command_refuses_a_bad_project_name(tmp_path, languages):
    path = tmp_path / "c.tsv"
    path.write_text(TSV, encoding="utf-8")
    with pytest.raises(CommandError, match="name: 'bad name!' must be a slug"):
        call_command("import_corpus", "bad name!", str(path), "--direction", "en-de")
    assert not Project.objects.exists()


def test_admin_add_goes_through_the_service(client, admin_user, languages):
    client.force_login(admin_user)
    url = reverse("admin:core_project_add")
    base = {
        "name": "adm",
        "title": "",
        "description": "",
        "source_language": languages["en-de"].source_id,
        "directions": [languages["en-de"].pk],
        "error_types": "[]",
        "reviewers_per_candidate": 2,
        "max_errors": 5,
        "pool_rule": "unanimous",
        "license": "cc-by-sa-4.0",
    }
    response = client.post(url, {**base, "options": '{"perturbations": ["Nope"]}'})
    assert response.status_code == 200 and "unknown perturbation type" in response.content.decode()
    assert not Project.objects.exists()
    response = client.post(url, {**base, "error_types": '["Omission"]', "options": '{"perturbations": ["Spelling"]}'})
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(name="adm")
    assert project.title == "adm" and project.owner == admin_user  # the service's defaults
    assert project.options == {"perturbations": ["Spelling"]} and list(
        project.directions.values_list("code", flat=True)
    ) == ["en-de"]


# ---- the site ------------------------------------------------------------------------------------


def test_admin_creates_a_project_on_the_site(client, admin_user):
    client.force_login(admin_user)
    home = client.get(reverse("home")).content.decode()
    assert reverse("projects:new") in home
    form = client.get(reverse("projects:new")).content.decode()
    assert 'type="checkbox" name="error_types" value="Omission"' in form and 'for="id_name"' in form
    response = client.post(reverse("projects:new"), create_form())
    assert response.status_code == 302 and response.url == reverse("projects:detail", args=["flores"])
    project = Project.objects.get(name="flores")
    assert project.error_types == ["Omission", "Addition"] and project.options["perturbations"] == ["Spelling"]
    assert project.reviewers_per_candidate == 3 and project.max_errors == 4 and project.owner == admin_user
    page = client.get(response.url).content.decode()
    assert "Import a corpus" in page and "no gold segments yet: import a corpus first" in page
    assert reverse("projects:detail", args=["flores"]) in client.get(reverse("home")).content.decode()


def test_pages_name_an_icon_that_is_among_the_static_files(client, admin_user):
    """Without one, browsers ask for /favicon.ico: a 404 and a console error on every first visit."""
    client.force_login(admin_user)
    icon = re.search(r'<link rel="icon" href="([^"]+)"', client.get(reverse("home")).content.decode())
    prefix = "/" + settings.STATIC_URL.strip("/") + "/"
    assert icon and icon.group(1).startswith(prefix), icon
    assert finders.find(icon.group(1).removeprefix(prefix))


def test_bad_project_form_says_what_is_wrong_and_writes_nothing(client, admin_user, languages):
    client.force_login(admin_user)
    response = client.post(reverse("projects:new"), create_form(directions="de-en, en-de", max_errors=0))
    page = response.content.decode()
    assert response.status_code == 200 and "Ensure this value is greater than or equal to 1" in page
    response = client.post(reverse("projects:new"), create_form(directions="de-en, en-de"))
    page = response.content.decode()
    assert response.status_code == 200 and "de-en does not start from the source language en" in page
    assert not Project.objects.exists()


def test_corpus_upload_from_the_project_page(client, admin_user, languages):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(admin_user)
    project = project_create(name="flores", directions=["en-de"])
    url = reverse("projects:corpus", args=["flores"])
    assert url in client.get(reverse("projects:detail", args=["flores"])).content.decode()
    bad = TSV + "3\t\tleer\n"
    response = client.post(
        url,
        {
            "direction": "en-de",
            "file": SimpleUploadedFile("bad.tsv", bad.encode()),
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
        },
        follow=True,
    )
    page = response.content.decode()
    assert "bad.tsv: nothing imported." in page and "line 4" in page
    assert not GoldSegment.objects.exists()
    response = client.post(
        url,
        {
            "direction": "en-de",
            "file": SimpleUploadedFile("ok.tsv", TSV.encode()),
            "id_column": "id",
            "source_column": "source",
            "reference_column": "reference",
        },
    )
    assert response.status_code == 302 and response.url == reverse("projects:detail", args=["flores"])
    assert GoldSegment.objects.filter(project=project).count() == 2
    page = client.get(response.url).content.decode()
    assert "Start an injection run" in page and f"{reverse('injection:runs')}?project=flores" in page


def test_stages_say_why_they_cannot_start(client, admin_user, project, languages):
    from tests.annotation.review.factories import make_candidates

    client.force_login(admin_user)
    for candidate in make_candidates(project, languages, "en-de"):
        candidate.status = "accepted"
        candidate.save(update_fields=["status"])
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    for code in ("en-zh", "en-ar", "en-ja"):
        assert f"no accepted candidates in {code} yet" in page
    assert "Build the benchmark" in page
    assert "no pseudo translations yet: build the benchmark first" in page
    assert "no ready release yet: make a release first" in page
    assert "no metric scores yet: score a release first" in page


def test_next_step_is_the_first_stage_not_done_after_the_last_done():
    def stages(*states):
        return [
            Stage(key, title, n, state=state) for n, ((key, title), state) in enumerate(zip(STAGES, states), start=1)
        ]

    # the XQ-MEval import: decisions imported (no agreement to compute), benchmark built and released
    assert next_step(stages("done", "done", "done", "partial", "done", "done", "blocked", "blocked")).key == "scores"
    assert (
        next_step(stages("done", "done", "partial", "partial", "blocked", "blocked", "blocked", "blocked")).key
        == "review"
    )
    assert (
        next_step(stages("todo", "blocked", "blocked", "todo", "blocked", "blocked", "blocked", "blocked")).key
        == "corpus"
    )
    assert next_step(stages(*["done"] * 8)) is None


def test_agreement_stage_reads_the_cache_and_never_computes(
    client, admin_user, project, languages, annotator_de, settings
):
    from django.core.cache import cache

    from annotation.agreement import selectors as agreement
    from annotation.models import ReviewDecision
    from annotation.review.selectors import first_round
    from tests.annotation.review.factories import make_candidates

    settings.AGREEMENT_REFRESH_DELAY = 0
    other = user_create(username="bo_de", password="bo-pass-123", languages=["de"])
    rnd = first_round(project)
    for candidate in make_candidates(project, languages, "en-de"):
        for reviewer in (annotator_de, other):
            ReviewDecision.objects.create(candidate=candidate, reviewer=reviewer, round=rnd, decision="accept")
    cache.clear()
    client.force_login(admin_user)
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    assert "No agreement report computed yet" in page
    key = agreement.report_cache_key(project, languages=None, private=True)
    assert cache.get(key) is None  # the page computed nothing
    agreement.project_report(project, languages=None, private=True)  # what the refresh task does
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    section = page[page.index('id="stage-agreement"') : page.index('id="stage-benchmark"')]
    assert (
        "Krippendorff" in section and "<td>de</td><td>7</td>" in section and "undefined" in section
    )  # all accept: κ undefined


def test_scores_stage_without_a_broker_scores_here_and_names_the_worker_of_neural_metrics(
    client, admin_user, project, tmp_path
):
    """#46.1: no broker: the stage is ready to start (the web process scores string metrics and judges), offers
    only what it can score, and gives the documented worker command for the neural metrics."""
    from exports.models import Release
    from scoring.tests.releases import write_release

    Release.objects.create(project=project, version="t1", status="ready", path=str(write_release(tmp_path / "rel")))
    client.force_login(admin_user)
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    section = page[page.index('id="stage-scores"') : page.index('id="stage-metaeval"')]
    assert 'data-state="ready"' in section and "Start scoring" in section
    assert "this server scores the string metrics and the LLM judges itself" in section
    assert ".venv-scoring/bin/celery -A scoring.worker worker -Q scoring -c 1" in section
    assert 'value="chrF++"' in section and 'value="BLEU"' in section and 'value="COMET-22"' not in section


def test_actions_started_from_the_project_page_come_back_to_it(client, admin_user, project, tmp_path):
    from exports.models import Release
    from scoring.tests.releases import write_release

    release = Release.objects.create(
        project=project, version="t1", status="ready", path=str(write_release(tmp_path / "rel"))
    )
    client.force_login(admin_user)
    here = reverse("projects:detail", args=[project.name]) + "#stage-releases"
    page = client.get(here).content.decode()
    assert reverse("benchmarks:push", args=[project.name, "t1"]) in page and 'for="push-' in page
    response = client.post(
        reverse("benchmarks:push", args=[project.name, "t1"]), {"repo_id": "not a repo", "next": here}, follow=True
    )
    assert response.redirect_chain[-1][0] == here
    assert "expected &#x27;namespace/name&#x27;" in response.content.decode()
    release.refresh_from_db()
    assert release.push_status == ""
    # a next outside this site is ignored
    response = client.post(
        reverse("benchmarks:push", args=[project.name, "t1"]), {"repo_id": "bad", "next": "https://evil.example/"}
    )
    assert response.url == reverse("benchmarks:project", args=[project.name])


# ---- permissions ---------------------------------------------------------------------------------

ADMIN_ACTIONS = (
    "Import a corpus",
    "Start an injection run",
    "Build the benchmark",
    "Make a release",
    "Start scoring",
    "New project",
    "Review progress and rounds",
)


def test_annotator_sees_no_admin_action_and_the_endpoints_refuse_them(
    client, admin_user, project, languages, annotator_de, annotator_zh, tmp_path
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from exports.models import Release
    from scoring.tests.releases import write_release
    from tests.annotation.review.factories import make_candidates

    for candidate in make_candidates(project, languages, "en-de"):
        candidate.status = "accepted"
        candidate.save(update_fields=["status"])
    release = Release.objects.create(
        project=project, version="t1", status="ready", path=str(write_release(tmp_path / "rel"))
    )
    client.force_login(admin_user)
    admin_page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    for action in ("Import a corpus", "Start an injection run", "Build the benchmark", "Review progress and rounds"):
        assert action in admin_page, action
    assert 'id="next-step"' in admin_page  # the admin's "Next" line (issue 37: annotators saw it too)

    client.force_login(annotator_de)
    home = client.get(reverse("home")).content.decode()
    assert "New project" not in home and reverse("projects:new") not in home
    page = client.get(reverse("projects:detail", args=[project.name]))
    assert page.status_code == 200
    text = page.content.decode()
    for action in ADMIN_ACTIONS:
        assert action not in text, action
    assert 'id="next-step"' not in text and "Next:" not in text  # no admin hint on an annotator's page
    assert (
        f'href="{reverse("injection:runs")}' not in text and "en-zh" not in text
    )  # no admin link, not other languages
    refused = [
        ("get", reverse("projects:new"), {}),
        ("post", reverse("projects:new"), create_form(name="sneaky")),
        ("get", reverse("projects:corpus", args=[project.name]), {}),
        (
            "post",
            reverse("projects:corpus", args=[project.name]),
            {"direction": "en-de", "file": SimpleUploadedFile("c.tsv", TSV.encode())},
        ),
        ("post", reverse("projects:xqmeval", args=[project.name]), {}),
        (
            "post",
            reverse("injection:runs") + f"?project={project.name}",
            {"project": project.pk, "kind": "mqm", "backend": "rule", "concurrency": 1, "seed": 1, "temperature": 0.5},
        ),
        ("post", reverse("benchmarks:build", args=[project.name]), {}),
        ("post", reverse("benchmarks:release", args=[project.name]), {"version": "9.9.9"}),
        ("post", reverse("scores:start", args=[release.pk]), {"metric": "chrF++"}),
        ("post", reverse("benchmarks:push", args=[project.name, release.version]), {"repo_id": "lab/x"}),
    ]
    for method, url, data in refused:
        response = getattr(client, method)(url, data)
        assert response.status_code == 403, (method, url, response.status_code)
    assert (
        not Project.objects.filter(name="sneaky").exists() and not GoldSegment.objects.filter(external_id="1").exists()
    )
    from exports.models import BenchmarkBuild
    from injection.models import InjectionRun

    assert not InjectionRun.objects.filter(backend="rule").exists() and not BenchmarkBuild.objects.exists()
    assert not Release.objects.filter(version="9.9.9").exists()

    client.force_login(annotator_zh)  # another language: sees only en-zh
    text = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    assert "en-de" not in text


def test_project_page_of_a_project_out_of_reach_is_404(client, annotator_de, languages):
    project = project_create(name="zh-only", directions=["en-zh"])
    client.force_login(annotator_de)
    assert client.get(reverse("projects:detail", args=[project.name])).status_code == 404
    assert client.get(reverse("projects:stage", args=[project.name, "review"])).status_code == 404


def test_running_stage_polls_and_a_finished_one_does_not(client, admin_user, project, languages):
    from injection.models import InjectionRun

    GoldSegment.objects.create(
        project=project, direction=languages["en-de"], external_id="1", source="a", reference="b c"
    )
    run = InjectionRun.objects.create(project=project, name="r1", backend="rule", status="running", total=10, done=4)
    client.force_login(admin_user)
    url = reverse("projects:stage", args=[project.name, "injection"])
    fragment = client.get(url).content.decode()
    assert (
        f'hx-get="{url}"' in fragment and 'hx-trigger="every 2s"' in fragment and "4 done · 0 failed of 10" in fragment
    )
    run.status, run.done = "done", 10
    run.save()
    fragment = client.get(url).content.decode()
    assert "hx-trigger" not in fragment and "10 done · 0 failed of 10" in fragment
    assert client.get(reverse("projects:stage", args=[project.name, "nope"])).status_code == 404


def _scored_release(project, languages, tmp_path):
    from exports.models import MetricScore, Release
    from exports.scores.services import scores_summarize

    release = Release.objects.create(project=project, version="t1", status="ready", path=str(tmp_path))
    rows = []
    for code, slope in (("en-de", 10.0), ("en-zh", 20.0)):
        for seg in range(4):
            for level in range(3):
                score = 100 - slope * level + seg  # falls with the level: τ is positive
                rows.append(
                    MetricScore(
                        release=release,
                        metric="chrF++",
                        direction=languages[code],
                        triplet_id=f"{code}/{seg}/{level}",
                        level=level,
                        score=score,
                    )
                )
    MetricScore.objects.bulk_create(rows)
    scores_summarize(release=release)  # as the ingest does
    return release


def test_metaeval_headline_is_computed_once_and_cached(client, admin_user, project, languages, tmp_path):
    from django.core.cache import cache

    from exports.metaeval import selectors as metaeval

    release = _scored_release(project, languages, tmp_path)
    cache.clear()
    client.force_login(admin_user)
    page = client.get(reverse("projects:detail", args=[project.name])).content.decode()
    fragment_url = reverse("projects:metaeval_headline", args=[project.name])
    assert f'hx-get="{fragment_url}" hx-trigger="load"' in page  # the page itself computes nothing
    assert metaeval.cached_headline(release, "chrF++") is None
    fragment = client.get(fragment_url).content.decode()  # no worker here: computed in this request, then cached
    headline = metaeval.cached_headline(release, "chrF++")
    assert headline["directions"] == 2 and headline["tau_min"] > 0
    assert (
        f"{headline['tau_min']:.3f}–{headline['tau_max']:.3f} (2 directions)" in fragment
        and "hx-trigger" not in fragment
    )
    assert "Meta-evaluation of chrF++" in fragment


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_metaeval_headline_goes_to_a_worker_when_one_runs(client, admin_user, project, languages, tmp_path, redis_url):
    import redis as redis_lib
    from django.core.cache import cache

    from exports.metaeval import selectors as metaeval
    from exports.metaeval.tasks import metaeval_headline_task
    from tests.support.celery_queue import tasks_queued_to

    release = _scored_release(project, languages, tmp_path)
    cache.clear()
    client.force_login(admin_user)
    url = reverse("projects:metaeval_headline", args=[project.name])
    with tasks_queued_to(redis_url):
        fragment = client.get(url).content.decode()
        again = client.get(url).content.decode()
    assert "being computed by a worker" in fragment and f'hx-get="{url}" hx-trigger="every 2s"' in fragment
    assert "being computed by a worker" in again and metaeval.cached_headline(release, "chrF++") is None
    queued = redis_lib.Redis.from_url(redis_url).lrange("default", 0, -1)
    assert sum(b"exports.metaeval_headline" in m for m in queued) == 1  # the second view queued nothing more
    redis_lib.Redis.from_url(redis_url).delete("default")
    metaeval_headline_task.apply((release.pk, "chrF++"))  # what the worker runs
    fragment = client.get(url).content.decode()
    assert "(2 directions)" in fragment and "hx-trigger" not in fragment


def test_hugging_face_dataset_from_the_project_page(client, admin_user, languages, tmp_path):
    import datasets
    from django.core.files.uploadedfile import SimpleUploadedFile

    project = project_create(name="flores", directions=["en-de"])
    root = tmp_path / "flores_site"
    (root / "deu_Latn").mkdir(parents=True)
    datasets.Dataset.from_dict(
        {"id": ["1", "2"], "source": ["A cat.", "A dog."], "reference": ["Eine Katze.", "Ein Hund."]}
    ).to_parquet(str(root / "deu_Latn" / "devtest.parquet"))
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: deu_Latn\n  data_files:\n  - split: devtest\n    path: deu_Latn/devtest.parquet\n---\n"
    )
    client.force_login(admin_user)
    url = reverse("projects:corpus", args=["flores"])
    columns = {"id_column": "id", "source_column": "source", "reference_column": "reference"}
    both = client.post(
        url,
        {"direction": "en-de", "file": SimpleUploadedFile("c.tsv", TSV.encode()), "hf_dataset": "org/name", **columns},
    )
    assert both.status_code == 200 and "give either a file or a Hugging Face dataset" in both.content.decode()
    # a form never reads a server folder (#36.4): absolute, relative and ../ paths are refused as Hub ids,
    # without a word about what the folder holds; local directories are the import_corpus command's
    for path in (
        str(root),
        "flores_site",
        f"../../{root.name}",
        "./x/y",
        "../x",
        ".hidden/set",
        "a/b/c",
        "a/..",
        "/etc/passwd",
    ):
        response = client.post(
            url, {"direction": "en-de", "hf_dataset": path, "hf_config": "deu_Latn", "hf_split": "devtest", **columns}
        )
        page = response.content.decode()
        assert response.status_code == 200 and "is not a Hub dataset id: namespace/name" in page, path
        assert "devtest.parquet" not in page and "README" not in page
    assert not GoldSegment.objects.filter(project=project).exists()
    from core.corpus.domain import hub_id_problem

    assert hub_id_problem("openlanguagedata/flores_plus") == "" and hub_id_problem("facebook/flores.v2") == ""
