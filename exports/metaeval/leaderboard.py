"""A leaderboard (``selectors.release_leaderboard``'s result) as text, CSV or a LaTeX table: one row per
direction and metric, cluster and value, as WMT's tables show them (pure Python, no Django)."""

from __future__ import annotations

import csv
import io

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _groups(board: dict) -> list[dict]:
    # at system level, the multilingual pseudo systems are a group of their own beside the directions
    return [*board["directions"], board["overall"], *([board["multilingual"]] if board.get("multilingual") else [])]


def _parameters(board: dict) -> str:
    p = board["parameters"]
    grouping = f", average_by {p['average_by']}" if p.get("average_by") not in (None, "none") else ""
    nans = ", NaN counted as 0" if p.get("replace_nans_with_zeros") else ""
    return (
        f"{p['resamples']} permutation resamples ({p.get('perm_test', 'scores')} test), seed {p['seed']}, "
        f"block size {p['block_size']}, alpha {p['alpha']}{grouping}{nans}"
    )


def as_text(board: dict) -> str:
    head = (
        f"{board['release']}: {board['label']} at {board['level']} level ({board['reference']}); "
        f"clusters by paired permutation test, {_parameters(board)}"
    )
    lines = [head]
    for group in _groups(board):
        lines.append(f"  {group['direction']} (n={group['n']})")
        for row in group["ranking"]:
            interval = f"  [{row['low']:.4f}, {row['high']:.4f}]" if "low" in row else ""
            lines.append(f"    {row['cluster']:>3}  {row['metric']:<24} {row['value']:.4f}{interval}")
    return "\n".join(lines) + "\n"


def as_csv(board: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["direction", "n", "metric", "statistic", "value", "low", "high", "cluster", "resamples", "seed", "alpha"]
    )
    p = board["parameters"]
    for group in _groups(board):
        for row in group["ranking"]:
            metric = row["metric"]
            if metric[:1] in "=+-@":  # a spreadsheet would run it as a formula
                metric = "'" + metric
            bounds = [repr(row["low"]), repr(row["high"])] if "low" in row else ["", ""]
            writer.writerow(
                [
                    group["direction"],
                    group["n"],
                    metric,
                    board["statistic"],
                    repr(row["value"]),
                    *bounds,
                    row["cluster"],
                    p["resamples"],
                    p["seed"],
                    p["alpha"],
                ]
            )
    return out.getvalue()


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def as_latex(board: dict) -> str:
    """A ``tabular``: a column per direction (and "all"), a row per metric in the overall order, each cell the
    value with its cluster as a superscript; the parameters in a comment."""
    groups = _groups(board)
    metrics = [row["metric"] for row in board["overall"]["ranking"]]
    cells = {(g["direction"], r["metric"]): r for g in groups for r in g["ranking"]}
    lines = [
        f"% {latex_escape(board['label'])}, {_parameters(board)}",
        "\\begin{tabular}{l" + "r" * len(groups) + "}",
        "\\hline",
        "Metric & " + " & ".join(latex_escape(g["direction"]) for g in groups) + " \\\\",
        "\\hline",
    ]
    for metric in metrics:
        values = []
        for g in groups:
            cell = cells.get((g["direction"], metric))
            values.append(f"{cell['value']:.3f}$^{{{cell['cluster']}}}$" if cell else "--")
        lines.append(latex_escape(metric) + " & " + " & ".join(values) + " \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


FORMATS = {"text": as_text, "csv": as_csv}
