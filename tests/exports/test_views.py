"""Benchmark pages, API and admin: admins act, annotators see their directions only, text is escaped, the
UI drives build, release and push (tasks run in-process without a broker)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.services import user_create
from exports.models import BenchmarkBuild, PseudoSystem, PseudoTranslation, Release
from tests.exports.hub_server import HubServer
from tests.support.asserts import every

pytestmark = pytest.mark.django_db


def test_admin_builds_releases_and_pushes_from_the_page(
    client, admin_user, seeded, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    page = reverse("benchmarks:project", kwargs={"project": "demo"})
    assert "Not built yet" in client.get(page).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post(reverse("benchmarks:build", kwargs={"project": "demo"}))
        # en-ar and en-ja hold nothing: the build asks first, naming them, and builds nothing yet
        assert (
            asked.status_code == 200
            and "en-ar: no candidates" in asked.content.decode()
            and not BenchmarkBuild.objects.exists()
        )
        response = client.post(reverse("benchmarks:build", kwargs={"project": "demo"}), {"confirm": "1"})
    assert response.status_code == 302
    build = BenchmarkBuild.objects.get(project=seeded)
    assert build.acknowledged == ["en-ar: no candidates", "en-ja: no candidates"]
    assert build.status == "done" and build.excluded == 2 and build.percent == 100
    html = client.get(page).content.decode()
    assert "en-de" in html and "en-zh" in html and "Excluded candidates (2)" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html  # untrusted text escaped
    assert build.transplanted == 1 and "Transplanted candidates (1)" in html and "1 transplanted" in html
    assert "&#x27;.&#x27; → &#x27;!&#x27;" in html
    flagged = PseudoTranslation.objects.filter(segment__project=seeded, flags=["transplanted"])
    assert flagged.count() == 4 and every(p.text.endswith(" .") for p in flagged)  # the reference's own stop

    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "0.1.0", "formats": ["jsonl"]}
        )
    release = Release.objects.get(project=seeded, version="0.1.0")
    assert release.status == "ready" and release.progress == 100
    assert (tmp_path / "releases" / "demo" / "0.1.0" / "en-de" / "test.jsonl").is_file()
    assert PseudoSystem.objects.filter(release=release).exists()

    status = client.get(reverse("benchmarks:status", kwargs={"project": "demo"})).json()
    assert status["build"]["status"] == "done" and status["releases"][0]["version"] == "0.1.0"
    per_direction = status["build"]["directions"]
    assert [(d["direction"], d["status"]) for d in per_direction] == [("en-de", "done"), ("en-zh", "done")]
    assert (
        sum(d["pseudo_created"] for d in per_direction) == build.pseudo_created
        and sum(d["excluded"] for d in per_direction) == 2
    )
    assert 'tr data-direction="en-de"' in html and 'tr data-direction="en-zh"' in html

    with HubServer(token="tok-abc") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "tok-abc")
        with django_capture_on_commit_callbacks(execute=True):
            client.post(
                reverse("benchmarks:push", kwargs={"project": "demo", "version": "0.1.0"}), {"repo_id": "lab/demo"}
            )
        release.refresh_from_db()
        assert release.push_status == "pushed" and release.hub_revision == hub.state.repos["lab/demo"].tags["0.1.0"]
        assert hub.state.repos["lab/demo"].private

    # a bad version is refused with a message, nothing recorded
    response = client.post(reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "a b"}, follow=True)
    assert "use a semantic version MAJOR.MINOR.PATCH" in response.content.decode()
    assert not Release.objects.filter(version="a b").exists()


def test_a_push_the_worker_refuses_before_the_hub_is_recorded_and_offered_again(
    client, admin_user, seeded, monkeypatch, django_capture_on_commit_callbacks
):
    """The worker has no HF_TOKEN: the push task fails before reaching the Hub. The release must not stay
    'pushing' (no push button, the page polling forever) but show the failure, its reason and 'Resume push'."""
    from exports.release.services import ReleaseError

    client.force_login(admin_user)
    page = reverse("benchmarks:project", kwargs={"project": "demo"})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:build", kwargs={"project": "demo"}), {"confirm": "1"})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "0.1.0"})
    release = Release.objects.get(project=seeded, version="0.1.0")
    assert release.status == "ready"

    monkeypatch.delenv("HF_TOKEN", raising=False)
    # in-process (no broker) the task's exception reaches the caller, as it reaches the result backend on a worker
    with pytest.raises(ReleaseError, match="HF_TOKEN"), django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:push", kwargs={"project": "demo", "version": "0.1.0"}), {"repo_id": "lab/demo"})
    release.refresh_from_db()
    assert release.push_status == "failed" and "HF_TOKEN is not set" in release.error and release.hub_repo == "lab/demo"
    html = client.get(page).content.decode()
    assert "HF_TOKEN is not set" in html and "Resume push" in html


def test_annotators_see_their_directions_and_cannot_act(
    client, annotator_de, seeded, django_capture_on_commit_callbacks
):
    from exports.benchmark import services

    built = services.build_run(project=seeded).build
    client.force_login(annotator_de)
    html = client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).content.decode()
    assert "<td>en-de</td>" in html and "<td>en-zh</td>" not in html
    assert "Build (changed gold pairs only)" not in html
    api = client.get(reverse("benchmarks_api:project", kwargs={"project": "demo"})).json()
    assert set(api["counts"]) == {"en-de"}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("benchmarks:build", kwargs={"project": "demo"})).status_code == 403
        assert (
            client.post(reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "1"}).status_code == 403
        )
    assert list(BenchmarkBuild.objects.all()) == [built] and not Release.objects.exists()  # the refusals made none

    outsider = user_create(username="fr_only", password="pw-123456-x", languages=["fr"])
    client.force_login(outsider)
    assert client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).status_code == 404
    assert client.get(reverse("benchmarks_api:project", kwargs={"project": "demo"})).status_code == 404
    assert client.get(reverse("benchmarks:status", kwargs={"project": "demo"})).status_code == 404
    client.logout()
    assert client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).status_code == 302


def test_annotators_see_build_progress_of_their_directions_only(client, annotator_de, seeded):
    from exports.benchmark.tasks import build_benchmark_task

    build = BenchmarkBuild.objects.create(project=seeded)
    build_benchmark_task.delay(build.pk).get()
    client.force_login(annotator_de)
    status = client.get(reverse("benchmarks:status", kwargs={"project": "demo"})).json()
    assert [d["direction"] for d in status["build"]["directions"]] == ["en-de"]
    html = client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).content.decode()
    assert 'tr data-direction="en-de"' in html and 'data-direction="en-zh"' not in html


def test_admin_pages_list_and_filter_every_benchmark_model(client, admin_user, seeded, tmp_path):
    from exports.benchmark import services
    from exports.release import services as release_services

    services.build_run(project=seeded)
    release_services.release_create(project=seeded, version="0.1.0", out_dir=tmp_path / "r")
    client.force_login(admin_user)
    direction = seeded.directions.get(code="en-de")
    for model, query in [
        (
            "pseudotranslation",
            f"?segment__project__id__exact={seeded.pk}&segment__direction__id__exact={direction.pk}&level=2",
        ),
        ("mergedsegment", f"?segment__project__id__exact={seeded.pk}"),
        ("benchmarkbuild", "?status__exact=done"),
        ("release", f"?project__id__exact={seeded.pk}&status__exact=ready"),
        ("pseudosystem", "?kind__exact=monolingual"),
    ]:
        response = client.get(reverse(f"admin:exports_{model}_changelist") + query)
        assert response.status_code == 200, model
    pseudo = PseudoTranslation.objects.filter(level=2).first()
    detail = client.get(reverse("admin:exports_pseudotranslation_change", args=[pseudo.pk])).content.decode()
    assert pseudo.error_types[0] in detail
    assert client.get(reverse("admin:exports_pseudotranslation_add")).status_code == 403


def test_the_page_lists_the_first_candidates_and_their_csv_holds_every_one_of_the_users_directions(
    client, admin_user, annotator_de, seeded, monkeypatch
):
    import csv
    import io

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from exports.benchmark import selectors, services
    from exports.models import CandidatePlacement

    services.build_run(project=seeded)
    transplanted = CandidatePlacement.objects.get(outcome="transplanted")
    transplanted.drift = '=HYPERLINK("http://x") <b>'  # what a spreadsheet would run
    transplanted.save(update_fields=["drift"])
    monkeypatch.setattr(selectors, "LISTED_ON_PAGE", 1)
    page = reverse("benchmarks:project", kwargs={"project": "demo"})

    def table(user, name):
        client.force_login(user)
        response = client.get(reverse("benchmarks:candidates_csv", kwargs={"project": "demo", "table": name}))
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        assert response["Content-Disposition"] == f'attachment; filename="demo-{name}_candidates.csv"'
        return list(csv.DictReader(io.StringIO(response.content.decode())))

    client.force_login(admin_user)
    html = client.get(page).content.decode()
    assert "Excluded candidates (2)" in html and 'data-listed="1"' in html and "The first 1 of 2" in html
    assert "Transplanted candidates (1)" in html and "&lt;b&gt;" in html and "<b>" not in html
    excluded = table(admin_user, "excluded")
    assert [(r["direction"], r["segment_id"], r["error_type"]) for r in excluded] == [
        ("en-de", "1", "Untranslated"),
        ("en-zh", "1", "Untranslated"),
    ]
    assert every(r["reason"] for r in excluded)
    [row] = table(admin_user, "transplanted")
    assert (row["direction"], row["segment_id"], row["error_type"]) == ("en-de", "1", "Mistranslation")
    assert row["drift"] == '\'=HYPERLINK("http://x") <b>'  # shown as text, never run

    client.force_login(annotator_de)
    html = client.get(page).content.decode()
    assert "Excluded candidates (1)" in html and "The first" not in html
    assert [r["direction"] for r in table(annotator_de, "excluded")] == ["en-de"]
    outsider = user_create(username="fr_only", password="pw-123456-x", languages=["fr"])
    client.force_login(outsider)
    assert (
        client.get(reverse("benchmarks:candidates_csv", kwargs={"project": "demo", "table": "excluded"})).status_code
        == 404
    )
    client.logout()
    assert (
        client.get(reverse("benchmarks:candidates_csv", kwargs={"project": "demo", "table": "excluded"})).status_code
        == 302
    )

    # a viewer reads aggregates only (#48.5): the counts, never the candidates' lists (drift held text fragments)
    viewer = user_create(username="viewer_de", password="pw-123456-x", role="viewer", languages=["de", "zh"])
    client.force_login(viewer)
    html = client.get(page).content.decode()
    assert "Excluded candidates (2)" in html and "Transplanted candidates (1)" in html
    assert "HYPERLINK" not in html and "Untranslated" not in html and "data-listed" not in html
    for name in ("excluded", "transplanted"):
        url = reverse("benchmarks:candidates_csv", kwargs={"project": "demo", "table": name})
        assert client.get(url).status_code == 404

    # the API and the counts plot need no list of candidates, so they read none
    client.force_login(admin_user)
    for url in (
        reverse("benchmarks_api:project", kwargs={"project": "demo"}),
        reverse("benchmarks:counts_plot", kwargs={"project": "demo"}),
    ):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        assert not [q for q in queries.captured_queries if 'FROM "injection_candidate"' in q["sql"]], url


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)  # the request commits, so its on_commit work runs inside it, as on the site
def test_build_release_and_push_say_what_happened_without_a_broker_and_with_one(
    client, admin_user, seeded, monkeypatch, redis_url
):
    import redis as redis_lib

    from tests.support.celery_queue import tasks_queued_to

    client.force_login(admin_user)
    response = client.post(reverse("benchmarks:build", kwargs={"project": "demo"}), {"confirm": "1"}, follow=True)
    build = BenchmarkBuild.objects.get(project=seeded)
    assert build.status == "done"  # ran in the request: not "started"
    assert _messages(response) == [
        f"Build {build.number} finished: {build.pseudo_created} pseudo translation(s) written, 2 candidate(s) excluded."
    ]
    response = client.post(reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "0.1.0"}, follow=True)
    assert Release.objects.get(version="0.1.0").status == "ready" and _messages(response) == ["Release 0.1.0 written."]
    with HubServer(token="tok-abc") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "tok-abc")
        response = client.post(
            reverse("benchmarks:push", kwargs={"project": "demo", "version": "0.1.0"}),
            {"repo_id": "lab/demo"},
            follow=True,
        )
        revision = hub.state.repos["lab/demo"].tags["0.1.0"]
        assert _messages(response) == [f"Release 0.1.0 pushed to lab/demo (revision {revision})."]
        response = client.post(
            reverse("benchmarks:release", kwargs={"project": "demo"}),
            {"version": "0.2.0", "push_repo": "lab/demo"},
            follow=True,
        )
        assert _messages(response) == ["Release 0.2.0 written and pushed to lab/demo."]

    queue = redis_lib.Redis.from_url(redis_url)
    queue.delete("default")
    try:
        with tasks_queued_to(redis_url):
            response = client.post(
                reverse("benchmarks:build", kwargs={"project": "demo"}), {"confirm": "1"}, follow=True
            )
            newest = BenchmarkBuild.objects.filter(project=seeded).order_by("-pk").first()
            assert newest.status == "pending" and _messages(response) == [f"Build {newest.number} started."]
            response = client.post(
                reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": "0.3.0"}, follow=True
            )
            assert _messages(response) == ["Release 0.3.0 started."]
            response = client.post(
                reverse("benchmarks:push", kwargs={"project": "demo", "version": "0.1.0"}),
                {"repo_id": "lab/other"},
                follow=True,
            )
            assert _messages(response) == ["Push of 0.1.0 to lab/other started."]
        assert queue.llen("default") == 3  # all three handed to a worker
    finally:
        queue.delete("default")


@pytest.mark.django_db(transaction=True)  # the request commits, so its on_commit work runs inside it, as on the site
def test_the_admin_build_action_says_what_happened_without_a_broker(client, admin_user, seeded):
    first = BenchmarkBuild.objects.create(project=seeded, status="done")  # a finished build: built again anew
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:exports_benchmarkbuild_changelist"),
        {"action": "build_again", "_selected_action": [first.pk]},
        follow=True,
    )
    build = BenchmarkBuild.objects.filter(project=seeded).order_by("-pk").first()
    assert build.pk != first.pk and build.status == "done"  # ran in the request: not "started"
    assert _messages(response) == [
        f"demo: Build {build.number} finished: {build.pseudo_created} pseudo translation(s) written, 2 candidate(s) excluded."
    ]
