"""A release direction that crosses the network: its triplet rows as a checksummed line stream (platform →
release worker), and the files the worker staged as one archive (worker → platform). No Django.

The row stream is JSON lines: a header (what the direction is staged from: release, version, direction,
formats, stamp), one line per triplet row exactly as ``exports.release.selectors.iter_triplet_rows`` yields
it (key order kept: the content hash reads the values in that order), then a trailer with the number of rows
and the sha256 of every byte before it. A stream cut short or altered raises ``StreamBroken`` before the
last row is handed over, so a reader that writes as it reads never finishes a direction from a broken one.

The archive is a tar (gzip) of what ``release_files.write_staged_direction`` wrote for one direction: its
files and its ``.spool/`` share of the content hash with the summary. Its bytes depend only on those
files (no times, owners or modes), so a task that writes the same direction again sends the same archive:
the platform recognises it by its sha256. ``archive_unpack`` checks an archive against what the release
expects and against itself (every file's sha256, the spool's, the counts) before anything is moved in;
``staged_check`` then checks it against what the platform computes from its own rows
(``release_files.direction_expected``): a worker cannot recompute its way past that, since the reference is
not in the archive.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from core.domain.errors import Conflict, Invalid
from exports.release.domain.release_files import (
    SPOOL_DIR,
    TRIPLET_SCHEMA,
    direction_files,
    sha256_file,
    staged_names,
)

ROWS_MEDIA_TYPE = "application/x-ndjson"
ARCHIVE_MEDIA_TYPE = "application/gzip"


class StagedRefused(Invalid):
    """An uploaded staged direction that does not match what it declares or what the release expects;
    ``field`` names what is wrong (sha256, size, body, direction, formats, files, digest, triplets)."""

    code = "staged_refused"

    def __init__(self, field: str, message: str):
        super().__init__(message, field)


class StagedConflict(Conflict):
    """A staged direction the release cannot take now (``field``: release, direction, stamp): the release
    is not being built, or the build changed since the worker read the rows."""

    code = "staged_conflict"

    def __init__(self, field: str, message: str):
        super().__init__(message, field)


class StreamBroken(ConnectionError):
    """A row stream that ended early or whose bytes differ from its trailer: read it again (a
    ConnectionError, so the worker retries it as a network fault)."""


# ---- the row stream ------------------------------------------------------------------------------------


def _line(value: dict) -> bytes:
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def rows_encode(header: dict, rows: Iterable[dict]) -> Iterator[bytes]:
    """The stream's lines: the header, every row, the trailer (count and sha256 of the bytes before it)."""
    h, count = hashlib.sha256(), 0
    first = _line({"header": header})
    h.update(first)
    yield first
    for row in rows:
        line = _line(row)
        h.update(line)
        count += 1
        yield line
    yield _line({"end": {"rows": count, "sha256": h.hexdigest()}})


def rows_decode(lines: Iterable[bytes]) -> tuple[dict, Iterator[dict]]:
    """(header, rows) of a stream read line by line; the rows iterator raises ``StreamBroken`` instead of
    ending when the trailer is missing or does not match what came before it."""
    it = iter(lines)
    h = hashlib.sha256()
    try:
        first = next(it)
    except StopIteration:
        raise StreamBroken("the row stream is empty") from None
    h.update(first)
    try:
        header = json.loads(first)["header"]
    except (ValueError, KeyError, TypeError):
        raise StreamBroken("the row stream does not begin with its header") from None

    def rows() -> Iterator[dict]:
        count = 0
        for line in it:
            value = json.loads(line)
            if "end" in value:
                end = value["end"]
                if end.get("rows") != count or end.get("sha256") != h.hexdigest():
                    raise StreamBroken(
                        f"the row stream's trailer says {end.get('rows')} rows with sha256 {end.get('sha256')}; "
                        f"received {count} rows with sha256 {h.hexdigest()}"
                    )
                if next(it, None) is not None:
                    raise StreamBroken("the row stream goes on after its trailer")
                return
            h.update(line)
            count += 1
            yield value
        raise StreamBroken(f"the row stream ended after {count} rows, before its trailer")

    return header, rows()


# ---- the staged direction as an archive ------------------------------------------------------------------


def archive_members(direction_code: str, formats: Iterable[str]) -> list[str]:
    """What an archive of a staged direction holds, in its order (the summary last: when a platform moves
    the files in, the summary's presence still means the files are complete)."""
    return staged_names(direction_code, tuple(formats))


def archive_write(staging: str | Path, direction_code: str, formats: Iterable[str], target: str | Path) -> str:
    """Pack the staged direction in ``staging`` into ``target``; returns the archive's sha256. Same files,
    same bytes: no modification times (tar's nor gzip's), owners or modes are recorded."""
    staging, target = Path(staging), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name in archive_members(direction_code, formats):
                path = staging / name
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode, info.uid, info.gid = path.stat().st_size, 0, 0o644, 0, 0
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
    tmp.replace(target)
    return sha256_file(target)


def archive_unpack(
    archive: str | Path, into: str | Path, *, direction_code: str, formats: Iterable[str], max_unpacked: int
) -> dict:
    """Unpack an uploaded archive of ``direction`` into ``into`` and check it; returns the direction's
    summary (with its stamp, without the triplet ids). Refuses (``StagedRefused`` naming the field) an
    archive that is not a tar.gz, holds anything but the direction's files (no links, no other paths),
    unpacks past ``max_unpacked`` bytes, or whose summary does not match its files: another direction or
    formats, a file or spool whose sha256 is not the summary's, counts that disagree with the rows."""
    into = Path(into)
    formats = sorted(formats)
    expected = archive_members(direction_code, formats)
    seen: set[str] = set()
    total = 0
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                if member.name not in expected or member.name in seen:
                    raise StagedRefused(
                        "body",
                        f"the archive holds {member.name!r}; a staged {direction_code} holds {', '.join(expected)}",
                    )
                if not member.isreg():
                    raise StagedRefused("body", f"{member.name} in the archive is not a regular file")
                total += member.size
                if total > max_unpacked:
                    raise StagedRefused("size", f"the archive unpacks past {max_unpacked} bytes")
                seen.add(member.name)
                target = into / member.name  # one of the expected names: no path leaves ``into``
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                with open(target, "wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise StagedRefused("body", f"the body is not a readable tar.gz archive ({type(exc).__name__})") from None
    missing = [name for name in expected if name not in seen]
    if missing:
        raise StagedRefused("body", f"the archive lacks {', '.join(missing)}")
    return _summary_check(into, direction_code=direction_code, formats=formats)


def _summary_check(staging: Path, *, direction_code: str, formats: list[str]) -> dict:
    try:
        summary = json.loads((staging / SPOOL_DIR / f"{direction_code}.json").read_text(encoding="utf-8"))
        if not isinstance(summary, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise StagedRefused("body", f"the direction's summary is not JSON ({exc})") from None
    if summary.get("direction") != direction_code:
        raise StagedRefused(
            "direction", f"the archive is of direction {summary.get('direction')!r}, not {direction_code}"
        )
    if summary.get("formats") != formats:
        raise StagedRefused("formats", f"the direction was staged with formats {summary.get('formats')}, not {formats}")
    files = summary.get("files")
    if not isinstance(files, dict) or sorted(files) != sorted(direction_files(direction_code, tuple(formats))):
        raise StagedRefused("files", f"the summary lists files {sorted(files or {})}")
    for rel, sha in sorted(files.items()):
        got = sha256_file(staging / rel)
        if got != sha:
            raise StagedRefused("files", f"{rel}: its sha256 is {got}, its summary says {sha}")
    spool = sha256_file(staging / SPOOL_DIR / f"{direction_code}.bin")
    if spool != summary.get("digest"):
        raise StagedRefused("digest", f"the spool's sha256 is {spool}, the summary says {summary.get('digest')}")
    levels = summary.get("levels")
    triplets = summary.get("triplets")
    if not isinstance(levels, dict) or not isinstance(triplets, int):
        raise StagedRefused("triplets", "the summary has no triplet ids per level or no count")
    ids = sum(len(v) for v in levels.values())
    prefix = f"{direction_code}/"
    if ids != triplets or any(not str(t).startswith(prefix) for v in levels.values() for t in v):
        raise StagedRefused(
            "triplets", f"the summary counts {triplets} triplets and lists {ids} ids of {direction_code}"
        )
    try:
        meta = pq.read_metadata(staging / direction_code / "test.parquet")
        schema = pq.read_schema(staging / direction_code / "test.parquet")
    except Exception as exc:  # pyarrow raises several kinds for a file that is not parquet
        raise StagedRefused(
            "files", f"{direction_code}/test.parquet is not readable parquet ({type(exc).__name__})"
        ) from None
    if meta.num_rows != triplets or not schema.remove_metadata().equals(TRIPLET_SCHEMA):
        raise StagedRefused(
            "triplets", f"{direction_code}/test.parquet has {meta.num_rows} rows, the summary {triplets}"
        )
    return {k: v for k, v in summary.items() if k != "levels"}


def staged_check(staging: str | Path, *, direction_code: str, expected: dict) -> None:
    """Check an unpacked staged direction (``archive_unpack`` passed) against ``expected``, what the platform
    computes from its own rows (``release_files.direction_expected``). Refuses (``StagedRefused``, naming the
    first difference) a ``test.parquet`` whose triplet ids are not the rows' ids in their order, or whose
    schema or any value differs from the rows; a spool (the direction's share of the content hash) or triplet
    ids per level that are not the rows'; a JSONL or TSV file that is not the rows encoded."""
    staging = Path(staging)
    path = staging / direction_code / "test.parquet"
    try:
        table = pq.read_table(path)
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several kinds for a file that is not parquet
        raise StagedRefused(
            "files", f"{direction_code}/test.parquet is not readable parquet ({type(exc).__name__})"
        ) from None
    want = expected["table"]
    got_ids, want_ids = table.column("triplet_id").to_pylist(), want.column("triplet_id").to_pylist()
    if got_ids != want_ids:
        at = next((i for i, (a, b) in enumerate(zip(got_ids, want_ids)) if a != b), min(len(got_ids), len(want_ids)))
        got = got_ids[at] if at < len(got_ids) else "(no row)"
        sent = want_ids[at] if at < len(want_ids) else "(no row)"
        raise StagedRefused(
            "triplets",
            f"{direction_code}/test.parquet row {at + 1} is triplet {got!r}; the platform sent {sent!r} there",
        )
    if not schema.equals(TRIPLET_SCHEMA) or schema.metadata or any(f.metadata for f in schema):
        raise StagedRefused("files", f"{direction_code}/test.parquet does not have the release's schema and metadata")
    for name in TRIPLET_SCHEMA.names:
        if not table.column(name).equals(want.column(name)):
            raise StagedRefused(
                "files", f"{direction_code}/test.parquet: column {name} is not the rows the platform sent"
            )
    summary = json.loads((staging / SPOOL_DIR / f"{direction_code}.json").read_text(encoding="utf-8"))
    if summary.get("digest") != expected["digest"]:
        raise StagedRefused(
            "digest", f"{direction_code}: its share of the content hash is not that of the platform's rows"
        )
    if summary.get("levels") != expected["levels"] or summary.get("transplanted") != expected["transplanted"]:
        raise StagedRefused(
            "triplets", f"{direction_code}: its triplet ids per level or counts are not the platform's rows"
        )
    for rel, sha in sorted(expected["files"].items()):
        if sha256_file(staging / rel) != sha:
            raise StagedRefused("files", f"{rel} is not the platform's rows in that format")
