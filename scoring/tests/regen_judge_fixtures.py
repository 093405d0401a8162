"""Regenerate ``scoring/tests/fixtures/judge_reference.json``: the judge metrics' authors' own functions run
on hand-made inputs (edge cases included), so that ``test_judge_references.py`` compares this project's
functions with theirs. Nothing of this project is imported; the authors' code runs unchanged, with only
the modules it imports but these functions never call (LLM clients, plotting, dataset loading) replaced
by empty stand-ins.

    python3.11 -m venv /tmp/ref-env
    /tmp/ref-env/bin/pip install numpy==1.26.4 scikit-learn==1.9.1 sacrebleu==2.6.0 pandas==2.2.3
    # checkouts of the three repositories (the commits the committed fixture was made from):
    #   m42-health/cross-examination-framework  9ec5bb4873433f591e1f4d012bcaae6b7ff21c09
    #   dayeonki/askqe                           7e4c22612018a005f257064d46433f65d776cc6b
    #   intuit-ai-research/DCR-consistency       14e71c12f666230b5cc65e7af9d05bc6ec6087f4
    /tmp/ref-env/bin/python scoring/tests/regen_judge_fixtures.py --cef /tmp/cef --askqe /tmp/askqe --dcr /tmp/dcr

(numpy, scikit-learn and sacrebleu at the versions of ``scoring/requirements.txt``, so that a difference
is the method's, not a library release's.) AskQE's checkout needs only the two Python files read here
(its data files are Git LFS objects and may be absent).

What runs: CEF ``calculate_scores`` (``cef-paper/src/cef_framework/QAG.py``) and the ADR/ADS script
``cef-paper/src/cef_robustness/robestness_scores.py`` (fed in-memory datasets in its own layout); AskQE
``compare_answers`` (``evaluation/string-comparison/utils.py``) and ``biomqm/human_simulation/gmm.py``
(fed a JSONL file in a temporary directory: one direction's scores, or several directions' one after
another in sorted order, as the authors fit one mixture over their whole file); DCR ``DCE_AMC.auto_metric_converter``
(``dcr/components/dce_amc.py``) with a stand-in LLM that returns the AMC answer.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import types
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "judge_reference.json"
JUDGES = [
    "meta-llama/Llama-3.3-70B-Instruct",
    "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-27b-it",
    "openai/gpt-oss-120b",
]  # the five names robestness_scores.py loads


def _stub_modules(*names: str, **attrs) -> None:
    for name in names:
        module = types.ModuleType(name)
        module.__path__ = []  # a package, so that "from x.y import z" finds x
        for key, value in attrs.get(name.replace(".", "_"), {}).items():
            setattr(module, key, value)
        sys.modules.setdefault(name, module)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commit(repo: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- CEF ----------------------------------------------------------------------------------------------------

CEF_CASES = [
    # (questions from the MT answered on the source, questions from the source answered on the MT): (predicted, gold)
    (
        "paper appendix: 3 YES, 3 NO, 4 IDK on gold YES",
        [("YES", "YES")] * 3 + [("NO", "YES")] * 3 + [("IDK", "YES")] * 4,
        [("YES", "YES")] * 4,
    ),
    (
        "hand case",
        [("YES", "YES"), ("NO", "YES"), ("YES", "NO"), ("IDK", "YES"), ("YES", "YES")],
        [("YES", "YES"), ("NO", "YES"), ("IDK", "YES"), ("YES", "YES"), ("NO", "NO")],
    ),
    (
        "IDK golds dropped",
        [("YES", "IDK"), ("NO", "IDK"), ("YES", "YES")],
        [("IDK", "IDK"), ("NO", "YES"), ("YES", "IDK")],
    ),
    ("every gold IDK: no grounded question", [("YES", "IDK")], [("NO", "IDK"), ("YES", "IDK")]),
    ("no questions at all", [], []),
    ("contradiction on a NO gold", [("NO", "NO"), ("YES", "NO")], [("YES", "NO"), ("IDK", "NO"), ("NO", "NO")]),
]


def cef_scores(root: Path) -> list[dict]:
    _stub_modules(
        "LLM_API",
        "utils",
        "nltk",
        "nltk.tokenize",
        LLM_API={"LLM_Caller": object},
        utils={"load_yaml": None, "safe_load_questions": None},
        nltk_tokenize={"word_tokenize": str.split},
    )
    qag = _load(root / "cef-paper" / "src" / "cef_framework" / "QAG.py", "cef_qag")
    out = []
    for name, on_description, on_summary in CEF_CASES:
        row = {
            "mt_q_on_src": [
                {"predicted": p, "gold": g, "question": f"q{i}"} for i, (p, g) in enumerate(on_description)
            ],
            "src_q_on_mt": [{"predicted": p, "gold": g, "question": f"q{i}"} for i, (p, g) in enumerate(on_summary)],
        }
        # main.py passes the document's answers to the summary's questions first, the summary's to the document's second
        result = qag.calculate_scores(row, "mt_q_on_src", "src_q_on_mt")
        out.append(
            {
                "case": name,
                "mt_q_on_src": on_description,
                "src_q_on_mt": on_summary,
                "coverage": result["coverage score"],
                "conformity": result["conformity score"],
                "consistency": result["consistency score"],
            }
        )
    return out


# Robustness: per judge, per source (example), its questions and every other judge's answers to them.
# Judge index -> list over examples of (question texts, {answering judge index: answers or None}).
def _robustness_cases() -> list[dict]:
    import random

    rng = random.Random(7)
    cases = []
    for case_no in range(3):
        n_examples = 4 + case_no
        data = {}
        for author in range(5):
            examples = []
            for e in range(n_examples):
                n_q = rng.randint(1 if case_no else 0, 4)
                texts = [f"Does source {e} say fact {rng.randint(0, 5)}?" for _ in range(n_q)]  # repeats across judges
                answers = {}
                for other in range(5):
                    if other == author:
                        continue
                    # case 2: now and then an answer that stayed unreadable (None)
                    choices = ["YES", "YES", "YES", "NO", "IDK"] + ([None] if case_no == 2 else [])
                    answers[other] = [rng.choice(choices) for _ in texts]
                examples.append((texts, answers))
            data[author] = examples
        cases.append({"case": f"random {case_no}", "data": data})
    return cases


class _Split:
    def __init__(self, examples: list[dict], columns: list[str]):
        self.examples = examples
        self.column_names = columns

    def __iter__(self):
        return iter(self.examples)

    def __getitem__(self, idx):
        return self.examples[idx]

    def __len__(self):
        return len(self.examples)


def cef_reliability(root: Path) -> list[dict]:
    import pandas as pd

    source = (root / "cef-paper" / "src" / "cef_robustness" / "robestness_scores.py").read_text()
    out = []
    for case in _robustness_cases():
        datasets = {}
        for author, examples in case["data"].items():
            columns = ["question_list"] + [f"answers_{JUDGES[o]}" for o in range(5) if o != author]
            rows = []
            for texts, answers in examples:
                row = {"question_list": [{"question": t} for t in texts] or None}
                for o, values in answers.items():
                    row[f"answers_{JUDGES[o]}"] = values
                rows.append(row)
            datasets[JUDGES[author]] = {"en-xx": _Split(rows, columns)}

        def load_from_disk(path, _datasets=datasets):
            name = path.rsplit("_", 1)[1].replace("+++", "/")
            return _datasets[name]

        shown: list = []
        before = set(sys.modules)
        _stub_modules(
            "requests",
            "transformers",
            "scipy",
            "sentencepiece",
            "sacrebleu",
            "sacrebleu.tokenizers",
            "evaluate",
            "jinja2",
            "jsonfinder",
            "datasets",
            "yaml",
            "tqdm",
            transformers={"AutoTokenizer": None},
            scipy={"stats": None},
            sacrebleu_tokenizers={"BaseTokenizer": object},
            jinja2={"Template": None},
            jsonfinder={"jsonfinder": None},
            datasets={"load_from_disk": None},
            tqdm={"tqdm": lambda x: x},
        )
        sys.modules["datasets"].load_from_disk = load_from_disk
        namespace = {"display": lambda df, shown=shown: shown.append(df.copy()), "__name__": "robustness"}
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, "robestness_scores.py", "exec"), namespace)
        for name in set(sys.modules) - before:  # the stand-ins must not hide real packages from later steps
            del sys.modules[name]
        adr_df, ads_df = shown[0], shown[1]
        value = lambda cell: float(str(cell).split(" (")[0])  # noqa: E731  "12.5 (3)" -> 12.5 (percent, 2 decimals)
        judges = {}
        for m in JUDGES:
            adr = adr_df[adr_df["model"] == m]["en-xx"].iloc[0]
            ads = ads_df[ads_df["Model"] == m]["en-xx"].iloc[0]
            judges[m] = {"adr_percent": value(adr), "ads_percent": value(ads)}
        assert isinstance(adr_df, pd.DataFrame)
        data = {
            JUDGES[a]: [{"questions": t, "answers": {JUDGES[o]: v for o, v in ans.items()}} for t, ans in ex]
            for a, ex in case["data"].items()
        }
        out.append({"case": case["case"], "judges": JUDGES, "data": data, "result": judges})
    return out


# ---- AskQE --------------------------------------------------------------------------------------------------

ASKQE_PAIRS = [
    ("Paris", "Paris"),
    ("the Paris.", "Paris"),
    ("paris", "Paris"),
    ("", ""),
    ("", "No Answer"),
    ("No Answer", "No Answer"),
    ("in 1999, in May", "May 1999"),
    ("The cat sat on the mat.", "a cat sat on a mat"),
    ("three apples", "3 apples"),
    ("Le chat noir", "le chat"),
    ("新しい種", "新しい種類"),
    ("It's a dog's life!", "its a dogs life"),
    ("  spaced   out ", "spaced out"),
    ("An answer", "an answer"),
]


def askqe_similarity(root: Path) -> list[dict]:
    utils = _load(root / "evaluation" / "string-comparison" / "utils.py", "askqe_utils")
    out = []
    for pred, gold in ASKQE_PAIRS:
        f1, em, chrf, bleu = utils.compare_answers(pred, gold)  # normalize=True, as string_comparison.py calls it
        out.append(
            {
                "prediction": pred,
                "gold": gold,
                "f1": float(f1),
                "em": float(em),
                "chrf": float(chrf),
                "bleu": float(bleu),
                "f1_raw": float(utils.f1_score(pred, gold, normalize=False)),
            }
        )
    return out


GMM_CASES = [
    ("bimodal", [0.1, 0.15, 0.12, 0.2, 0.18, 0.8, 0.85, 0.9, 0.82, 0.88, 0.95, 0.79]),
    ("ties", [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 0.0, 0.0, 0.25]),
    ("skewed", [0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.3, 0.98, 0.99, 1.0]),
    ("a missing score counts as 0", [0.7, 0.75, None, 0.8, 0.2, 0.22, 0.9, 0.85, None, 0.6]),
]


# Pooled: the authors fit one mixture over their whole file. Direction -> scores; the file holds the
# directions one after another in sorted order (the project's order, so that both fits see the same rows).
GMM_POOLED_CASES = [
    (
        "two directions of different quality",
        {
            "en-de": [0.9, 0.92, 0.88, 0.95, 0.6, 0.91, 0.93, 0.62, 0.89, 0.94],
            "en-zh": [0.3, 0.35, 0.6, 0.28, 0.62, 0.33, 0.4, 0.65, 0.31, 0.38],
        },
    ),
    (
        "ties across directions, one direction of a single value",
        {
            "en-de": [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0],
            "en-es": [0.5, 0.5, 0.5, 0.0, 0.0, 0.25],
            "en-zh": [1.0, 1.0, 1.0, 1.0],
        },
    ),
    (
        "missing scores, a direction of one segment",
        {
            "de-en": [0.7, None, 0.8, 0.75, 0.2, None],
            "en-cs": [0.9],
            "en-de": [0.22, 0.85, 0.6, None, 0.15, 0.95],
        },
    ),
]


def _run_gmm_script(source: str, scores: list) -> tuple[dict, list[dict]]:
    """The authors' ``gmm.py`` run unchanged on a JSONL file of ``scores``: its namespace and output rows."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "classified").mkdir()
        with open(Path(tmp) / "askqe_sbert.jsonl", "w") as f:
            for s in scores:
                # the script fits "avg_cos_sim" and decides on "avg_xcomet": both carry the score
                f.write(json.dumps({} if s is None else {"avg_cos_sim": s, "avg_xcomet": s}) + "\n")
        here = os.getcwd()
        os.chdir(tmp)
        try:
            namespace = {"__name__": "gmm"}
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, "gmm.py", "exec"), namespace)
            rows = [json.loads(line) for line in open("classified/askqe_sbert.jsonl")]
        finally:
            os.chdir(here)
    return namespace, rows


def _gmm_source(root: Path) -> str:
    source = (root / "biomqm" / "human_simulation" / "gmm.py").read_text()
    _stub_modules("matplotlib", "matplotlib.pyplot")
    plt = sys.modules["matplotlib.pyplot"]
    for name in ("scatter", "axvline", "xlabel", "ylabel", "title", "legend", "savefig", "show"):
        setattr(plt, name, lambda *a, **k: None)
    sys.modules["matplotlib"].pyplot = plt
    return source


def askqe_gmm(root: Path) -> list[dict]:
    source = _gmm_source(root)
    out = []
    for name, scores in GMM_CASES:
        namespace, rows = _run_gmm_script(source, scores)
        out.append(
            {
                "case": name,
                "scores": scores,
                "threshold": float(namespace["threshold"]),
                "means": sorted(float(m) for m in namespace["gmm"].means_.ravel()),
                "p_reject": [float(r["p_reject"]) for r in rows],
                "decision": [r["decision"] if s is not None else None for r, s in zip(rows, scores)],
            }
        )
    return out


def askqe_gmm_pooled(root: Path) -> list[dict]:
    source = _gmm_source(root)
    out = []
    for name, directions in GMM_POOLED_CASES:
        order = sorted(directions)
        flat = [s for d in order for s in directions[d]]
        namespace, rows = _run_gmm_script(source, flat)
        p_reject, decision, lo = {}, {}, 0
        for d in order:
            hi = lo + len(directions[d])
            p_reject[d] = [float(r["p_reject"]) for r in rows[lo:hi]]
            decision[d] = [r["decision"] if s is not None else None for r, s in zip(rows[lo:hi], directions[d])]
            lo = hi
        out.append(
            {
                "case": name,
                "directions": directions,
                "threshold": float(namespace["threshold"]),
                "means": sorted(float(m) for m in namespace["gmm"].means_.ravel()),
                "p_reject": p_reject,
                "decision": decision,
            }
        )
    return out


# ---- DCR ----------------------------------------------------------------------------------------------------

AMC_CASES = [[1], [-1], [1, 1, -1], [1, -1, -1, -1], [1, 1, 1, 1, 1, -1, 1], [-1, -1], []]


def dcr_amc(root: Path) -> list[dict]:
    sys.path.insert(0, str(root))
    _stub_modules("dcr.components.llm", dcr_components_llm={"LLM": object})
    dce_amc = importlib.import_module("dcr.components.dce_amc")

    class Answering:
        def __init__(self, text):
            self.text = text

        def get_chat_response(self, prompt, **config):
            return self.text

    out = []
    for marks in AMC_CASES:
        text = (
            json.dumps({"answer": marks, "reason": "r"}).replace("1", "+1").replace("-+1", "-1")
        )  # as the model writes it
        converter = dce_amc.DCE_AMC(Answering(text), {})
        shared, results = queue.Queue(), queue.Queue()
        shared.put((0, ["a reason"], "", True))
        converter.auto_metric_converter("{attempt_answer}", shared, results, {"stop": True})
        score = results.get()[1]
        out.append({"marks": marks, "score": None if score == dce_amc.DCE_AMC.ERROR_SCORE else float(score)})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cef", type=Path, required=True, help="checkout of m42-health/cross-examination-framework")
    parser.add_argument("--askqe", type=Path, required=True, help="checkout of dayeonki/askqe")
    parser.add_argument("--dcr", type=Path, required=True, help="checkout of intuit-ai-research/DCR-consistency")
    args = parser.parse_args(argv)
    fixture = {
        "made_by": "scoring/tests/regen_judge_fixtures.py",
        "commits": {
            "cross-examination-framework": _commit(args.cef),
            "askqe": _commit(args.askqe),
            "DCR-consistency": _commit(args.dcr),
        },
        "cef_scores": cef_scores(args.cef),
        "cef_reliability": cef_reliability(args.cef),
        "askqe_similarity": askqe_similarity(args.askqe),
        "askqe_gmm": askqe_gmm(args.askqe),
        "askqe_gmm_pooled": askqe_gmm_pooled(args.askqe),
        "dcr_amc": dcr_amc(args.dcr),
    }
    text = json.dumps(
        fixture,
        indent=1,
        ensure_ascii=False,
        allow_nan=False,
        default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v),
    )
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
