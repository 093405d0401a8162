"""Regenerate ``scoring/tests/fixtures/judge_answers_reference.json``: how the judge metrics' authors read
their judges' answers, from their own functions run unchanged on hand-made answers, so that
``test_judge_answers.py`` compares this project's readers with theirs. Nothing of this project is imported.

    python3.11 -m venv /tmp/ref-env
    /tmp/ref-env/bin/pip install numpy==1.26.4 scikit-learn==1.9.1 pandas==2.2.3
    # checkouts (the commits the committed fixture was made from; `fetch` / git archive):
    #   MicrosoftTranslator/GEMBA          a7a7eff8e46998447c6cbf09d06affc8f1b99ab4
    #   dayeonki/askqe                     7e4c22612018a005f257064d46433f65d776cc6b
    #   intuit-ai-research/DCR-consistency 14e71c12f666230b5cc65e7af9d05bc6ec6087f4
    /tmp/ref-env/bin/python scoring/tests/regen_judge_answer_fixtures.py \\
        --gemba /tmp/gemba --askqe /tmp/askqe --dcr /tmp/dcr

What runs: GEMBA ``parse_mqm_answer`` (``gemba/gemba_mqm_utils.py``; its unused ``ipdb`` import stood in)
on answers in the authors' JSON form; DCR ``DCE_AMC.auto_metric_converter`` (``dcr/components/dce_amc.py``)
with a stand-in LLM that returns each AMC answer text as written; AskQE ``biomqm/human_simulation/gmm.py``
(plotting stood in) on a JSONL file whose ``avg_cos_sim`` (the score it fits) and ``avg_xcomet`` (the
score it decides on) differ, some rows lacking one or the other. The checkout of AskQE needs only that file.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import os
import queue
import subprocess
import sys
import tempfile
import types
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "judge_answers_reference.json"


def _stub(name: str, **attrs) -> None:
    module = types.ModuleType(name)
    module.__path__ = []
    for key, value in attrs.items():
        setattr(module, key, value)
    sys.modules.setdefault(name, module)


def _commit(repo: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- GEMBA-MQM: the JSON answer form ------------------------------------------------------------------------

GEMBA_ANSWERS = [
    (
        "one major error",
        '{"improved translation": "Das Haus ist groß.", "errors": {"critical": [], "major": '
        '[{"class": "accuracy/mistranslation", "span": "klein"}], "minor": []}}',
    ),
    (
        "every severity",
        '{"improved translation": "x", "errors": {"critical": [{"class": "accuracy/addition", "span": "a"}], '
        '"major": [{"class": "fluency/grammar", "span": "b"}], "minor": [{"class": "style/awkward", "span": "c"}]}}',
    ),
    (
        "more than five errors: only five count",
        '{"improved translation": "x", "errors": {"minor": ['
        + ", ".join(f'{{"class": "fluency/spelling", "span": "w{i}"}}' for i in range(7))
        + '], "major": [{"class": "accuracy/omission", "span": ""}]}}',
    ),
    (
        "non-translation under minor stays minor",
        '{"improved translation": "x", "errors": {"minor": [{"class": "non-translation", "span": "all"}]}}',
    ),
    ("no errors", '{"improved translation": "Gut.", "errors": {"critical": [], "major": [], "minor": []}}'),
    ("errors as text", '{"improved translation": "x", "errors": {"major": ["fluency/grammar - \\"ist\\""]}}'),
    ("a severity left out", '{"improved translation": "x", "errors": {"minor": [{"class": "other"}]}}'),
    (
        "broken JSON, readable errors",
        '{"improved translation": "Das "Haus" ist groß.", "errors": {"major": [{"class": "terminology", '
        '"span": "Haus"}], "minor": [{"class": "style", "span": "groß"}]}}',
    ),
    (
        "broken JSON, broken errors: counted by the word class",
        '{"improved translation": "Ein "Test"", "errors": {"major": [{"class": "accuracy", "span": "a"], '
        '"minor": [{"class": "style"}, {"class": "fluency", "span": "b"}]}}',
    ),
    ("not at the start: free text", ' {"improved translation": "x", "errors": {"major": [{"class": "x"}]}}'),
]


def gemba_json(root: Path) -> list[dict]:
    _stub("ipdb")
    spec = importlib.util.spec_from_file_location("gemba_mqm_utils", root / "gemba" / "gemba_mqm_utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    out = []
    for name, answer in GEMBA_ANSWERS:
        with contextlib.redirect_stdout(io.StringIO()):  # their parser prints lines it cannot place
            score = utils.parse_mqm_answer(answer)
        out.append({"case": name, "answer": answer, "score": float(score)})
    return out


# ---- DCR: the AMC answer as the authors read it ---------------------------------------------------------------

DCR_ANSWERS = [
    '{"answer": [1, 0, -1]}',
    '{"reason": ["agrees", "adds a claim", "agrees"], "answer": [+1, -1, +1]}',
    '{"answer": [+1, +1]}',
    '{"answer": [2, -1]}',
    '{"answer": [0.5, -1, 1, 1]}',
    '{"answer": [true, -1]}',
    '{"reason": "one sentence disagrees", "answer": [-1]}',
    '{"answer": []}',
    '{"answer": ["+1", "-1"]}',
    '{"marks": [1, -1]}',
    '{"answer": 1}',
]


def dcr_reader(root: Path) -> list[dict]:
    sys.path.insert(0, str(root))
    _stub("dcr.components.llm", LLM=object)
    dce_amc = importlib.import_module("dcr.components.dce_amc")

    class Answering:  # the LLM client: returns the AMC answer as written
        def __init__(self, text):
            self.text = text

        def get_chat_response(self, prompt, **config):
            return self.text

    out = []
    for text in DCR_ANSWERS:
        converter = dce_amc.DCE_AMC(Answering(text), {})
        shared, results = queue.Queue(), queue.Queue()
        shared.put((0, ["a reason"], "", True))
        converter.auto_metric_converter("{attempt_answer}", shared, results, {"stop": True})
        score = results.get()[1]
        out.append({"answer": text, "score": None if score == dce_amc.DCE_AMC.ERROR_SCORE else float(score)})
    return out


# ---- AskQE: gmm.py fitting one score and deciding on another ---------------------------------------------------

# (fitted score, decided-on score) per row; None: the row lacks that key
GMM_LITERAL_CASES = [
    (
        "the decided-on score disagrees with the fitted one",
        [0.1, 0.15, 0.12, 0.2, 0.18, 0.8, 0.85, 0.9, 0.82, 0.88],
        [0.9, 0.1, 0.95, 0.3, 0.7, 0.2, 0.85, 0.4, 0.75, 0.1],
    ),
    (
        "rows without the decided-on score are accepted",
        [0.1, 0.15, 0.12, 0.2, 0.18, 0.8, 0.85, 0.9, 0.82, 0.88],
        [None, 0.1, None, 0.3, None, 0.2, None, 0.4, 0.9, None],
    ),
    (
        "a row without the fitted score is fitted as 0 and decided on the other",
        [0.7, 0.75, None, 0.8, 0.2, 0.22, 0.9, 0.85, None, 0.6],
        [0.7, 0.1, 0.9, 0.8, 0.95, 0.22, 0.3, 0.85, 0.1, 0.6],
    ),
]


def askqe_gmm_literal(root: Path) -> list[dict]:
    source = (root / "biomqm" / "human_simulation" / "gmm.py").read_text()
    _stub("matplotlib")
    _stub("matplotlib.pyplot")
    plt = sys.modules["matplotlib.pyplot"]
    for name in ("scatter", "axvline", "xlabel", "ylabel", "title", "legend", "savefig", "show"):
        setattr(plt, name, lambda *a, **k: None)
    sys.modules["matplotlib"].pyplot = plt
    out = []
    for name, fitted, other in GMM_LITERAL_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "classified").mkdir()
            with open(Path(tmp) / "askqe_sbert.jsonl", "w") as f:
                for s, x in zip(fitted, other):
                    row = {}
                    if s is not None:
                        row["avg_cos_sim"] = s
                    if x is not None:
                        row["avg_xcomet"] = x
                    f.write(json.dumps(row) + "\n")
            here = os.getcwd()
            os.chdir(tmp)
            try:
                namespace = {"__name__": "gmm"}
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(source, "gmm.py", "exec"), namespace)
                rows = [json.loads(line) for line in open("classified/askqe_sbert.jsonl")]
            finally:
                os.chdir(here)
        out.append(
            {
                "case": name,
                "fitted": fitted,
                "decided_on": other,
                "threshold": float(namespace["threshold"]),
                "p_reject": [float(r["p_reject"]) for r in rows],
                "decision": [r["decision"] for r in rows],
            }
        )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gemba", type=Path, required=True, help="checkout of MicrosoftTranslator/GEMBA")
    parser.add_argument("--askqe", type=Path, required=True, help="checkout of dayeonki/askqe")
    parser.add_argument("--dcr", type=Path, required=True, help="checkout of intuit-ai-research/DCR-consistency")
    args = parser.parse_args(argv)
    fixture = {
        "made_by": "scoring/tests/regen_judge_answer_fixtures.py",
        "commits": {"GEMBA": _commit(args.gemba), "askqe": _commit(args.askqe), "DCR-consistency": _commit(args.dcr)},
        "gemba_json": gemba_json(args.gemba),
        "dcr_reader": dcr_reader(args.dcr),
        "askqe_gmm_literal": askqe_gmm_literal(args.askqe),
    }
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(fixture, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
