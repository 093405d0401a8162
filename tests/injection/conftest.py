"""Fixtures of the injection tests: a scripted OpenAI-compatible server on 127.0.0.1 and gold segments."""

from __future__ import annotations

import pytest

from tests.support.stub_openai import StubServer

# Small gold pairs (FLORES+ devtest style) for the fast tests; the shared data drives the full ones.
PAIRS = {
    "en-de": [
        (
            "On Monday, scientists from the Stanford University School of Medicine announced the invention of a new diagnostic tool.",
            "Am Montag haben die Wisenschaftler der Stanford University School of Medicine die Erfindung eines neuen Diagnosetools bekanntgegeben.",
        ),
        (
            "Lead researchers say this may bring early detection of cancer, tuberculosis, HIV and malaria to patients in low-income countries.",
            "Führende Forscher sagen, dass dies die Früherkennung von Krebs, Tuberkulose, HIV und Malaria für Patienten in einkommensschwachen Ländern bringen könnte.",
        ),
        (
            "The JAS 39C Gripen crashed onto a runway at around 9:30 am local time and exploded, closing the airport to commercial flights.",
            "Die JAS 39C Gripen stürzte gegen 9:30 Uhr Ortszeit auf eine Startbahn und explodierte, sodass der Flughafen für kommerzielle Flüge geschlossen werden musste.",
        ),
    ],
    "en-zh": [
        (
            "On Monday, scientists from the Stanford University School of Medicine announced the invention of a new diagnostic tool.",
            "周一，斯坦福大学医学院的科学家宣布，他们发明了一种可以将细胞按类型分类的新型诊断工具。",
        ),
        (
            "Lead researchers say this may bring early detection of cancer, tuberculosis, HIV and malaria to patients in low-income countries.",
            "主要研究人员表示，这可以让低收入国家/地区的患者尽早发现癌症、肺结核、艾滋病毒和疟疾。",
        ),
    ],
}


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


@pytest.fixture
def segments(project):
    from core.corpus.domain import CorpusRow
    from core.corpus.services import corpus_rows_import

    for direction, pairs in PAIRS.items():
        rows = [CorpusRow(str(i), src, ref, f"inline line {i}") for i, (src, ref) in enumerate(pairs)]
        corpus_rows_import(project=project, direction_code=direction, rows=rows, source_name="inline")
    return project.segments.all()


@pytest.fixture
def llm_env(monkeypatch):
    """Clients read the key from the environment; the local server accepts any."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
