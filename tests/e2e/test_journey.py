"""The admin's whole journey in chromium, from the project page only (no typed URL but the login): create
a project, upload a corpus, run a rule-based injection and watch it finish, two annotators review every
candidate (a few on the screen, the rest through the API), build the benchmark, release it, score it with
chrF++ on a real scoring worker (.venv-scoring, Redis) while the page updates itself, then the scores and
the meta-evaluation. axe-core checks every page on the way (no serious or critical violation)."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import httpx
import pytest

from annotation.models import ReviewDecision
from core.services import user_create
from exports.models import MetricScore, Release, ScoringJob
from injection.models import Candidate, InjectionRun
from tests.conftest import REPO, need
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login, shot
from tests.support.celery_worker import celery_worker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    # Scoring goes to the broker while the platform's own tasks run in-process (no platform worker here):
    # Celery says so for send_task and for reading a result while eager mode is on. Both are intended.
    pytest.mark.filterwarnings("ignore:task_always_eager has no effect on send_task"),
    pytest.mark.filterwarnings("ignore:Results are not stored in backend:RuntimeWarning"),
]

DATA = Path(__file__).parent / "data"
SCORING_PYTHON = REPO / ".venv-scoring" / "bin" / "python"
ANNOTATORS = {"anna": "anna-pass-123", "bo": "bo-pass-4567"}


@pytest.fixture
def scoring_broker(redis_url):
    """Scoring tasks go to Redis (a real worker takes them); the platform's own tasks (build, release,
    injection) still run in-process, as on a machine without a platform worker."""
    from xqmeval.celery import app

    def forget_connections() -> None:  # the app caches pools and the backend from the first configuration
        app._pool = None
        app.amqp._producer_pool = None
        app._backend_cache = None
        app._local.__dict__.pop("backend", None)

    saved = {k: app.conf.get(k) for k in ("broker_url", "result_backend")}
    forget_connections()
    app.conf.update(broker_url=redis_url, result_backend=redis_url)
    try:
        yield redis_url
    finally:
        forget_connections()
        app.conf.update(saved)


@pytest.fixture
def scoring_worker(scoring_broker, tmp_path):
    need(SCORING_PYTHON.exists(), f"the scoring virtualenv at {SCORING_PYTHON.parent.parent} (bin/setup-env scoring)")
    env = {
        **os.environ,
        "CELERY_BROKER_URL": scoring_broker,
        "CELERY_RESULT_BACKEND": scoring_broker,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    with celery_worker(
        env, tmp_path / "worker.log", app="scoring.worker", queues="scoring", name="journey", python=SCORING_PYTHON
    ):
        yield tmp_path / "worker.log"


def click_and_wait(page, locator) -> None:
    with page.expect_navigation():
        locator.click()


def stage(page, key: str):
    return page.locator(f"#stage-{key}")


def review_on_screen(new_page, username: str, count: int, visited: list) -> list[int]:
    page = new_page()
    login(page, username, ANNOTATORS[username], next_url="/")
    click_and_wait(page, page.get_by_role("link", name="Review", exact=True))
    assert_accessible(page, f"review queue ({username})", visited)
    click_and_wait(page, page.locator("a[data-start]").first)
    page.wait_for_selector("#candidate-text")
    assert_accessible(page, f"review screen ({username})", visited)
    seen = []
    for _ in range(count):
        seen.append(int(re.search(r"/candidate/(\d+)/", page.url).group(1)))
        with page.expect_navigation():
            page.keyboard.press("a")
    return seen


def review_rest_through_the_api(base_url: str, username: str, project: str, on_screen: set[int]) -> int:
    """Take every remaining candidate from the API queue; reject every fourth (both reviewers alike, so
    the pool and the agreement are defined), accept what was accepted on the screen."""
    done = 0
    with httpx.Client(base_url=base_url, auth=(username, ANNOTATORS[username]), timeout=30) as api:
        while True:
            got = api.post(f"/api/review/projects/{project}/next/").json()
            if not got["candidate"]:
                return done
            cid = got["candidate"]["id"]
            decision = "accept" if cid in on_screen or cid % 4 else "reject"
            response = api.post(
                "/api/review/decisions/",
                json={
                    "candidate": cid,
                    "decision": decision,
                    "round": got["round"],
                    "idempotency_key": uuid.uuid4().hex,
                },
            )
            assert response.status_code in (200, 201), response.text
            done += 1


def test_admin_journey_from_the_project_page(live_server, new_page, scoring_worker, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    user_create(username="admin", password="admin-pass-123", role="admin")
    for name, password in ANNOTATORS.items():
        user_create(username=name, password=password, languages=["de", "zh"])
    visited: list[str] = []
    requests: list[str] = []
    page = new_page()
    page.on("request", lambda r: requests.append(r.url))

    # 1. create the project
    login(page, "admin", "admin-pass-123", next_url="/")
    assert_accessible(page, "projects (empty)", visited)
    click_and_wait(page, page.get_by_role("link", name="New project", exact=True))
    assert_accessible(page, "new project", visited)
    page.fill("#id_title", "Journey: FLORES+ into German and Chinese")
    page.fill("#id_name", "journey")
    page.fill("#id_directions", "en-de, en-zh")
    for type_name in ("Omission", "Mistranslation"):
        page.check(f"input[name=error_types][value={type_name}]")
    page.fill("#id_max_errors", "2")
    click_and_wait(page, page.get_by_role("button", name="Create the project"))
    assert page.url.endswith("/projects/journey/")
    assert "no gold segments yet: import a corpus first" in stage(page, "injection").inner_text()
    assert_accessible(page, "project page (new)", visited)
    shot(page, "journey-01-new-project")

    # 2. a small corpus per direction
    for direction in ("en-de", "en-zh"):
        click_and_wait(page, page.get_by_role("link", name="Import a corpus"))
        if direction == "en-de":
            assert_accessible(page, "corpus import", visited)
        page.select_option("#id_direction", direction)
        page.set_input_files("#id_file", str(DATA / f"journey-{direction}.tsv"))
        click_and_wait(page, page.get_by_role("button", name="Import the corpus"))
        assert "3 gold segments imported" in page.inner_text(".messages")
    assert stage(page, "corpus").locator(".badge").inner_text() == "done"

    # 3. a rule-based injection run, watched to its end
    click_and_wait(page, page.get_by_role("link", name="Start an injection run"))
    assert_accessible(page, "injection start form", visited)
    page.get_by_label("en-de").check()
    page.get_by_label("en-zh").check()
    click_and_wait(page, page.get_by_role("button", name="Start the run"))
    page.wait_for_function("document.getElementById('run-status').textContent.trim() === 'done'")
    run = InjectionRun.objects.get(project__name="journey")
    assert (run.status, run.done, run.failed) == ("done", run.total, 0) and run.total == 24
    assert f"{run.total} done · 0 failed · 0 pending of {run.total}" in page.inner_text("#run-progress")
    assert_accessible(page, "injection run", visited)
    click_and_wait(
        page, page.locator(".breadcrumbs").get_by_role("link", name="Journey: FLORES+ into German and Chinese")
    )
    assert "24 candidates from 1 run" in stage(page, "injection").inner_text()
    assert stage(page, "review").locator(".badge").inner_text() == "in progress"

    # 4. two annotators review every candidate: a few on the screen, the rest through the API
    on_screen = set(review_on_screen(new_page, "anna", 3, visited)) | set(review_on_screen(new_page, "bo", 2, visited))
    decisions = sum(review_rest_through_the_api(live_server.url, name, "journey", on_screen) for name in ANNOTATORS)
    assert decisions == 2 * 24 - 5
    assert ReviewDecision.objects.filter(source="annotator").count() == 48
    assert not Candidate.objects.filter(status="pending").exists()

    # back on the project page (from the menu): review done, agreement from the cached report
    click_and_wait(page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Projects"))
    click_and_wait(page, page.get_by_role("link", name="Journey: FLORES+ into German and Chinese"))
    assert stage(page, "review").locator(".badge").inner_text() == "done"
    # no worker: the submission that finished the review computed the agreement once it committed (#46.3)
    finished = stage(page, "agreement").inner_text()
    assert "Krippendorff" in finished and "Open the dashboard to compute it" not in finished
    click_and_wait(page, stage(page, "agreement").get_by_role("link", name="Agreement dashboard"))
    assert_accessible(page, "agreement dashboard", visited)
    click_and_wait(
        page, page.locator(".breadcrumbs").get_by_role("link", name="Journey: FLORES+ into German and Chinese")
    )
    agreement = stage(page, "agreement").inner_text()
    assert "Krippendorff" in agreement and "1.000" in agreement  # both reviewers decided alike
    assert_accessible(page, "project page (reviewed)", visited)

    # 5. build the benchmark, 6. make a release
    click_and_wait(page, page.get_by_role("button", name="Build the benchmark"))
    benchmark = stage(page, "benchmark").inner_text()
    assert stage(page, "benchmark").locator(".badge").inner_text() == "done" and "k = 2" in benchmark
    page.fill("#release-version", "1.0.0")
    click_and_wait(page, page.get_by_role("button", name="Make a release"))
    release = Release.objects.get(project__name="journey", version="1.0.0")
    assert release.status == "ready" and "1.0.0" in stage(page, "releases").inner_text()
    assert_accessible(page, "project page (released)", visited)
    click_and_wait(page, stage(page, "releases").get_by_role("link", name="Releases and Hub pushes"))
    assert_accessible(page, "benchmark page", visited)
    page.go_back()

    # 7. score with chrF++ on the real worker; the stage updates itself until the jobs are done
    scores = stage(page, "scores")
    assert scores.locator("input[name=metric][value='chrF++']").is_checked()
    click_and_wait(page, scores.get_by_role("button", name="Start scoring"))
    assert ScoringJob.objects.filter(release=release, metric="chrF++").count() == 2
    before = len(requests)
    try:
        page.wait_for_selector("#stage-scores .badge[data-state=done]", timeout=180_000)
    except Exception:
        raise AssertionError(f"scoring did not finish; worker log: {scoring_worker.read_text()[-3000:]}") from None
    polls = [u for u in requests[before:] if "/projects/journey/stages/scores/" in u]
    assert polls, "the scores stage never fetched its own update"
    assert MetricScore.objects.filter(release=release, metric="chrF++").count() == release.manifest["triplets"]
    assert f"chrF++ ({release.manifest['triplets']} triplets)" in stage(page, "scores").inner_text(), stage(
        page, "scores"
    ).inner_text()[:600]
    assert_accessible(page, "project page (scored)", visited)
    shot(page, "journey-02-scored")

    click_and_wait(page, stage(page, "scores").get_by_role("link", name="Scores of 1.0.0"))
    assert "chrF++" in page.inner_text("main")
    assert_accessible(page, "scores page", visited)
    click_and_wait(
        page, page.locator(".breadcrumbs").get_by_role("link", name="Journey: FLORES+ into German and Chinese")
    )

    # 8. the meta-evaluation headline loads after the page; its link opens the full page
    link = stage(page, "metaeval").get_by_role("link", name="Meta-evaluation of chrF++")
    page.wait_for_selector("#metaeval-headline table")
    headline = stage(page, "metaeval").inner_text()
    assert "2 directions" in headline and "at k = 1" in headline
    click_and_wait(page, link)
    assert "τ" in page.inner_text("main") and "chrF++" in page.inner_text("main")
    assert_accessible(page, "meta-evaluation page", visited)
    assert len(visited) >= 15, visited
