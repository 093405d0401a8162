"""Reading a release directory (the issue-6 layout): ``<direction>/test.parquet`` per direction, a
``manifest.json`` and a dataset card. Also fetches a Hub dataset repo into the local cache when given a
repo id instead of a directory."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow.parquet as pq

from scoring.faults import HubUnreachable, is_transient
from scoring.model_files import offline
from scoring.registry import MetricError

REQUIRED_COLUMNS = ("triplet_id", "src", "ref", "mt")
OPTIONAL_COLUMNS = ("direction", "segment_id", "num_errors")
# en-de, en-zh, eng_Latn-deu_Latn, ...: a config name with one dash between two language tags.
DIRECTION_RE = re.compile(r"^[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?-[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?$")


class ReleaseFileError(MetricError):
    """A release directory the scoring worker cannot read (a missing file or column, a bad row)."""


@dataclass
class DirectionData:
    direction_code: str
    path: Path
    triplet_ids: list[str]
    segment_ids: list
    levels: list
    src: list[str]
    ref: list[str]
    mt: list[str]
    extra: dict[str, list] = field(default_factory=dict)  # further columns a metric asked for

    @property
    def target_lang(self) -> str:
        return self.direction_code.split("-", 1)[1].split("_", 1)[0]

    @property
    def source_lang(self) -> str:
        return self.direction_code.split("-", 1)[0].split("_", 1)[0]

    def __len__(self) -> int:
        return len(self.triplet_ids)

    def head(self, n: int) -> DirectionData:
        """The first ``n`` triplets, in release order (``--limit``)."""
        n = max(0, int(n))
        return replace(
            self,
            triplet_ids=self.triplet_ids[:n],
            segment_ids=self.segment_ids[:n],
            levels=self.levels[:n],
            src=self.src[:n],
            ref=self.ref[:n],
            mt=self.mt[:n],
            extra={k: v[:n] for k, v in self.extra.items()},
        )

    def input_hash(self, columns: list[str] | None = None) -> str:
        """Identifies exactly what was scored, so a changed release is never mistaken for finished work."""
        h = hashlib.sha256()
        extra = [self.extra[c] for c in (columns or []) if c in self.extra]
        for i, row in enumerate(zip(self.triplet_ids, self.src, self.mt, self.ref)):
            for value in (*row, *(col[i] for col in extra)):
                h.update(str(value).encode("utf-8"))
                h.update(b"\x1f")
            h.update(b"\x1e")
        return h.hexdigest()


@dataclass
class Release:
    root: Path
    manifest: dict

    @property
    def version(self) -> str:
        return str(self.manifest.get("version", ""))

    def directions(self) -> list[str]:
        found = []
        for path in sorted(self.root.glob("*/test.parquet")):
            name = path.parent.name
            if DIRECTION_RE.match(name):
                found.append(name)
        if not found:
            raise ReleaseFileError(f"{self.root}: no direction config found (expected e.g. en-de/test.parquet)")
        return found

    def count(self, direction_code: str) -> int:
        """Triplets of one direction, from the parquet footer (nothing is read)."""
        path = self.root / direction_code / "test.parquet"
        if not path.is_file():
            raise ReleaseFileError(f"{path}: missing; directions in this release: {', '.join(self.directions())}")
        return pq.ParquetFile(path).metadata.num_rows

    def load(self, direction_code: str, extra_columns: list[str] | None = None) -> DirectionData:
        path = self.root / direction_code / "test.parquet"
        if not path.is_file():
            raise ReleaseFileError(f"{path}: missing; directions in this release: {', '.join(self.directions())}")
        table = pq.read_table(path)
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise ReleaseFileError(f"{path}: missing column(s) {', '.join(missing)}")
        cols = {c: table.column(c).to_pylist() for c in REQUIRED_COLUMNS}
        n = table.num_rows
        for column in ("src", "ref", "mt"):
            for i, value in enumerate(cols[column]):
                if not isinstance(value, str):
                    raise ReleaseFileError(
                        f"{path}: row {i} column {column!r} is {type(value).__name__}, expected text"
                    )
        ids = [str(t) for t in cols["triplet_id"]]
        if len(set(ids)) != n:
            dup = next(t for t in ids if ids.count(t) > 1)
            raise ReleaseFileError(f"{path}: triplet_id {dup!r} appears more than once")
        optional = {
            c: (table.column(c).to_pylist() if c in table.column_names else [None] * n) for c in OPTIONAL_COLUMNS
        }
        absent = [c for c in extra_columns or [] if c not in table.column_names]
        if absent:
            raise ReleaseFileError(
                f"{path}: no column {', '.join(map(repr, absent))} (columns: {', '.join(table.column_names)})"
            )
        return DirectionData(
            direction_code=direction_code,
            path=path,
            triplet_ids=ids,
            segment_ids=optional["segment_id"],
            levels=optional["num_errors"],
            src=cols["src"],
            ref=cols["ref"],
            mt=cols["mt"],
            extra={c: table.column(c).to_pylist() for c in extra_columns or []},
        )


def open_release(where: str | Path, revision: str | None = None) -> Release:
    """A local release directory, or a Hub dataset repo id (``owner/name``) fetched into the HF cache."""
    path = Path(where)
    if not path.is_dir():
        if re.fullmatch(r"[\w.-]+/[\w.-]+", str(where)) and not path.exists():
            path = _fetch_hub(str(where), revision)
        else:
            raise ReleaseFileError(f"{where}: not a release directory")
    manifest_path = path / "manifest.json"
    manifest = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ReleaseFileError(f"{manifest_path}: invalid JSON ({exc})") from None
    return Release(root=path, manifest=manifest)


def _fetch_hub(repo_id: str, revision: str | None) -> Path:
    try:
        from huggingface_hub import snapshot_download

        return Path(
            snapshot_download(
                repo_id,
                repo_type="dataset",
                revision=revision,
                allow_patterns=["*.parquet", "*.json", "README.md"],
                local_files_only=offline(),
            )  # HF_HUB_OFFLINE as set now, not when huggingface_hub was imported
        )
    except Exception as exc:  # offline, unknown repo, no permission, the Hub or the network down
        advice = "download it first (huggingface-cli download --repo-type dataset ...) and pass the directory"
        if is_transient(exc):  # a later try may get it: a worker retries
            raise HubUnreachable(
                f"cannot fetch dataset {repo_id!r} from the Hub: unreachable now ({type(exc).__name__}: {exc}); {advice}"
            ) from None
        raise ReleaseFileError(
            f"cannot fetch dataset {repo_id!r} from the Hub ({type(exc).__name__}: {exc}); {advice}"
        ) from None
