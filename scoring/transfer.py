"""A scoring worker with no shared file system: it fetches a release's direction files from the platform
over HTTP and uploads the part files it writes. Django-free (httpx, the client scoring already uses).

Configured on the worker (``celery -A scoring.worker worker --platform-url URL``, or the environment read by
``worker_client.platform``, the names the release workers use): unset ``XQMEVAL_PLATFORM_URL``, the worker
reads the release where the task says (``release_dir``) and writes beside it: the shared file system,
nothing copied. Its data directory holds fetched releases, its part files and checkpoints, the judge
cache. Each request carries the scoring job's token (``X-Worker-Job``), sent with the task.

Downloads resume (``Range`` with ``If-Range`` on the file's sha256) and are verified against the sha256
the platform lists; an upload declares the part's sha256 and is idempotent, so a retried task sends it
again safely.

A release pushed to the Hugging Face Hub comes from the Hub: the task names its repo and revision, and the
worker downloads the direction file from ``HF_ENDPOINT`` (default https://huggingface.co; ``HF_TOKEN`` for
a private repo, never the worker token) at that revision, checked against the sha256 the platform lists.
A Hub that refuses, is down or sends other bytes is reported in the log and the platform serves the file;
a worker with ``HF_HUB_OFFLINE=1`` asks the platform only.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from scoring.model_files import offline
from scoring.registry import MetricError
from worker_client import CHUNK, DATA_ENV, URL_ENV, PlatformClient, read_chunks, sha256_file, write_atomic
from worker_client import TransferError as _Refused

HUB_ENDPOINT_ENV = "HF_ENDPOINT"
HUB_TOKEN_ENV = "HF_TOKEN"
HUB_DEFAULT = "https://huggingface.co"

__all__ = ["DATA_ENV", "URL_ENV", "ChecksumMismatch", "Platform", "TransferError", "hub_url", "sha256_file"]

log = logging.getLogger(__name__)


class TransferError(_Refused, MetricError):
    """The platform refused a download or an upload (the message has its reason): a retry cannot help."""


class ChecksumMismatch(ConnectionError):
    """A downloaded file does not have the sha256 the platform lists: fetched again on the next try
    (a ConnectionError, so the worker's retry treats it as a network fault)."""


@dataclass
class Platform(PlatformClient):
    # a ready release never changes: its listing is asked once per worker process
    _listings: dict = field(default_factory=dict, repr=False, compare=False)
    _hub_http: object = field(default=None, repr=False, compare=False)
    # where each file of the last fetch came from: direction -> "hub", "platform" or "kept" (already here)
    sources: dict = field(default_factory=dict, repr=False, compare=False)

    refusal = TransferError

    def release_root(self, release_id: int) -> Path:
        return self.data_dir / "releases" / str(int(release_id))

    def scores_dir(self, release_id: int) -> Path:
        return self.data_dir / "scores" / str(int(release_id))

    @property
    def hub_http(self):
        """A client of its own for the Hub: the worker token goes to the platform only."""
        if self._hub_http is None:
            import httpx

            token = os.environ.get(HUB_TOKEN_ENV, "").strip()
            self._hub_http = httpx.Client(
                headers={"Authorization": f"Bearer {token}"} if token else {},
                timeout=self.timeout,
                follow_redirects=True,  # the Hub answers a file with a redirect to its CDN
            )
        return self._hub_http

    def fetch_release(
        self,
        release_id: int,
        directions: list[str],
        hub_repo: str | None = None,
        hub_revision: str | None = None,
        job_token: str | None = None,
    ) -> Path:
        """The release's ``manifest.json`` and the ``test.parquet`` of ``directions``, in this worker's data
        directory (files already there with the listed sha256 are kept); returns the release directory.

        With ``hub_repo`` and ``hub_revision`` (the release was pushed there) each file comes from the Hub at
        that revision, checked against the sha256 the platform lists; from the platform when the Hub fails."""
        root = self.release_root(release_id)
        listing = self._listings.get(int(release_id))
        if listing is None:
            response = self.http.get(f"/api/workers/releases/{int(release_id)}/", headers=self.job_headers(job_token))
            self.check(response)
            listing = self._listings[int(release_id)] = response.json()
        root.mkdir(parents=True, exist_ok=True)
        write_atomic(root / "manifest.json", json.dumps(listing.get("manifest") or {}, sort_keys=True).encode())
        self.sources = {}
        for code in directions:
            entry = listing["directions"].get(code)
            if entry is None:
                raise TransferError(f"release {release_id} has no direction {code} on the platform")
            target = root / code / "test.parquet"
            if _have(target, entry):
                self.sources[code] = "kept"
                continue
            if hub_repo and hub_revision and not offline():  # HF_HUB_OFFLINE: this worker keeps off the Hub
                try:
                    self._download(
                        self.hub_http, {**entry, "url": hub_url(hub_repo, hub_revision, f"{code}/test.parquet")}, target
                    )
                    self.sources[code] = "hub"
                    continue
                except Exception as exc:  # the platform holds the same file: one source down is no failure
                    log.warning(
                        "release %s %s from the Hub (%s@%s) failed, fetching it from the platform: %s: %s",
                        release_id,
                        code,
                        hub_repo,
                        hub_revision[:12],
                        type(exc).__name__,
                        exc,
                    )
            self._download(self.http, entry, target, self.job_headers(job_token))
            self.sources[code] = "platform"
        return root

    def _download(self, http, entry: dict, target: Path, headers: dict | None = None) -> None:
        sha, size = entry["sha256"], int(entry["bytes"])
        if _have(target, entry):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        have = partial.stat().st_size if partial.is_file() else 0
        if have > size:
            partial.unlink()
            have = 0
        ranged = {"Range": f"bytes={have}-", "If-Range": f'"{sha}"'} if 0 < have < size else {}
        if have < size:
            with http.stream("GET", entry["url"], headers={**(headers or {}), **ranged}) as response:
                self.check(response)
                mode = "ab" if response.status_code == 206 else "wb"  # 200: the whole file again
                with open(partial, mode) as out:
                    for chunk in response.iter_bytes(CHUNK):
                        out.write(chunk)
        got = sha256_file(partial)
        if got != sha:
            partial.unlink(missing_ok=True)
            raise ChecksumMismatch(f"{entry['url']}: downloaded sha256 {got}, the platform lists {sha}")
        os.replace(partial, target)

    def upload_part(
        self, release_id: int, metric: str, direction_code: str, path: Path, job_token: str | None = None
    ) -> dict:
        """PUT the part file with its sha256; the platform's answer (201 stored, 200 had it already)."""
        sha = sha256_file(path)
        url = f"/api/workers/releases/{int(release_id)}/parts/{quote(metric, safe='')}/{quote(direction_code, safe='')}"
        size = path.stat().st_size
        with open(path, "rb") as fh:
            response = self.http.put(
                url,
                content=read_chunks(fh),
                headers={
                    "X-Part-SHA256": sha,
                    "Content-Length": str(size),
                    "Content-Type": "application/vnd.apache.parquet",
                    **self.job_headers(job_token),
                },
            )
            self.check(response)
            return {**response.json(), "status": response.status_code}


def hub_url(repo_id: str, revision: str, rel: str) -> str:
    """The Hub's download URL of a file of a dataset repo at a revision (what huggingface_hub resolves)."""
    endpoint = (os.environ.get(HUB_ENDPOINT_ENV) or HUB_DEFAULT).rstrip("/")
    return f"{endpoint}/datasets/{quote(repo_id, safe='/')}/resolve/{quote(revision, safe='')}/{quote(rel, safe='/')}"


def _have(target: Path, entry: dict) -> bool:
    return target.is_file() and target.stat().st_size == int(entry["bytes"]) and sha256_file(target) == entry["sha256"]
