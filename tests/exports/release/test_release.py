"""Releases on imported shared data: HF layout loadable with datasets, byte identity, immutability,
extra formats, the command, and the push to a local Hub look-alike (HF_ENDPOINT)."""

from __future__ import annotations

import csv
import io
import json
import traceback
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from core.models import Project
from exports.benchmark.services import build_run
from exports.models import CandidatePlacement, PseudoSystem, PseudoTranslation, Release
from exports.release import services
from exports.release.domain.release_files import ReleaseConflict, verify_release
from injection.models import Candidate
from tests.exports.conftest import import_languages
from tests.exports.hub_server import HubServer, git_blob_sha1
from tests.support.asserts import every

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]

CARDS = Path(__file__).parent / "dataset_cards"  # cards written by the code before the template
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
def built(db, built_once):
    return Project.objects.get(pk=built_once)


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_release_loads_with_datasets_and_holds_every_triplet(built, tmp_path):
    import datasets

    out = tmp_path / "rel"
    release = services.release_create(project=built, version="1.0.0", out_dir=out)
    assert release.status == "ready" and len(release.content_hash) == 64 and release.path == str(out)
    ds = datasets.load_dataset(str(out), "en-de", split="test", cache_dir=str(tmp_path / "cache"))
    stored = PseudoTranslation.objects.filter(segment__project=built, segment__direction__code="en-de")
    assert ds.num_rows == stored.count()
    for column in (
        "triplet_id",
        "direction",
        "segment_id",
        "src",
        "ref",
        "mt",
        "mt_marked",
        "num_errors",
        "mqm_penalty",
        "error_types",
        "spans",
    ):
        assert column in ds.column_names
    assert len(set(ds["triplet_id"])) == ds.num_rows
    row = next(r for r in ds if r["num_errors"] == 3)
    assert row["mqm_penalty"] == 15 and len(row["spans"]) == 3 and row["mt_marked"].count("<v>") == 3
    units = row["mt"].split()
    assert every(s["mt_end"] <= len(units) for s in row["spans"])
    level0 = [r for r in ds if r["num_errors"] == 0]
    assert len(level0) == 102 and every(r["mt"] == r["ref"] for r in level0)
    zh = datasets.load_dataset(str(out), "en-zh", split="test", cache_dir=str(tmp_path / "cache"))
    assert set(zh["unit"]) == {"char"} and set(zh["direction"]) == {"en-zh"}
    # pseudo systems: configs, stored rows, and ids that exist in the triplet files
    systems = datasets.load_dataset(str(out), "systems-monolingual", split="test", cache_dir=str(tmp_path / "cache"))
    all_ids = set(ds["triplet_id"]) | set(zh["triplet_id"])
    assert set(systems["triplet_id"]) <= all_ids
    assert PseudoSystem.objects.filter(release=release, kind="monolingual").count() == 2 * 6 * 3
    assert PseudoSystem.objects.filter(release=release, kind="multilingual").count() == 10 * 4
    multi = PseudoSystem.objects.filter(release=release, kind="multilingual").first()
    assert len(multi.triplet_ids) == 2 * 102 and set(multi.triplet_ids) <= all_ids


def test_card_manifest_and_excluded_report(built, tmp_path):
    # a candidate whose content outside its span differs cannot be located: excluded (en-de and en-zh of
    # the shared data have only drift, transplanted)
    victim = (
        Candidate.objects.filter(
            segment__project=built, status="accepted", segment__direction__code="en-de", span_start__gt=0
        )
        .order_by("id")
        .first()
    )
    Candidate.objects.filter(pk=victim.pk).update(text="Anders " + victim.text.split(" ", 1)[1])
    build_run(project=built)
    out = tmp_path / "rel"
    release = services.release_create(project=built, version="1.0.0", out_dir=out)
    card = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["license"] == "cc-by-sa-4.0"
    assert meta["language"] == ["en", "de", "zh"]
    assert meta["size_categories"] == ["10K<n<100K"]
    assert [c["config_name"] for c in meta["configs"]] == [
        "en-de",
        "en-zh",
        "systems-monolingual",
        "systems-multilingual",
    ]
    assert meta["configs"][0]["data_files"] == [{"split": "test", "path": "en-de/test.parquet"}]
    assert "| en-de | 102 |" in card and "@misc{xqmeval2026" in card and release.content_hash in card
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["content_hash"] == release.content_hash
    assert manifest["sampling_plan"]["seed"] == 42 and manifest["sampling_plan"]["multilingual_repetitions"] == 4
    assert manifest["counts"]["en-de"]["levels"]["0"]["total"] == 102
    assert verify_release(out) == []
    rows = list(csv.DictReader(io.StringIO((out / "excluded_candidates.csv").read_text())))
    excluded = CandidatePlacement.objects.filter(candidate__segment__project=built, outcome="excluded")
    assert len(rows) == excluded.count() > 0
    assert every(r["reason"].startswith("merge: cannot be placed") for r in rows)
    assert any(r["external_id"] == victim.external_id and "cannot be located" in r["reason"] for r in rows)
    # transplanted candidates: listed with their drift, named in the card and the manifest, flagged in the triplets
    transplanted = list(
        Candidate.objects.filter(segment__project=built, status="accepted", placement__outcome="transplanted")
    )
    listed = list(csv.DictReader(io.StringIO((out / "transplanted_candidates.csv").read_text(encoding="utf-8"))))
    assert len(listed) == len(transplanted) == manifest["transplanted_candidates"] > 0
    assert every(r["drift"] and r["span_start"] for r in listed)
    assert f"Candidates placed by transplanting their edit: {len(listed)} (flag `transplanted`" in card
    import pyarrow.parquet as pq

    flagged = 0
    for direction in ("en-de", "en-zh"):
        table = pq.read_table(out / direction / "test.parquet").to_pylist()
        assert every(r["flags"] in ([], ["transplanted"]) for r in table)
        flagged += sum(1 for r in table if r["flags"])
    assert (
        flagged
        == PseudoTranslation.objects.filter(segment__project=built, candidates__in=transplanted).distinct().count()
        > 0
    )


def test_rebuilding_from_the_same_inputs_gives_the_same_bytes(built, tmp_path):
    first = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    # the same version again, elsewhere: same bytes
    services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "b")
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")
    # the card, now rendered from a template, is byte for byte what the former string-writing code wrote
    assert (tmp_path / "a" / "README.md").read_bytes() == (CARDS / "xqm-shared-data-1.0.0.md").read_bytes()
    # rebuild every pseudo translation (new database ids) and release from scratch: still the same bytes
    old_ids = set(PseudoTranslation.objects.values_list("id", flat=True))
    build_run(project=built, force=True)
    assert not old_ids & set(PseudoTranslation.objects.values_list("id", flat=True))
    Release.objects.all().delete()
    again = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "c")
    assert again.content_hash == first.content_hash
    assert files_of(tmp_path / "a") == files_of(tmp_path / "c")


def test_a_released_version_is_immutable(built, tmp_path):
    first = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    before = files_of(tmp_path / "a")
    victim = Candidate.objects.filter(segment__project=built, status="accepted").order_by("id").first()
    Candidate.objects.filter(pk=victim.pk).update(status="rejected")
    build_run(project=built)
    with pytest.raises(ReleaseConflict, match="immutable"):
        services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    with pytest.raises(ReleaseConflict, match="immutable"):
        services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "fresh")
    assert files_of(tmp_path / "a") == before and not (tmp_path / "fresh").exists()
    assert Release.objects.get(pk=first.pk).content_hash == first.content_hash
    # a new version takes the new content; it may not overwrite the old one's directory
    with pytest.raises(ReleaseConflict, match="holds release xqm 1.0.0, not xqm 1.1.0"):
        services.release_create(project=built, version="1.1.0", out_dir=tmp_path / "a")
    second = services.release_create(project=built, version="1.1.0", out_dir=tmp_path / "b")
    assert second.content_hash != first.content_hash
    with pytest.raises(services.ReleaseError, match="sampling plan is fixed"):
        services.release_create(project=built, version="1.1.0", out_dir=tmp_path / "b", plan_overrides={"seed": 1})
    with pytest.raises(services.ReleaseError, match="version"):
        services.release_create(project=built, version="../etc", out_dir=tmp_path / "x")


def test_extra_formats_on_request_do_not_change_the_content(built, tmp_path):
    release = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    canonical = files_of(tmp_path / "a")
    out = io.StringIO()
    call_command(
        "release",
        "xqm",
        "--version",
        "1.0.0",
        "--out",
        str(tmp_path / "a"),
        "--format",
        "jsonl,tsv",
        stdout=out,
        verbosity=0,
    )
    now = files_of(tmp_path / "a")
    assert {k: v for k, v in now.items() if k in canonical and k != "manifest.json"} == {
        k: v for k, v in canonical.items() if k != "manifest.json"
    }
    assert "en-de/test.jsonl" in now and "en-zh/test.tsv" in now
    jsonl = [json.loads(line) for line in now["en-de/test.jsonl"].decode().splitlines()]
    assert (
        len(jsonl) == PseudoTranslation.objects.filter(segment__direction__code="en-de", segment__project=built).count()
    )
    tsv = list(csv.reader(io.StringIO(now["en-zh/test.tsv"].decode()), delimiter="\t"))
    assert tsv[0][:3] == ["triplet_id", "direction", "segment_id"] and len(tsv) - 1 == len(
        PseudoTranslation.objects.filter(segment__direction__code="en-zh", segment__project=built)
    )
    manifest = json.loads(now["manifest.json"])
    assert manifest["content_hash"] == release.content_hash and "en-de/test.jsonl" in manifest["files"]
    assert release.content_hash in out.getvalue()
    with pytest.raises(CommandError, match="unknown format"):
        call_command(
            "release", "xqm", "--version", "1.0.0", "--out", str(tmp_path / "a"), "--format", "xlsx", verbosity=0
        )


def test_release_refuses_an_unbuilt_project_and_records_the_failure(project, tmp_path):
    with pytest.raises(services.ReleaseError, match="build_benchmark"):
        services.release_create(project=project, version="0.1", out_dir=tmp_path / "r")
    failed = Release.objects.get(project=project, version="0.1")
    assert failed.status == "failed" and "build_benchmark" in failed.error


@pytest.mark.parametrize(
    ("out", "args", "message"),
    [
        ("a-file", [], "a-file is a file, not a directory"),
        ("a-file/release", [], "a-file is a file, not a directory"),
        ("not-empty", [], "not-empty is not empty and holds no release manifest"),
        ("other-release", [], "other-release holds release demo 0.9.0, not demo 1.0.0"),
        ("new", ["--push", "not a repo"], "--push: Hub repo 'not a repo': expected 'namespace/name'"),
        ("new", ["--push", "lab/xq-meval"], "--push: HF_TOKEN is not set in the environment"),
        ("new", ["--public"], "--public applies to the Hub repo that --push creates"),
    ],
)
def test_release_command_refuses_an_unusable_output_or_push_before_writing(
    project, tmp_path, monkeypatch, out, args, message
):
    """Checked before anything is recorded or staged: these used to stage every direction first (or fail with a
    traceback after it), leaving a failed release and a staging directory behind; a bad push came after the
    release was written."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "not-empty").mkdir()
    (tmp_path / "not-empty" / "notes.txt").write_text("mine")
    (tmp_path / "other-release").mkdir()  # another version's release: found out before staging, not after it
    (tmp_path / "other-release" / "manifest.json").write_text(
        json.dumps({"name": "demo", "version": "0.9.0", "content_hash": "ab" * 32})
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CommandError, match=message):
        call_command("release", "demo", "--version", "1.0.0", "--out", str(tmp_path / out), *args, verbosity=0)
    assert not Release.objects.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ---- the Hub ---------------------------------------------------------------------------------------------


@pytest.fixture
def hub(monkeypatch):
    with HubServer(token="hf_test_token_123") as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf_test_token_123")
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        yield server


def test_push_creates_a_private_repo_with_every_file_and_tags_the_version(built, tmp_path, hub):
    out = io.StringIO()
    call_command(
        "release",
        "xqm",
        "--version",
        "1.0.0",
        "--out",
        str(tmp_path / "a"),
        "--push",
        "lab/xq-meval",
        stdout=out,
        verbosity=0,
    )
    release = Release.objects.get(project=built, version="1.0.0")
    repo = hub.state.repos["lab/xq-meval"]
    assert repo.private is True
    local = files_of(tmp_path / "a")
    assert repo.files == local
    assert release.push_status == "pushed" and release.hub_repo == "lab/xq-meval"
    assert release.hub_revision == repo.head == repo.tags["1.0.0"]
    assert [c["summary"] for c in repo.commits] == ["xqm 1.0.0: data files", "xqm 1.0.0: dataset card and manifest"]
    assert release.content_hash in repo.commits[-1]["description"]
    assert f"pushed to lab/xq-meval at revision {repo.head}" in out.getvalue()
    assert "hf_test_token_123" not in json.dumps(release.manifest) + release.error + out.getvalue()


def test_an_interrupted_push_resumes_without_sending_files_again(built, tmp_path, hub):
    release = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    hub.state.fail_commits.append("dataset card")
    with pytest.raises(Exception, match="injected failure"):
        services.release_push(release=release, repo_id="lab/xq-meval")
    release.refresh_from_db()
    assert release.push_status == "failed" and "injected failure" in release.error and not release.hub_revision
    data_uploads = list(hub.state.uploads)
    assert "en-de/test.parquet" in data_uploads and "README.md" not in data_uploads

    services.release_push(release=release, repo_id="lab/xq-meval")
    release.refresh_from_db()
    repo = hub.state.repos["lab/xq-meval"]
    assert release.push_status == "pushed" and release.hub_revision == repo.tags["1.0.0"]
    resent = hub.state.uploads[len(data_uploads) :]
    assert sorted(resent) == ["README.md", "manifest.json"]  # data files were already there
    assert {p: git_blob_sha1(b) for p, b in repo.files.items()} == {
        p: git_blob_sha1(b) for p, b in files_of(tmp_path / "a").items()
    }

    # pushing a version that is already tagged only records it
    calls = len(hub.state.calls)
    services.release_push(release=release, repo_id="lab/xq-meval")
    assert not [c for c in hub.state.calls[calls:] if "/commit/" in c]


def test_push_needs_the_token_from_the_environment(built, tmp_path, hub, monkeypatch):
    release = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(services.ReleaseError, match="HF_TOKEN"):
        services.release_push(release=release, repo_id="lab/xq-meval")
    monkeypatch.setenv("HF_TOKEN", "wrong")
    with pytest.raises(services.HubPushError):
        services.release_push(release=release, repo_id="lab/xq-meval")
    release.refresh_from_db()
    assert release.push_status == "failed" and "wrong" not in release.error
    with pytest.raises(services.ReleaseError, match="namespace/name"):
        services.release_push(release=release, repo_id="not a repo")
    assert "lab/xq-meval" not in hub.state.repos


def test_a_hub_error_quoting_the_token_is_recorded_without_it(built, tmp_path, hub):
    """Neither the release, nor the exception and its traceback (logs, the task's result), nor the command's
    message holds the token, though the Hub quotes it; a refusal (4xx) is not retried."""
    from exports.release.tasks import push_release_task

    release = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    hub.state.echo_credentials = True
    hub.state.fail_commits.append("data files")
    with pytest.raises(services.HubPushError, match="injected failure") as raised:
        services.release_push(release=release, repo_id="lab/xq-meval")
    release.refresh_from_db()
    assert release.push_status == "failed" and "injected failure" in release.error
    assert "hf_test_token_123" not in release.error and "[redacted]" in release.error
    trace = "".join(traceback.format_exception(raised.value))
    assert "Bearer [redacted]" in trace and "hf_test_token_123" not in trace and not raised.value.transient

    hub.state.fail_commits.append("data files")
    result = push_release_task.apply(args=(release.pk, "lab/xq-meval"), throw=False)
    assert result.failed() and isinstance(result.result, services.HubPushError)
    assert "injected failure" in result.traceback and "hf_test_token_123" not in result.traceback

    hub.state.fail_commits.append("data files")
    with pytest.raises(CommandError, match="run the same command again to resume") as failed:
        call_command(
            "release", "xqm", "--version", "1.0.0", "--out", str(tmp_path / "a"), "--push", "lab/xq-meval", verbosity=0
        )
    assert "injected failure" in str(failed.value) and "hf_test_token_123" not in str(failed.value)


def test_a_release_file_that_differs_from_the_manifest_is_not_pushed(built, tmp_path, hub):
    """A file of another size is refused before the Hub is contacted; one of the same size but other bytes
    when its bytes are read for the upload, before any commit."""
    release = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    parquet = tmp_path / "a" / "en-de" / "test.parquet"
    data = parquet.read_bytes()
    parquet.write_bytes(data + b"x")
    with pytest.raises(services.ReleaseError, match="en-de/test.parquet: size differs from the manifest"):
        services.release_push(release=release, repo_id="lab/xq-meval")
    assert hub.state.calls == []

    parquet.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(services.ReleaseError, match="test.parquet: sha256 differs from the manifest"):
        services.release_push(release=release, repo_id="lab/xq-meval")
    release.refresh_from_db()
    assert release.push_status == "failed" and "sha256 differs" in release.error
    assert hub.state.repos["lab/xq-meval"].commits == [] and "1.0.0" not in hub.state.repos["lab/xq-meval"].tags


def test_the_content_hash_covers_the_bytes_of_the_files(built, tmp_path, monkeypatch):
    """Two releases of the same content whose files differ (another parquet encoding, as a newer writer might
    produce) never share a content hash (#48: a release whose test.parquet differed showed the honest one's
    hash), and a released version is not rewritten with other bytes."""
    from exports.release.domain import release_files

    first = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "a")
    monkeypatch.setitem(release_files.PARQUET_OPTIONS, "compression", "snappy")
    other = services.release_create(project=built, version="1.1.0", out_dir=tmp_path / "b")
    a, b = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert a["en-de/test.parquet"] != b["en-de/test.parquet"]
    assert a["excluded_candidates.csv"] == b["excluded_candidates.csv"]
    assert other.content_hash != first.content_hash
    assert json.loads(b["manifest.json"])["content_hash"] == other.content_hash and verify_release(tmp_path / "b") == []
    with pytest.raises(ReleaseConflict, match="immutable"):
        services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "c")
    # the same bytes again: the same hash (the sampling plan and rows are the first release's)
    monkeypatch.undo()
    again = services.release_create(project=built, version="1.0.0", out_dir=tmp_path / "d")
    assert again.content_hash == first.content_hash and files_of(tmp_path / "d") == a


def test_the_release_holds_peoples_span_annotations_of_its_triplets(built, tmp_path):
    """Annotations made in the span room on pseudo translations land in ``human/span_annotations.parquet``
    under the triplet ids and levels of the release's own triplet file; annotators as pseudonyms (#47)."""
    import pyarrow.parquet as pq

    from annotation.spans import services as span_services
    from core.services import user_create
    from exports.release.domain.release_files import SPAN_ANNOTATIONS_FILE
    from exports.span_items import PSEUDO_TRANSLATIONS, make_span_items

    before = services.release_create(project=built, version="0.9.0", out_dir=tmp_path / "before")
    admin = user_create(username="span_admin", password="span-admin-123", role="admin")
    task = span_services.span_task_create(
        actor=admin, project=built, name="esa-r", protocol="esa", annotators_per_item=2
    )
    assert make_span_items(task, PSEUDO_TRANSLATIONS, direction_code="en-de", limit=3, seed=1) == 3
    submitted = {}
    for n, name in enumerate(("rater_one", "rater_two")):
        user = user_create(username=name, password=f"{name}-pass-123", languages=["de"])
        for i in range(3):
            a = span_services.span_annotation_take_next(user=user, task=task)
            spans = [{"side": "target", "start": 0, "end": 2 + n, "severity": "minor"}]
            span_services.span_annotation_submit(
                user=user, annotation_id=a.pk, spans=spans, score=90 - 10 * i, idempotency_key=f"{name}-{i}"
            )
            submitted[(a.item.pseudo_translation_id, name)] = (90.0 - 10 * i, 2 + n)
    out = tmp_path / "rel"
    services.release_create(project=built, version="1.0.0", out_dir=out)
    rows = pq.read_table(out / SPAN_ANNOTATIONS_FILE).to_pylist()
    triplets = {
        r["triplet_id"]: r
        for r in pq.read_table(out / "en-de" / "test.parquet", columns=["triplet_id", "num_errors", "mt"]).to_pylist()
    }
    assert len(rows) == 6 and {r["annotator"] for r in rows} == {"esa-r-1", "esa-r-2"}
    for row in rows:
        triplet = triplets[row["triplet_id"]]
        assert row["num_errors"] == triplet["num_errors"] and row["protocol"] == "esa" and row["task"] == "esa-r"
        [span] = row["spans"]
        assert span["start"] == 0 and span["end"] in (2, 3) and span["end"] <= len(triplet["mt"])
    pt_of = {
        pt.pk: f"en-de/{pt.segment.external_id}/" + ("+".join(s["label"] for s in pt.spans) or "reference")
        for pt in PseudoTranslation.objects.filter(pk__in={k for k, _ in submitted}).select_related("segment")
    }
    expected = sorted((pt_of[pt], score, end) for (pt, _), (score, end) in submitted.items())
    assert sorted((r["triplet_id"], r["score"], r["spans"][0]["end"]) for r in rows) == expected
    assert "## Human error-span annotations" in (out / "README.md").read_text()
    # the version released before people annotated is written again as it was: without them
    call_command(
        "release", "xqm", "--version", "0.9.0", "--out", str(tmp_path / "before"), "--format", "jsonl", verbosity=0
    )
    assert not (tmp_path / "before" / "human").exists()
    manifest = json.loads((tmp_path / "before" / "manifest.json").read_text())
    assert manifest["content_hash"] == before.content_hash and "span_annotations" not in manifest
