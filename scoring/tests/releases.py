"""Small release directories in the issue-6 layout, for the scoring tests and the platform's scoring
tests (tests/exports/scores). Plain module: importable from either virtualenv."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SOURCES = [
    "The committee approved the new budget after a long debate.",
    "Heavy rain caused flooding in several villages near the river.",
    "She has been teaching mathematics at the local school for ten years.",
    "The museum will reopen next spring with a larger collection.",
    "Doctors recommend drinking water regularly during hot weather.",
    "The train to the capital was delayed by two hours this morning.",
    "Researchers discovered a new species of frog in the rainforest.",
    "He forgot his umbrella and arrived at the meeting completely wet.",
]
REFS = {
    "en-de": [
        "Der Ausschuss genehmigte den neuen Haushalt nach einer langen Debatte.",
        "Starker Regen verursachte Überschwemmungen in mehreren Dörfern am Fluss.",
        "Sie unterrichtet seit zehn Jahren Mathematik an der örtlichen Schule.",
        "Das Museum wird im nächsten Frühjahr mit einer größeren Sammlung wiedereröffnet.",
        "Ärzte empfehlen, bei heißem Wetter regelmäßig Wasser zu trinken.",
        "Der Zug in die Hauptstadt hatte heute Morgen zwei Stunden Verspätung.",
        "Forscher entdeckten eine neue Froschart im Regenwald.",
        "Er vergaß seinen Regenschirm und kam völlig nass zur Besprechung.",
    ],
    "en-zh": [
        "经过长时间的辩论，委员会批准了新的预算。",
        "大雨导致河边的几个村庄发生洪水。",
        "她在当地学校教数学已经十年了。",
        "博物馆将于明年春天重新开放，藏品更多。",
        "医生建议在炎热天气里经常喝水。",
        "今天早上开往首都的火车晚点了两个小时。",
        "研究人员在雨林中发现了一种新的青蛙。",
        "他忘了带伞，到达会议时全身湿透。",
    ],
}
FILLERS = {"en-de": ["nicht", "Katze", "gestern", "rot", "Haus"], "en-zh": ["不", "猫", "昨天", "红", "房子"]}


def perturb(ref: str, k: int, direction_code: str, rng: random.Random) -> str:
    """k crude edits (deletion / replacement / insertion), enough to make scores vary with k."""
    chars = direction_code == "en-zh"
    units = list(ref) if chars else ref.split()
    for _ in range(k):
        op = rng.choice(["del", "sub", "ins"])
        pos = rng.randrange(len(units))
        if op == "del" and len(units) > 2:
            del units[pos]
        elif op == "sub":
            units[pos] = rng.choice(FILLERS[direction_code])
        else:
            units.insert(pos, rng.choice(FILLERS[direction_code]))
    return ("" if chars else " ").join(units)


def release_rows(direction_code: str, per_level: int = 1, levels=range(6), seed: int = 7) -> list[dict]:
    rng = random.Random(f"{seed}-{direction_code}")
    rows = []
    for seg, (src, ref) in enumerate(zip(SOURCES, REFS[direction_code])):
        for k in levels:
            for rep in range(per_level if k else 1):
                mt = ref if k == 0 else perturb(ref, k, direction_code, rng)
                rows.append(
                    {
                        "triplet_id": f"{direction_code}:{seg}:{k}:{rep}",
                        "direction": direction_code,
                        "segment_id": str(seg),
                        "src": src,
                        "ref": ref,
                        "mt": mt,
                        "mt_marked": mt,
                        "num_errors": k,
                        "mqm_penalty": 5 * k,
                        "error_types": ["mistranslation"] * k,
                        "spans": json.dumps([]),
                    }
                )
    return rows


def write_release(root: Path, directions=("en-de", "en-zh"), **kw) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    counts = {}
    for d in directions:
        rows = release_rows(d, **kw)
        (root / d).mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), root / d / "test.parquet")
        counts[d] = len(rows)
    (root / "manifest.json").write_text(json.dumps({"version": "test-1", "counts": counts}))
    (root / "README.md").write_text(
        "---\nlicense: cc-by-sa-4.0\nconfigs:\n"
        + "".join(
            f"- config_name: {d}\n  data_files:\n  - split: test\n    path: {d}/test.parquet\n" for d in directions
        )
        + "---\n# test release\n"
    )
    return root


def corpus_lines() -> list[str]:
    lines = list(SOURCES)
    for d in REFS:
        lines += REFS[d] + FILLERS[d]
    return lines


SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "xqmeval"


def write_release_from_shared(root: Path, shared: Path, directions=("en-de",)) -> Path:
    """A release directory built from the shared XQ-MEval single-error candidates: one triplet per candidate
    (its <v> marks removed) plus the error-free reference of every segment (level 0)."""
    import re

    mark = re.compile(r"</?v>")
    root.mkdir(parents=True, exist_ok=True)
    counts = {}
    for d in directions:
        rows, refs = [], {}
        for f in sorted((shared / "candidates").glob(f"{d}-*.parquet")):
            for r in pq.read_table(f).to_pylist():
                rows.append(
                    {
                        "triplet_id": f"{d}:{r['segment_id']}:1:{r['error_type']}:{r['count_id']}",
                        "direction": d,
                        "segment_id": str(r["segment_id"]),
                        "src": r["src"],
                        "ref": r["ref"],
                        "mt": mark.sub("", r["mt"]),
                        "num_errors": 1,
                    }
                )
                refs.setdefault(str(r["segment_id"]), r)
        rows[:0] = [
            {
                "triplet_id": f"{d}:{s}:0",
                "direction": d,
                "segment_id": s,
                "src": r["src"],
                "ref": r["ref"],
                "mt": r["ref"],
                "num_errors": 0,
            }
            for s, r in refs.items()
        ]
        rows.sort(key=lambda r: (int(r["segment_id"]), r["num_errors"], r["triplet_id"]))
        (root / d).mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), root / d / "test.parquet")
        counts[d] = len(rows)
    (root / "manifest.json").write_text(json.dumps({"version": "shared-test", "counts": counts}))
    return root
