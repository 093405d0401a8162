"""Read-only queries of the release: the rows of its triplet files (the release's row format), streamed
from the project's current pseudo translations. Shared by the release writer and the perf scripts."""

from __future__ import annotations

import json
from collections import defaultdict

from annotation.agreement.domain import spans as span_stats
from annotation.models import SpanTask
from annotation.spans.selectors import completed_annotations
from core.domain.languages import unit_of
from core.models import GoldSegment, Project
from exports.benchmark.selectors import natural_key
from exports.models import PseudoTranslation

TRIPLET_BLOCK_SEGMENTS = 100  # gold pairs read per query when streaming a direction (~7,000 rows for XQ-MEval)


def triplet_directions(project: Project) -> list[str]:
    """Codes of the directions that hold pseudo translations, in release order. ``order_by()`` clears the
    model's default ordering: with it, DISTINCT would be over (code, segment, level, key) and return every
    pseudo translation (≈ 100 MB of rows at 630,000, read before a release stages anything)."""
    return sorted(
        PseudoTranslation.objects.filter(segment__project=project)
        .order_by()
        .values_list("segment__direction__code", flat=True)
        .distinct()
    )


def iter_triplet_rows(project: Project, direction_code: str, *, block: int | None = None):
    """The triplets of one direction of the project's current pseudo translations, streamed in release
    order (segment id in natural order, level, span positions). Nothing here depends on database ids except
    the rare label of a candidate that shares its (type, position) with another one.

    Memory is bounded by ``block`` gold pairs, not by the direction or the release: the direction's gold
    pairs are put in natural order (a few fields each), then their pseudo translations are read ``block``
    pairs at a time through the backend's chunked cursor (server-side on PostgreSQL) and sorted within
    each pair. Read with plain cursors: the ORM's per-value converters would cost seconds on ~60,000 rows."""
    block = block or TRIPLET_BLOCK_SEGMENTS  # read when called, so a setting changed at run time counts
    segments = sorted(
        GoldSegment.objects.filter(project=project, direction__code=direction_code).values_list(
            "id", "external_id", "direction__target__code"
        ),
        key=lambda s: (natural_key(s[1]), s[0]),
    )
    if not segments:
        return
    unit = unit_of(segments[0][2])
    for i in range(0, len(segments), block):
        chunk = segments[i : i + block]
        ext_of = {seg_id: ext for seg_id, ext, _ in chunk}
        texts = _pair_texts(list(ext_of))
        by_segment = _pseudo_rows_by_segment(list(ext_of))
        for seg_id, ext, _ in chunk:
            src, ref = texts[seg_id]
            rows = by_segment.pop(seg_id, [])
            rows.sort(key=lambda item: item[0])
            for _, level, text, marked, error_types, penalty, spans, flags in rows:
                yield {
                    "triplet_id": pseudo_triplet_id(direction_code, ext, spans),
                    "direction": direction_code,
                    "segment_id": ext,
                    "src": src,
                    "ref": ref,
                    "mt": text,
                    "mt_marked": marked,
                    "num_errors": level,
                    "mqm_penalty": penalty,
                    "human_score": -penalty,
                    "error_types": list(error_types),
                    "spans": [
                        {
                            "candidate": s["label"],
                            "error_type": s["error_type"],
                            "ref_start": s["ref_start"],
                            "ref_end": s["ref_end"],
                            "mt_start": s["mt_start"],
                            "mt_end": s["mt_end"],
                        }
                        for s in spans
                    ],
                    "unit": unit,
                    "flags": list(flags),
                }


def _pair_texts(segment_ids: list[int]) -> dict[int, tuple[str, str]]:
    """Source and reference of each gold pair."""
    pairs = GoldSegment.objects.filter(id__in=segment_ids).values_list("id", "source", "reference")
    return {seg_id: (src, ref) for seg_id, src, ref in pairs}


def _pseudo_rows_by_segment(segment_ids: list[int]) -> dict[int, list[tuple]]:
    """One block's pseudo translations per gold pair, each with its release order key first, read through the
    backend's chunked cursor."""
    from django.db import connection

    qn = connection.ops.quote_name
    table = qn(PseudoTranslation._meta.db_table)
    marks = ", ".join(["%s"] * len(segment_ids))
    sql = (
        f"SELECT p.{qn('segment_id')}, p.{qn('level')}, p.{qn('text')}, p.{qn('marked_text')}, p.{qn('error_types')}, "
        f"p.{qn('mqm_penalty')}, p.{qn('spans')}, p.{qn('flags')} FROM {table} p WHERE p.{qn('segment_id')} IN ({marks})"
    )
    loads = json.loads
    by_segment: dict[int, list[tuple]] = defaultdict(list)
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, segment_ids)
        while batch := cursor.fetchmany(2000):
            for seg_id, level, text, marked, error_types, penalty, spans, flags in batch:
                if isinstance(spans, str):  # SQLite returns JSON as text, PostgreSQL as decoded values
                    spans = loads(spans)
                    error_types = loads(error_types)
                    flags = loads(flags)
                order = (level, [(s["ref_start"], s["ref_end"], s["label"]) for s in spans])
                by_segment[seg_id].append((order, level, text, marked, error_types, penalty, spans, flags))
    return by_segment


def pseudo_triplet_id(direction_code: str, external_id: str, spans: list[dict]) -> str:
    """A pseudo translation's ``triplet_id`` in the release (as ``iter_triplet_rows`` names it)."""
    labels = [s["label"] for s in spans]
    return f"{direction_code}/{external_id}/{'+'.join(labels) if labels else 'reference'}"


def span_annotation_rows(project: Project) -> list[dict]:
    """People's completed annotations of the project's pseudo translations, as the release's
    ``human/span_annotations.parquet`` rows: attention items and excluded annotators left out, annotators as
    pseudonyms numbered within a task in the order of their accounts (no user name leaves the platform)."""
    rows = []
    for task in SpanTask.objects.filter(project=project).order_by("name"):
        annotations = (
            completed_annotations(task, attention=False)
            .filter(item__pseudo_translation__isnull=False)
            .select_related("item__pseudo_translation__segment__direction", "item__direction")
            .prefetch_related("spans")
            .order_by("annotator_id", "pk")
        )
        pseudonym: dict[int, str] = {}
        for a in annotations:
            pt = a.item.pseudo_translation
            name = pseudonym.setdefault(a.annotator_id, f"{task.name}-{len(pseudonym) + 1}")
            direction_code = pt.segment.direction.code
            rows.append(
                {
                    "triplet_id": pseudo_triplet_id(direction_code, pt.segment.external_id, pt.spans),
                    "direction": direction_code,
                    "num_errors": pt.level,
                    "task": task.name,
                    "protocol": task.protocol,
                    "annotator": name,
                    "score": a.score,
                    "spans": [
                        {
                            "side": s.side,
                            "start": s.start,
                            "end": s.end,
                            "severity": s.severity,
                            "category": s.category,
                            "origin": s.origin,
                        }
                        for s in sorted(a.spans.all(), key=lambda s: (s.side, s.start, s.end, s.pk))
                    ],
                }
            )
    return rows


def people_agreement(release, visible: list[str] | None = None) -> list[dict]:
    """How people's scores in a release (``human/span_annotations.parquet``) follow its predetermined quality,
    per protocol over the directions in ``visible`` (None: all): the mean score per number of injected errors
    k with a bootstrap interval over triplets (``annotation.agreement.domain.spans.score_by_errors``), and
    Spearman's ρ between the scores and −k over the annotations. [] when the release holds none."""
    import pyarrow.parquet as pq
    from scipy import stats

    from core.storage import ReleaseFiles
    from exports.release.domain.release_files import SPAN_ANNOTATIONS_FILE

    files = ReleaseFiles.for_release(release)
    if files is None or not files.exists(SPAN_ANNOTATIONS_FILE):
        return []
    columns = ["triplet_id", "direction", "num_errors", "protocol", "annotator", "score"]
    with files.local_copy(SPAN_ANNOTATIONS_FILE) as path:
        rows = pq.read_table(path, columns=columns).to_pylist()
    by_protocol: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if (visible is None or row["direction"] in visible) and row["score"] is not None:
            by_protocol[row["protocol"]].append(row)
    out = []
    for protocol, kept in sorted(by_protocol.items()):
        items = {r["triplet_id"]: span_stats.Item(r["triplet_id"], 0, errors=r["num_errors"]) for r in kept}
        # one annotation per row (the check for an annotator's second annotation of an item is the room's)
        annotations = [span_stats.Annotation(r["triplet_id"], n, (), r["score"]) for n, r in enumerate(kept)]
        scores, levels = [r["score"] for r in kept], [-r["num_errors"] for r in kept]
        rho = stats.spearmanr(scores, levels).statistic if len(set(scores)) > 1 and len(set(levels)) > 1 else None
        out.append(
            {
                "protocol": protocol,
                "annotations": len(kept),
                "triplets": len(items),
                "spearman": None if rho is None or rho != rho else float(rho),
                "by_errors": span_stats.score_by_errors(list(items.values()), annotations),
            }
        )
    return out
