"""A release staged one direction at a time (issue 15, item 4): the chord's files and content hash are those
of the one-pass writer, byte for byte; a failed direction fails the release naming it and a rerun stages
only what is left; a changed build invalidates staged directions; progress per direction is shown to those
who may see the direction."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from core.models import Project
from exports.benchmark.services import build_run
from exports.models import Release
from exports.release import services
from exports.release.domain import release_files
from exports.release.domain.sampling import SamplingPlan
from exports.release.tasks import create_release_task
from injection.models import Candidate
from tests.exports.conftest import import_languages
from tests.support.asserts import every

SMALL_PLAN = {"monolingual_repetitions": 3, "multilingual_repetitions": 4}


def import_and_build(shared_data) -> int:
    import_languages("xqm", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": SMALL_PLAN}
    project.save()
    build_run(project=project)
    return project.pk


@pytest.fixture(scope="module")
def built_once(module_data, shared_data):
    """Imported and built once for the module (each test's changes are rolled back after it)."""
    return module_data(lambda: import_and_build(shared_data))


@pytest.fixture
def built(db, built_once, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    return Project.objects.get(pk=built_once)


def sha256s(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): release_files.sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


def one_pass(project: Project, version: str, out: Path, formats=()) -> dict:
    """The release written by the one-pass writer (what every release was before it was staged)."""
    content = services.release_content_make(
        project=project, version=version, plan=services.sampling_plan_make(project=project)
    )
    return release_files.write_release(content, out, formats)


def block_direction(out_dir: Path, direction_code: str) -> Path:
    """A file where the direction's folder goes in the staging directory: its task fails (FileExistsError)."""
    staging = services.staging_dir_get(out_dir=out_dir)
    staging.mkdir(parents=True, exist_ok=True)
    blocker = staging / direction_code
    blocker.write_text("in the way")
    return blocker


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.django_db
def test_the_chord_writes_the_bytes_and_content_hash_of_the_one_pass_writer(built, tmp_path):
    reference = one_pass(built, "1.0.0", tmp_path / "one-pass", ("jsonl", "tsv"))
    result = create_release_task.delay(built.pk, "1.0.0", ["jsonl", "tsv"]).get()  # chord, in-process (no broker)
    release = Release.objects.get(pk=result["release"])
    assert release.status == "ready" and release.content_hash == reference["content_hash"] == result["content_hash"]
    out = Path(release.path)
    assert out == Path(services.out_dir_get(project=built, version="1.0.0"))
    files = sha256s(out)
    assert files == sha256s(tmp_path / "one-pass") and len(files) == 2 * 3 + 2 + 2 + 2  # every file, same sha256
    assert not services.staging_dir_get(out_dir=out).exists() and not (out / release_files.SPOOL_DIR).exists()
    assert {code: entry["status"] for code, entry in release.directions.items()} == {"en-de": "done", "en-zh": "done"}
    assert sum(entry["triplets"] for entry in release.directions.values()) == release.manifest["triplets"]

    # the same content again after a forced rebuild, staged in-process by the command into a new directory
    build_run(project=built, force=True)
    out2 = tmp_path / "again"
    lines = io.StringIO()
    call_command(
        "release",
        "xqm",
        "--version",
        "2.0.0",
        "--out",
        str(out2),
        "--format",
        "jsonl,tsv",
        verbosity=2,
        stdout=lines,
        stderr=io.StringIO(),
    )
    again = Release.objects.get(project=built, version="2.0.0")
    assert again.content_hash == release.content_hash
    assert sha256s(out2) == {p: h for p, h in files.items() if p not in ("README.md", "manifest.json")} | {
        p: sha256s(out2)[p] for p in ("README.md", "manifest.json")
    }
    assert release_files.verify_release(out2) == []


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_failed_direction_fails_the_release_and_the_rerun_stages_only_it(built, tmp_path):
    out = tmp_path / "rel"
    reference = one_pass(built, "1.0.0", tmp_path / "one-pass")
    blocker = block_direction(out, "en-zh")
    staged = []
    with pytest.raises(FileExistsError):
        services.release_create(
            project=built, version="1.0.0", out_dir=out, on_direction=lambda code, entry: staged.append(code)
        )
    release = Release.objects.get(project=built, version="1.0.0")
    assert release.status == "failed" and release.error.startswith("en-zh: FileExistsError")
    assert release.directions["en-de"]["status"] == "done" and release.directions["en-zh"]["status"] == "failed"
    assert staged == ["en-de"] and not out.exists()
    de_entry = release.directions["en-de"]
    de_spool = services.staging_dir_get(out_dir=out) / release_files.SPOOL_DIR / "en-de.bin"
    written = de_spool.stat().st_mtime_ns

    blocker.unlink()
    staged.clear()
    release = services.release_create(
        project=built, version="1.0.0", out_dir=out, on_direction=lambda code, entry: staged.append(code)
    )
    assert staged == ["en-zh"]  # en-de was kept: files intact, same build
    assert release.status == "ready" and release.error == "" and release.directions["en-de"] == de_entry
    assert release.content_hash == reference["content_hash"] and sha256s(out) == sha256s(tmp_path / "one-pass")
    assert not de_spool.exists() and written  # the staging directory became the release


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_changed_build_invalidates_staged_directions(built, tmp_path):
    out = tmp_path / "rel"
    blocker = block_direction(out, "en-zh")
    with pytest.raises(FileExistsError):
        services.release_create(project=built, version="1.0.0", out_dir=out)
    # the build changes en-de after it was staged: a candidate whose content outside its span differs is excluded
    victim = (
        Candidate.objects.filter(
            segment__project=built, status="accepted", segment__direction__code="en-de", span_start__gt=0
        )
        .order_by("id")
        .first()
    )
    Candidate.objects.filter(pk=victim.pk).update(text="Anders " + victim.text.split(" ", 1)[1])
    build_run(project=built)
    blocker.unlink()
    staged = []
    release = services.release_create(
        project=built, version="1.0.0", out_dir=out, on_direction=lambda code, entry: staged.append(code)
    )
    assert staged == ["en-de", "en-zh"]  # en-de written again from the new build
    assert release.status == "ready"
    reference = one_pass(built, "1.0.0", tmp_path / "one-pass")
    assert release.content_hash == reference["content_hash"] and sha256s(out) == sha256s(tmp_path / "one-pass")
    assert release.manifest["excluded_candidates"] == 1


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_build_between_the_directions_and_the_finish_is_refused_and_a_rerun_redoes_them(built, tmp_path):
    out = tmp_path / "rel"
    job = services.release_begin(project=built, version="1.0.0", out_dir=out)
    assert job.todo == job.directions == ("en-de", "en-zh")
    for code in job.todo:
        services.release_direction_run(job=job, direction_code=code)
    build_run(project=built, force=True)  # every gold pair rewritten: the staged files may not be trusted
    with pytest.raises(services.ReleaseError, match="build changed since en-de, en-zh"):
        services.release_finish(job=job)
    release = Release.objects.get(pk=job.release_id)
    assert release.status == "failed" and "build changed" in release.error and not out.exists()
    again = services.release_begin(project=built, version="1.0.0", out_dir=out)
    assert again.todo == ("en-de", "en-zh")
    # a tampered staged file is written again too
    for code in again.todo:
        services.release_direction_run(job=again, direction_code=code)
    (services.staging_dir_get(out_dir=out) / "en-zh" / "test.parquet").write_bytes(b"not parquet")
    # run again once this writer has stopped (its lease passed): while it is live, a second start is refused
    with pytest.raises(services.ReleaseRunning):
        services.release_begin(project=built, version="1.0.0", out_dir=out)
    Release.objects.filter(pk=again.release_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert services.release_begin(project=built, version="1.0.0", out_dir=out).todo == ("en-zh",)


@pytest.mark.django_db
def test_release_progress_per_direction_is_shown_for_visible_directions_only(client, admin_user, annotator_de, seeded):
    from exports.benchmark import services as build_services

    build_build = build_services.build_run(project=seeded)
    assert build_build.pseudo_created
    result = create_release_task.delay(seeded.pk, "0.1.0").get()
    assert result["status"] == "ready"
    status_url = reverse("benchmarks:status", kwargs={"project": "demo"})
    page_url = reverse("benchmarks:project", kwargs={"project": "demo"})
    client.force_login(admin_user)
    [summary] = client.get(status_url).json()["releases"]
    assert [(d["direction"], d["status"]) for d in summary["directions"]] == [("en-de", "done"), ("en-zh", "done")]
    assert every(d["triplets"] > 0 for d in summary["directions"])
    client.force_login(annotator_de)
    [summary] = client.get(status_url).json()["releases"]
    assert [d["direction"] for d in summary["directions"]] == ["en-de"]
    [api] = client.get(reverse("benchmarks_api:project", kwargs={"project": "demo"})).json()["releases"]
    assert [d["direction"] for d in api["directions"]] == ["en-de"]
    html = client.get(page_url).content.decode()
    assert (
        'class="release-directions"' in html
        and 'tr data-direction="en-de"' in html
        and 'data-direction="en-zh"' not in html
    )


@pytest.mark.django_db
def test_the_command_prints_a_line_per_direction_and_a_plan_fixed_in_the_job(seeded, tmp_path):
    from exports.benchmark import services as build_services

    build_services.build_run(project=seeded)
    out = io.StringIO()
    call_command(
        "release", "demo", "--version", "0.1.0", "--out", str(tmp_path / "r"), verbosity=2, stdout=out, stderr=out
    )
    text = out.getvalue()
    assert "en-de: 24 triplets staged" in text and "en-zh: 24 triplets staged" in text
    release = Release.objects.get(version="0.1.0")
    assert SamplingPlan.from_dict(release.manifest["sampling_plan"]).n == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_release_tasks_own_retry_takes_its_live_lease_over(seeded):
    """Celery retries ``create_release_task`` after a transient database fault under the same task id; the
    first attempt had taken the release's lease. The retry takes it over and writes the release, where any
    other start is still refused while the lease is live (it was refused until BUILD_LEASE_SECONDS)."""
    from django.db import connection

    from exports.benchmark import services as build_services

    build_services.build_run(project=seeded)
    with connection.cursor() as cursor:  # the first attempt fails once, after taking the lease (a deadlock-like fault)
        cursor.execute("CREATE SEQUENCE release_fault_once")
        cursor.execute(
            """CREATE FUNCTION release_fault_once() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.stage = 'staging directions' AND nextval('release_fault_once') = 1 THEN
                RAISE EXCEPTION 'could not serialize access (injected)' USING ERRCODE = '40001';
              END IF;
              RETURN NEW;
            END $$"""
        )
        cursor.execute(
            "CREATE TRIGGER release_fault_once BEFORE UPDATE ON exports_release "
            "FOR EACH ROW EXECUTE FUNCTION release_fault_once()"
        )
    # as a worker does: the fault's retry is sent again under the same task id (here run at once, in-process)
    result = create_release_task.apply((seeded.pk, "0.1.0"), task_id="release-task-1", throw=False)
    assert result.get()["status"] == "ready"
    release = Release.objects.get(project=seeded, version="0.1.0")
    assert release.status == "ready" and release.lease_owner == "release-task-1"
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_value FROM release_fault_once")
        assert cursor.fetchone()[0] >= 2  # the fault did happen: the ready release is the retry's work

    # another task, or the command line (which owns no task), is refused while a live lease is held
    Release.objects.filter(pk=release.pk).update(
        status="building", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    with pytest.raises(services.ReleaseRunning):
        services.release_begin(project=seeded, version="0.1.0", owner="release-task-2")
    with pytest.raises(services.ReleaseRunning):
        services.release_begin(project=seeded, version="0.1.0")
    with pytest.raises(services.ReleaseRunning):  # nor does the owner's id let it write another version
        services.release_begin(project=seeded, version="0.2.0", owner="release-task-1")


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_new_attempt_removes_the_scratch_folders_a_killed_one_left_and_no_other_versions(built, tmp_path):
    parent = tmp_path / "rels"
    out = parent / "1.0.0"
    job = services.release_begin(project=built, version="1.0.0", out_dir=out)
    services.release_direction_run(job=job, direction_code="en-de")
    # killed while writing en-zh, assembling the release from the bucket, and unpacking a worker's upload
    mine = [".1.0.0.en-zh-0123456789ab", ".1.0.0.finishing-4242", ".1.0.0.incoming"]
    others = [
        ".1.0.en-zh-0123456789ab",  # version 1.0's, whose name 1.0.0's begins with
        ".0.9.0.en-de-abcdef012345",
        ".0.9.0.finishing-77",
        ".0.9.0.incoming",
        ".0.9.0.staging",
        "0.9.0",
        ".1.0.0.notes",  # not a scratch folder's name
    ]
    for name in mine + others:
        (parent / name / "sub").mkdir(parents=True)
        (parent / name / "sub" / "part.bin").write_bytes(b"left behind")
    Release.objects.filter(pk=job.release_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    again = services.release_begin(project=built, version="1.0.0", out_dir=out)

    assert again.todo == ("en-zh",)  # the staged direction is kept: only scratch goes
    assert sorted(p.name for p in parent.iterdir()) == sorted([".1.0.0.staging", *others])
    for name in others:
        assert (parent / name / "sub" / "part.bin").read_bytes() == b"left behind"
