"""The platform's files behind Django's storage API: a release's files and the parts workers upload are
read (and a finished release published) through named storages (``settings.STORAGES``), never through
paths in the stage code. The local file system is the default; an operator who wants S3-compatible object
storage sets ``RELEASES_STORAGE=s3`` / ``WORKER_PARTS_STORAGE=s3`` (django-storages, docs/operations.md).

- ``releases``: finished releases, one folder per release, ``PROJECT/VERSION/<release-relative name>``.
  On the local file system a release's files are its own directory (``release.path``), as the builder
  wrote them: nothing is copied. In object storage the builder publishes them there when the release is
  finished (``release_publish``), ``manifest.json`` last, so a release whose manifest is in the bucket is
  whole there.
- ``worker_parts``: part files scoring workers upload (``exports.workers.services.part_receive``).
- ``release_staging``: the directions of a release being built (``StagedFiles``): each direction's files
  and its spool, as ``exports.release.domain.release_files.write_staged_direction`` writes them. On the
  local file system a release is staged beside its output directory (``.VERSION.staging``), so storing a
  direction and finishing the release are renames; in object storage under ``PROJECT/VERSION/``, so the
  processes that stage directions and the one that finishes the release share no disk.

Readers take a release-relative name (``en-de/test.parquet``, ``manifest.json``, ``scores/summary.json``):
``ReleaseFiles.for_release(release)`` opens, sizes, lists and streams them (byte ranges read only those
bytes from object storage), and ``local_copy`` gives pyarrow a local file: the file itself on the file
system, a temporary copy streamed from object storage.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

RELEASES = "releases"  # settings.STORAGES aliases
WORKER_PARTS = "worker_parts"
RELEASE_STAGING = "release_staging"
CHUNK = 1024 * 1024
# en-de, eng_Latn-deu_Latn: a release's direction folders (scoring.release.DIRECTION_RE)
_DIRECTION = re.compile(r"^[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?-[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?$")
_SKIPPED = {"scores"}  # what workers on a shared file system write beside a release is not the release


def storage_get(alias: str) -> Storage:
    return storages[alias]


def is_local(storage: Storage) -> bool:
    """Whether the storage keeps its files on this machine's file system (it has paths)."""
    try:
        storage.path("x")
    except NotImplementedError:
        return False
    return True


def _s3_object(storage: Storage, name: str):
    """The boto3 object behind ``name`` in a django-storages S3 storage, or None for any other storage."""
    if not hasattr(storage, "bucket") or not hasattr(storage, "_normalize_name"):
        return None
    from storages.utils import clean_name

    return storage.bucket.Object(storage._normalize_name(clean_name(name)))


def stream(storage: Storage, name: str, start: int = 0, end: int | None = None, chunk: int = CHUNK) -> Iterator[bytes]:
    """The bytes ``start``..``end`` (inclusive; to the end when None) of a stored file, in chunks. From S3
    a ranged GET: only those bytes leave the bucket (django-storages' own file reads the whole object)."""
    obj = _s3_object(storage, name)
    if obj is not None:
        wanted = f"bytes={start}-{'' if end is None else end}"
        body = obj.get(Range=wanted)["Body"] if (start or end is not None) else obj.get()["Body"]
        try:
            yield from body.iter_chunks(chunk)
        finally:
            body.close()
        return
    with storage.open(name, "rb") as fh:
        fh.seek(start)
        left = None if end is None else end - start + 1
        while left is None or left > 0:
            data = fh.read(chunk if left is None else min(chunk, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
            yield data


def sha256_stored(storage: Storage, name: str) -> str:
    h = hashlib.sha256()
    for data in stream(storage, name):
        h.update(data)
    return h.hexdigest()


@contextmanager
def local_copy(storage: Storage, name: str, suffix: str = "") -> Iterator[Path]:
    """A local path to a stored file for readers that need one (pyarrow reads parquet with seeks): the file
    itself on the file system, else a temporary copy streamed from the storage, removed afterwards."""
    if is_local(storage):
        yield Path(storage.path(name))
        return
    with tempfile.TemporaryDirectory(prefix="xqmeval-stored-") as tmp:
        copy = Path(tmp) / f"file{suffix or PurePosixPath(name).suffix}"
        with open(copy, "wb") as out:
            for data in stream(storage, name):
                out.write(data)
        yield copy


def release_prefix(*, project: str, version: str) -> str:
    """Where a release lives in the ``releases`` storage (as under RELEASES_DIR on the file system)."""
    return f"{project}/{version}"


class ReleaseFiles:
    """A release's files by release-relative name, wherever they are kept."""

    def __init__(self, storage: Storage, prefix: str = ""):
        self.storage = storage
        self.prefix = prefix.strip("/")

    @classmethod
    def for_release(cls, release) -> ReleaseFiles | None:
        """The files of ``release`` (an exports Release): in the ``releases`` storage when it is object
        storage and the release was published there, else its own directory; None when it has neither."""
        shared = storage_get(RELEASES)
        if not is_local(shared):
            files = cls(shared, release_prefix(project=release.project.name, version=release.version))
            if files.exists("manifest.json"):
                return files
        return cls.beside(release)  # the file system, or a release never published

    @classmethod
    def beside(cls, release) -> ReleaseFiles | None:
        """The release's own directory (``release.path``) on this machine, or None: where workers on a
        shared file system write their scores (``scores/``), whichever storage holds the release."""
        if release.path and Path(release.path).is_dir():
            return cls(FileSystemStorage(location=release.path))
        return None

    @property
    def local(self) -> bool:
        return is_local(self.storage)

    def name(self, rel: str) -> str:
        rel = str(PurePosixPath(rel))
        if rel.startswith("/") or ".." in PurePosixPath(rel).parts:
            raise ValueError(f"{rel!r}: not a name inside the release")
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def exists(self, rel: str) -> bool:
        return self.storage.exists(self.name(rel))

    def size(self, rel: str) -> int:
        return self.storage.size(self.name(rel))

    def version_key(self, rel: str) -> str:
        """Changes when the file does (name, size, modification time): a key for what is computed from it."""
        name = self.name(rel)
        try:
            modified = self.storage.get_modified_time(name).isoformat()
        except (NotImplementedError, AttributeError):
            modified = ""
        where = self.storage.path(name) if self.local else f"{type(self.storage).__name__}:{name}"
        return f"{where}:{self.storage.size(name)}:{modified}"

    def open(self, rel: str):
        return self.storage.open(self.name(rel), "rb")

    def read_bytes(self, rel: str) -> bytes:
        return b"".join(self.stream(rel))

    def stream(self, rel: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        return stream(self.storage, self.name(rel), start, end)

    def sha256(self, rel: str) -> str:
        return sha256_stored(self.storage, self.name(rel))

    def local_copy(self, rel: str):
        return local_copy(self.storage, self.name(rel))

    def directions(self) -> list[str]:
        """The direction folders that hold a ``test.parquet``, sorted."""
        folders, _ = self.storage.listdir(self.prefix or "")
        return sorted(d for d in folders if _DIRECTION.match(d) and self.exists(f"{d}/test.parquet"))

    def describe(self, rel: str) -> str:
        """Where a file is, for messages: its path on the file system, ``storage:name`` otherwise."""
        name = self.name(rel)
        return self.storage.path(name) if self.local else f"{RELEASES}:{name}"


def release_publish(*, release) -> int:
    """Copy a finished release's files (``release.path``, as the builder wrote them) into the ``releases``
    storage when that is object storage; on the local file system the release directory is already the
    release and nothing is written. ``manifest.json`` goes last, so a manifest in the bucket means the
    release is whole there. Files already stored with the same size are kept (a publish run again resumes).
    Returns the files written."""
    shared = storage_get(RELEASES)
    if is_local(shared):
        return 0
    root = Path(release.path)
    files = ReleaseFiles(shared, release_prefix(project=release.project.name, version=release.version))
    rels = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.relative_to(root).parts[0] not in _SKIPPED
    )
    rels.sort(key=lambda rel: rel == "manifest.json")  # the manifest last
    written = 0
    for rel in rels:
        path = root / rel
        name = files.name(rel)
        if rel != "manifest.json" and shared.exists(name) and shared.size(name) == path.stat().st_size:
            continue
        if shared.exists(name):
            shared.delete(name)  # a stale copy; object storage may otherwise keep it under a new name
        with open(path, "rb") as fh:
            shared.save(name, File(fh, name=name))
        written += 1
    return written


class StagedFiles:
    """The staged directions of one release in the ``release_staging`` storage, by staging-relative name
    (``en-de/test.parquet``, ``.spool/en-de.bin``): a ``release_files.StagedStore`` for the Django-free
    writer's checks and finish step. On the file system it is the staging directory ``local_dir`` itself
    (``root``; the writer's own directory reads serve it); in object storage ``PROJECT/VERSION/`` of the
    bucket, whatever this machine's data directory."""

    def __init__(self, storage: Storage, prefix: str = "", root: Path | None = None):
        self.storage, self.prefix, self.root = storage, prefix.strip("/"), root

    @classmethod
    def for_release(cls, *, project: str, version: str, local_dir: str | Path) -> StagedFiles:
        """Where release ``version`` of ``project`` is staged: ``local_dir`` (beside its output directory,
        so a finished release is the staging directory renamed) unless ``release_staging`` is object
        storage."""
        shared = storage_get(RELEASE_STAGING)
        if is_local(shared):
            root = Path(local_dir)
            return cls(FileSystemStorage(location=str(root)), "", root)
        return cls(shared, release_prefix(project=project, version=version))

    @property
    def local(self) -> bool:
        return self.root is not None

    def describe(self) -> str:
        return str(self.root) if self.local else f"{RELEASE_STAGING}:{self.prefix}/"

    def name(self, rel: str) -> str:
        rel = str(PurePosixPath(rel))
        if rel.startswith("/") or ".." in PurePosixPath(rel).parts:
            raise ValueError(f"{rel!r}: not a name inside the staging area")
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def chunks(self, rel: str) -> Iterator[bytes]:
        name = self.name(rel)
        if not self.storage.exists(name):
            raise FileNotFoundError(f"{self.describe()}: no {rel}")
        yield from stream(self.storage, name)

    def scratch(self, label: str) -> Path:
        """A new empty local folder to write a direction into (or assemble the release in) before it is
        stored: beside the staging directory on the file system (same file system: storing is a rename),
        a temporary folder otherwise. The caller removes it."""
        parent = self.root.parent if self.local else Path(tempfile.gettempdir())
        parent.mkdir(parents=True, exist_ok=True)
        folder = parent / f".{label}-{uuid.uuid4().hex[:12]}"
        folder.mkdir()  # not mkdtemp: its 0700 mode would stay on a folder renamed into the release
        return folder

    def direction_save(self, scratch: Path, direction_code: str, names: list[str]) -> None:
        """Store a direction written into ``scratch`` (``names``: ``release_files.staged_names``, the summary
        last), replacing what an earlier attempt staged. On the file system each file is renamed into the
        staging directory (no copy); in object storage uploaded, the summary last, so a summary present
        still means the direction's files are complete."""
        summary = names[-1]
        if self.local:
            (self.root / summary).unlink(missing_ok=True)
            old = self.root / direction_code
            if old.is_dir():
                shutil.rmtree(old)
            for rel in names:
                target = self.root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(scratch / rel, target)
            return
        self.delete(summary)
        self.delete_tree(direction_code)
        for rel in names:
            with open(scratch / rel, "rb") as fh:
                self.storage.save(self.name(rel), File(fh, name=rel))

    def delete(self, rel: str) -> None:
        name = self.name(rel)
        if self.storage.exists(name):
            self.storage.delete(name)

    def delete_tree(self, rel: str = "") -> None:
        """Remove a folder of the staging area (all of it when ``rel`` is empty)."""
        if self.local:
            shutil.rmtree(self.root / rel if rel else self.root, ignore_errors=True)
            return
        top = self.name(rel) if rel else self.prefix
        obj = _s3_object(self.storage, top + "/x")
        if obj is not None:  # one listing, deletes in batches
            self.storage.bucket.objects.filter(Prefix=obj.key[:-1]).delete()
            return
        folders, files = self.storage.listdir(top)
        for f in files:
            self.storage.delete(f"{top}/{f}")
        for d in folders:
            self.delete_tree(f"{rel}/{d}" if rel else d)

    def folders(self) -> list[str]:
        """The folders at the top of the staging area (directions, and ``.spool``)."""
        if self.local:
            return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []
        folders, _ = self.storage.listdir(self.prefix)
        return sorted(folders)
