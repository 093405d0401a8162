"""Reference fixtures for the span meta-evaluation variants (``exports/metaeval/span_measures.py``): the authors'
own code, from checkouts, run on the committed inputs in ``tests/fixtures/spans``.

    python3.11 -m venv /tmp/span-venv
    /tmp/span-venv/bin/pip install numpy==1.26.4 scipy==1.17.1 pandas==2.2.3 dacite==1.9.2
    /tmp/span-venv/bin/pip install --no-deps /tmp/span     # a checkout of sted19/span-mt-metrics-eval
    /tmp/span-venv/bin/python exports/metaeval/reference/make_span_fixtures.py --span /tmp/span \
        --wmt23 /tmp/qe-eval-scripts --wmt25 /tmp/wmt25-mteval --mtme /tmp/mt-metrics-eval \
        --inputs tests/fixtures/spans > tests/fixtures/spans/expected.json

Checkouts (the commits the committed fixture was made from): sted19/span-mt-metrics-eval ``b55b90f``,
WMT-QE-Task/qe-eval-scripts ``b7cc5e5f`` (``wmt23/task2_evaluate.py``), wmt-conference/wmt25-mteval
``d1f6ab9a`` (``scripts/scoring/task2/scoring_esa.py``), google-research/mt-metrics-eval ``68a481ae``
(``ratings.py``).

What runs, unchanged: ``span_mt_metrics_eval.compute`` with ``measure="EM"`` and ``"MP"`` (its defaults
otherwise); ``score_new`` of the WMT23 script (fed the per-character major/minor arrays its
``load_annotations`` builds, built here by the same rule since that function reads only its own file
layout); ``get_char_f1`` of the WMT25 script (``partial_credit`` 0.5, its own ``get_counts``); and, for the
EvalSet ratings, mt-metrics-eval's ``ratings.ReadRatingFile`` on each ``human-scores/*.rating`` file.

Inputs as the platform gives them: empty spans (an omission) are no span to the span repository, which
refuses them, so they are left out of its input; the WMT23 script knows only major and minor, so a critical
span is given to it as major (both as the platform does). Source-side rating errors are left out (the WMT
scorers mark the translation only).
"""

import argparse
import glob
import importlib.util
import json
import os
import sys
import types
from pathlib import Path


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wmt23_arrays(translations, key):
    # task2_evaluate.load_annotations' rule: arrays of len(mt) + 1, an end past the text cut to it, s == e
    # marks the one character s, -1 offsets skipped; one dict per segment
    out = {}
    for n, t in enumerate(translations):
        size = t["length"]
        seg = {"major": [0] * (size + 1), "minor": [0] * (size + 1)}
        for s, e, sev in t[key]:
            sev = "major" if sev == "critical" else sev
            e = min(e, size)
            if s != -1 and e != -1:
                if s == e:
                    seg[sev][s] += 1
                else:
                    for i in range(s, e):
                        seg[sev][i] += 1
        out[str(n)] = seg
    return {"xx-yy": out}


def measures(translations, span_mt, wmt23, wmt25) -> dict:
    def spans(t, key):
        return [{"start": s, "end": e, "side": "target", "severity": sev} for s, e, sev in t[key] if s < e]

    result = {}
    for name, measure in (("exact", "EM"), ("partial", "MP")):
        r = span_mt.compute(
            [spans(t, "predicted") for t in translations], [spans(t, "gold") for t in translations], measure=measure
        )
        result[name] = {"precision": r.precision, "recall": r.recall, "f1": r.f_score}
    try:
        [[rec, prec, f1]] = wmt23.score_new(
            _wmt23_arrays(translations, "predicted"), _wmt23_arrays(translations, "gold")
        ).values()
        result["wmt23"] = {"precision": prec, "recall": rec, "f1": f1}
    except ZeroDivisionError:  # nothing predicted or nothing gold: their script stops
        result["wmt23"] = {"precision": None, "recall": None, "f1": None}
    errors = lambda t, key: [{"start": s, "end": e, "severity": sev} for s, e, sev in t[key]]  # noqa: E731
    p, r, f = wmt25.get_char_f1(
        [t["length"] for t in translations],
        [errors(t, "gold") for t in translations],
        [errors(t, "predicted") for t in translations],
        partial_credit=0.5,
    )
    result["wmt25"] = {"precision": float(p), "recall": float(r), "f1": float(f)}
    return result


def ratings_cases(root: Path, ratings_module) -> list[dict]:
    """Per EvalSet folder under ``root/evalset`` and language pair: the target-side errors of every rating
    file as ``ReadRatingFile`` reads them, with each system output's length, and the measures of each rating
    against each other one, over the segments both rated."""
    cases = []
    for rating_path in sorted(glob.glob(str(root / "evalset" / "*" / "human-scores" / "*.rating"))):
        evalset_dir = Path(rating_path).parents[1]
        lp, name = Path(rating_path).name.split(".")[0], ".".join(Path(rating_path).name.split(".")[1:-2])
        outputs = {
            Path(p).stem: Path(p).read_text(encoding="utf-8").split("\n")[:-1]
            for p in glob.glob(str(evalset_dir / "system-outputs" / lp / "*.txt"))
        }
        read, _ = ratings_module.ReadRatingFile(rating_path, name)
        cases.append({"evalset": evalset_dir.name, "lp": lp, "name": name, "outputs": outputs, "ratings": read})
    return cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--span", required=True, help="a checkout of sted19/span-mt-metrics-eval")
    parser.add_argument("--wmt23", required=True, help="a checkout of WMT-QE-Task/qe-eval-scripts")
    parser.add_argument("--wmt25", required=True, help="a checkout of wmt-conference/wmt25-mteval")
    parser.add_argument("--mtme", required=True, help="a checkout of google-research/mt-metrics-eval")
    parser.add_argument("--inputs", required=True, help="tests/fixtures/spans")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.span).resolve() / "src"))
    import span_mt_metrics_eval as span_mt

    wmt23 = _load(Path(args.wmt23) / "wmt23" / "task2_evaluate.py", "task2_evaluate")
    wmt25 = _load(Path(args.wmt25) / "scripts" / "scoring" / "task2" / "scoring_esa.py", "scoring_esa")
    sys.path.insert(0, str(Path(args.mtme).resolve()))
    sys.modules.setdefault("apache_beam", types.ModuleType("apache_beam"))
    from mt_metrics_eval import ratings as ratings_module

    inputs = Path(args.inputs)
    groups = json.loads((inputs / "inputs.json").read_text())["groups"]
    expected = {"groups": [{"name": g["name"], **measures(g["translations"], span_mt, wmt23, wmt25)} for g in groups]}

    by_file = ratings_cases(inputs, ratings_module)
    expected["ratings"] = []
    for gold in by_file:
        for other in by_file:
            if other is gold or (other["evalset"], other["lp"]) != (gold["evalset"], gold["lp"]):
                continue
            translations = []
            for system, golds in sorted(gold["ratings"].items()):
                for seg, (g, p) in enumerate(zip(golds, other["ratings"][system])):
                    if g is None or p is None:
                        continue

                    def target(rating):
                        return [[e.start, e.end, e.severity] for e in rating.errors if not e.is_source_error]

                    length = len(gold["outputs"][system][seg])
                    translations.append({"length": length, "predicted": target(p), "gold": target(g)})
            expected["ratings"].append(
                {
                    "evalset": gold["evalset"],
                    "lp": gold["lp"],
                    "gold": gold["name"],
                    "rating": other["name"],
                    "n": len(translations),
                    **measures(translations, span_mt, wmt23, wmt25),
                }
            )
    print(json.dumps(expected, indent=1, sort_keys=True))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
