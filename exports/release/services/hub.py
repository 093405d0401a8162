"""Pushes to the Hugging Face Hub: a push checked and queued, refused, or carried out file by file
against the release's manifest."""

from __future__ import annotations

import json
import os

from django.utils import timezone

from core import storage
from exports.models import Release
from exports.release.domain import release_files
from exports.release.services.content import HUB_REPO_RE, ReleaseError
from exports.release.services.staging import _release_progress
from scoring.api import is_transient  # network faults and Hub 5xx/429, as the scoring workers retry them


def push_prepare(*, release: Release, repo_id: str) -> None:
    """Check a push request from the UI and mark the release as queued for pushing."""
    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status})")
    if release.push_status == "pushing":  # a double click: the first push is queued or running
        raise ReleaseError(f"{release} is already being pushed to {release.hub_repo}")
    _release_progress(release, hub_repo=repo_id, push_status="pushing", stage="push queued", progress=0)


def push_refusal_record(*, release: Release, reason: str) -> None:
    """A queued push that the worker refused before reaching the Hub (no ``HF_TOKEN`` in its environment,
    files missing or changed): recorded like a Hub failure, so the release does not stay ``pushing`` (which
    hides the push button) and the page shows why."""
    release.refresh_from_db(fields=["push_status"])
    if release.push_status == "pushing":
        _release_progress(release, push_status="failed", stage="push failed", error=token_remove(text=reason))


CARD_FILES = ("README.md", "manifest.json")


class HubPushError(ReleaseError):
    """A push that the Hub or the network refused. Its text has the token cut out and it carries no cause
    (the original may quote the credentials, and tracebacks reach logs and the result backend);
    ``transient``: a network fault, a Hub 5xx or 429, worth retrying (``scoring.faults.is_transient``)."""

    code = "hub_push_refused"

    def __init__(self, message: str, transient: bool = False):  # one positional argument: rebuilt from a result backend
        super().__init__(message)
        self.transient = transient


def token_remove(*, text: str) -> str:
    """``text`` with the Hub token (``HF_TOKEN``) cut out: failure texts are stored on the release and shown,
    and a Hub, proxy or client error may quote the credentials it was sent."""

    token = os.environ.get("HF_TOKEN", "")
    return text.replace(token, "[redacted]") if token else text


def _hub_additions(api, repo_id: str, files: storage.ReleaseFiles, manifest: dict, names) -> list:
    """The Hub commit operations adding ``names`` of a release, one file at a time: each is checked against
    the manifest's sha256 on the very bytes sent (a local copy when the release is in object storage), and
    preuploaded while its copy exists; LFS files go to the Hub then (the client sends none it already holds
    and frees them), small "regular" files are kept in memory for the commit, which carries them inline."""
    from huggingface_hub import CommitOperationAdd

    additions = []
    for rel in names:
        with files.local_copy(rel) as path:
            expected = manifest["files"].get(rel, {}).get("sha256")  # manifest.json lists itself nowhere
            if expected is not None and release_files.sha256_file(path) != expected:
                raise ReleaseError(f"{files.describe(rel)}: sha256 differs from the manifest; export it again")
            addition = CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path))
            api.preupload_lfs_files(repo_id, additions=[addition], repo_type="dataset")
            if not files.local and addition.path_or_fileobj != b"":  # not uploaded yet and its copy goes now
                addition.path_or_fileobj = path.read_bytes()
        additions.append(addition)
    return additions


def release_push(*, release: Release, repo_id: str, private: bool = True, progress=None) -> Release:
    """Push a written release to a Hub dataset repo and record the revision.

    The token comes from ``HF_TOKEN`` (never stored), the endpoint from ``HF_ENDPOINT`` when set. Resumable:
    a version already tagged on the repo is only recorded; otherwise the data files go in a first commit
    (files already on the Hub with the same content are skipped by the client), then the dataset card and
    manifest in a second one, so a repo never shows a card for data it does not hold; the commit is tagged
    with the version."""

    from huggingface_hub import HfApi

    token = _push_token(release=release, repo_id=repo_id)
    files, manifest = _pushed_files(release=release)
    step = progress or (lambda stage, pct: None)
    _release_progress(
        release, hub_repo=repo_id, push_status="pushing", stage="pushing: creating repo", progress=0, error=""
    )
    endpoint = os.environ.get("HF_ENDPOINT") or None
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        revision = _push_commits(api, release=release, repo_id=repo_id, files=files, manifest=manifest, step=step)
    except ReleaseError as exc:  # a file that differs from the manifest: refused, not a Hub fault
        _release_progress(release, push_status="failed", stage="push failed", error=str(exc))
        raise
    except Exception as exc:
        message = token_remove(text=f"push to {repo_id}: {type(exc).__name__}: {exc}")
        _release_progress(release, push_status="failed", stage="push failed", error=message)
        raise HubPushError(message, transient=is_transient(exc)) from None
    _release_progress(
        release,
        hub_revision=revision,
        push_status="pushed",
        pushed_at=timezone.now(),
        stage="pushed",
        progress=100,
        error="",
    )
    step("pushed", 100)
    return release


def _push_token(*, release: Release, repo_id: str) -> str:
    """The Hub token, once the repo id and the release's status allow a push."""
    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status}); write it first")
    token = os.environ.get("HF_TOKEN")
    if not token:
        raise ReleaseError("HF_TOKEN is not set in the environment")
    return token


def _pushed_files(*, release: Release):
    """The release's files and manifest, once every file the manifest names is there with its size."""
    # read through the storage: the bucket when the release was published there (a worker on another host
    # has no copy of the builder's directory), else the release's own directory
    files = storage.ReleaseFiles.for_release(release)
    if files is None or not files.exists("manifest.json"):
        raise ReleaseError(f"{release}: no files at {release.path}; export it again with the release command")
    manifest = json.loads(files.read_bytes("manifest.json"))
    problems = [
        f"{p}: missing" if not files.exists(p) else f"{p}: size differs from the manifest"
        for p, info in sorted(manifest["files"].items())
        if not files.exists(p) or ("bytes" in info and files.size(p) != info["bytes"])
    ]
    if problems:
        where = files.describe("manifest.json").rsplit("/", 1)[0]
        raise ReleaseError(f"{release}: files at {where} differ from the manifest: {'; '.join(problems[:5])}")
    return files, manifest


def _push_commits(api, *, release: Release, repo_id: str, files, manifest: dict, step) -> str:
    """The revision tagged with the release's version: the tag's when the repo has it already, else the data
    files' commit, then the card's (tagged)."""
    tag = next((t for t in api.list_repo_refs(repo_id, repo_type="dataset").tags if t.name == release.version), None)
    if tag is not None:
        revision = tag.target_commit
    else:
        data_files = sorted(p for p in manifest["files"] if p not in CARD_FILES)
        _release_progress(release, stage="pushing: data files", progress=10)
        step("data files", 10)
        api.create_commit(
            repo_id,
            _hub_additions(api, repo_id, files, manifest, data_files),
            commit_message=f"{release.project.name} {release.version}: data files",
            repo_type="dataset",
        )
        _release_progress(release, stage="pushing: dataset card", progress=80)
        step("dataset card", 80)
        commit = api.create_commit(
            repo_id,
            _hub_additions(api, repo_id, files, manifest, CARD_FILES),
            commit_message=f"{release.project.name} {release.version}: dataset card and manifest",
            commit_description=f"content hash {release.content_hash}",
            repo_type="dataset",
        )
        revision = commit.oid
        api.create_tag(
            repo_id,
            tag=release.version,
            revision=revision,
            tag_message=f"content hash {release.content_hash}",
            repo_type="dataset",
        )
    return revision
