"""The LLM-judge layer and the four judge metrics, through the deterministic judge server on 127.0.0.1
(scoring.judges.stub): faults on cue, the cache (rerun and resume send nothing twice), the budget, the dry
run, prompt files, and the metrics' arithmetic on hand-built tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scoring.judges.engine import Call, Decoding, Judge, JudgeConfig
from scoring.judges.stub import JudgeStubServer
from scoring.judges.stub import _Handler as JudgeStubHandler
from scoring.judges.templates import packaged_template
from scoring.metrics.askqe import gmm_decision
from scoring.metrics.cef import dimensions, reliability
from scoring.metrics.dcr import amc_score
from scoring.registry import MetricError, Segment, get_metric
from scoring.runner import META_KEY, ScoreOptions, part_path, score_release
from scoring.tests.asserts import every
from scoring.tests.releases import write_release

REPO = Path(__file__).resolve().parents[2]
FROG = "Translation (German): Forscher entdeckten eine neue Froschart im Regenwald.\n"


@pytest.fixture
def stub():
    server = JudgeStubServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def _judge(stub, tmp_path, **kw) -> dict:
    return {
        "model": "stub-judge",
        "base_url": stub.base_url,
        "cache_dir": str(tmp_path / "cache"),
        "concurrency": 8,
        "retry_base_delay": 0.01,
        "timeout": 2.0,
        **kw,
    }


def _seg(src, mt, ref="", tgt="de") -> Segment:
    return Segment(src=src, mt=mt, ref=ref or mt, target_lang=tgt, source_lang="en")


def _cli(*args, env_extra=None) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": "test-key", **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "scoring", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# ---- arithmetic on hand-built tables ------------------------------------------------------------------------


def test_cef_dimensions_under_the_paper_texts_formula():
    # formula=paper-text, the paper's §3 text. Q_D: 5 questions; the 4th is IDK on the source itself and is
    # dropped -> 4 kept: YES, IDK, NO, IDK on the MT. Q_T: 3; the 3rd is IDK on the MT -> 2 kept: YES, IDK.
    dims = dimensions(
        ["YES", "IDK", "NO", "YES", "IDK"],
        ["YES", "YES", "YES", "IDK", "YES"],
        ["YES", "IDK", "NO"],
        ["YES", "YES", "IDK"],
        formula="paper-text",
    )
    assert dims["coverage"] == 50.0  # 100 - 2/4 IDK
    assert dims["conformity"] == 75.0  # 100 - 1/4 NO
    assert dims["consistency"] == 50.0  # 100 - 1/2 IDK
    assert dims["dropped"] == 2 and dims["n_questions_source"] == 4 and dims["n_questions_mt"] == 2
    assert dimensions([], [], [], [], formula="paper-text")["coverage"] is None
    # the authors' rule on the same table: consistency counts the NO against a YES gold too (1 of 2 kept right)
    assert (
        dimensions(
            ["YES", "IDK", "NO", "YES", "IDK"],
            ["YES", "YES", "YES", "IDK", "YES"],
            ["YES", "IDK", "NO"],
            ["YES", "YES", "IDK"],
        )["consistency"]
        == 50.0
    )
    assert dimensions([], [], [], [])["coverage"] == 0.0  # no grounded question: 0, as the authors' code leaves it


def test_adr_and_ads_from_a_hand_built_judges_by_questions_table():
    # three judges; C's question repeats A's text on the same source (ADS counts it once, under A)
    questions = [("A", 0, "q1"), ("B", 0, "q2"), ("C", 0, "q1")]
    answers = {"A": {1: "YES", 2: "NO"}, "B": {0: "YES", 2: "YES"}, "C": {0: "NO", 1: "YES"}}
    r = reliability(questions, answers)
    # ADR: the others' answers that are not YES. A: B YES, C NO -> 1/2; B: 0; C: A NO, B YES -> 1/2
    assert (r["A"]["adr"], r["B"]["adr"], r["C"]["adr"]) == (0.5, 0.0, 0.5)
    # ADS (at least 2 of 3 agreeing): q1 votes A YES (its own), B YES, C NO -> C deviates; q2 all YES
    assert (r["A"]["ads"], r["B"]["ads"], r["C"]["ads"]) == (0.0, 0.0, 0.5)
    # with all three required to agree, only q2 counts
    assert reliability(questions, answers, min_agreement=3)["C"]["ads"] == 0.0


def test_amc_formula():
    assert amc_score([1, 1, -1]) == pytest.approx((1 / 3 + 1) / 2)
    assert amc_score([1, 1, 1]) == 1.0 and amc_score([-1, -1]) == 0.0
    # the paper's App. A.4 example: the first reason is not sentence-level (-1): alpha = 1, beta = -1 discount it.
    assert amc_score([-1, 1, 1], alpha=1, beta=-1) == 1.0
    with pytest.raises(ValueError):
        amc_score([])


def test_gmm_decision_on_synthetic_bimodal_scores():
    import random

    rng = random.Random(3)
    low = [rng.gauss(0.2, 0.04) for _ in range(120)]
    high = [rng.gauss(0.85, 0.04) for _ in range(180)]
    scores = low + high + [None]
    decision, p_reject, fit = gmm_decision(scores, seed=0, missing_as_zero=False)
    assert fit["fitted"] and fit["n"] == 300
    assert sorted(round(m, 1) for m in fit["means"]) == [0.2, 0.8] or sorted(round(m, 2) for m in fit["means"])[1] > 0.8
    assert decision[:120] == ["reject"] * 120 and decision[120:300] == ["accept"] * 180 and decision[-1] is None
    assert every(p > 0.99 for p in p_reject[:120]) and every(p < 0.01 for p in p_reject[120:300])
    again = gmm_decision(scores, seed=0, missing_as_zero=False)
    assert again[1] == p_reject  # fixed seed: the same fit
    assert gmm_decision([0.5, 0.5, None], missing_as_zero=False)[2]["fitted"] is False
    assert gmm_decision([0.5, 0.5])[2]["fitted"] is False


# ---- the judge: faults, cache, budget ---------------------------------------------------------------------------


def _gemba_scorer(stub, tmp_path, **judge):
    return get_metric("gemba-mqm").build(judge=_judge(stub, tmp_path, **judge))


def test_faults_are_retried_and_gemba_follows_its_authors_client(stub, tmp_path):
    segs = [_seg("The cat sleeps on the warm sofa.", f"Die Katze schläft auf dem warmen Sofa {i}.") for i in range(5)]
    stub.script("Sofa 0.", "429", "500", "ok")
    stub.script("Sofa 1.", "timeout", "ok")
    stub.state.timeout_delay = 3.0  # past the client's 2 s timeout
    stub.script("Sofa 2.", "truncated")
    stub.script("Sofa 3.", "unparsable", "unparsable")
    scorer = _gemba_scorer(stub, tmp_path)
    result = scorer.score(segs)
    assert every(s is not None for s in result.scores), result.extras["error"]
    bodies = [json.loads(c.body_key) for c in stub.served]
    sofa = lambda k: [b for b in bodies if f"Sofa {k}." in b["messages"][-1]["content"]]  # noqa: E731
    assert [c.behaviour for c in stub.served if "Sofa 0." in c.prompt] == ["429", "500", "ok"]
    # truncated: asked again with twice the tokens (the authors start at 500)
    assert [b["max_tokens"] for b in sofa(2)] == [500, 1000]
    # no MQM headers: scored as the authors' parser scores it (0, no error), not asked again
    assert [b["temperature"] for b in sofa(3)] == [0.0]
    assert result.scores[3] == 0.0 and "no MQM headers" in result.extras["note"][3]
    assert result.extras["reasks"] == [0, 0, 1, 0, 0]
    assert result.extras["decoding"][2]["max_tokens"] == 1000
    stats = scorer.stats()
    assert stats["sent"] == 1 + 1 + 2 + 1 + 1 and stats["calls"] == 6
    # the packaged prompt is three-shot: three example turns before the question
    assert [m["role"] for m in sofa(4)[0]["messages"]] == ["system"] + ["user", "assistant"] * 3 + ["user"]


def test_gemba_reask_is_our_option_and_a_cut_off_answer_at_the_limit_scores_0(stub, tmp_path):
    segs = [_seg("The cat sleeps on the warm sofa.", f"Die Katze schläft auf dem warmen Sofa {i}.") for i in range(2)]
    stub.script("Sofa 0.", "unparsable", "unparsable")
    stub.script("Sofa 1.", "truncated", "truncated", "truncated", "truncated")
    scorer = get_metric("gemba-mqm").build(judge=_judge(stub, tmp_path), reask="true")
    result = scorer.score(segs)
    bodies = [json.loads(c.body_key) for c in stub.served]
    sofa = lambda k: [b for b in bodies if f"Sofa {k}." in b["messages"][-1]["content"]]  # noqa: E731
    assert [b["temperature"] for b in sofa(0)] == [0.0, 0.1, 0.2]  # asked again 0.1 warmer each time
    assert result.extras["reasks"][0] == 2 and scorer.signature("de")["options"]["reask"] is True
    assert [b["max_tokens"] for b in sofa(1)] == [500, 1000, 2000, 4000]
    assert result.scores[1] == 0.0 and "token limit" in result.extras["note"][1]


def test_transport_errors_are_recorded_per_segment_never_cached_and_redone_by_a_rerun(stub, tmp_path):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    out = tmp_path / "out"
    stub.script(FROG, *["500"] * 3)
    opts = ScoreOptions(judge=_judge(stub, tmp_path, max_attempts=3), chunk_size=16)
    [summary] = score_release(release, ["gemba-mqm"], out=out, options=opts)
    assert summary["n_retry"] == 1 and summary["n_scored"] == summary["n"] - 1
    table = pq.read_table(out / "gemba-mqm.parquet").to_pydict()
    failed = [i for i, r in enumerate(table["retryable"]) if r]
    assert len(failed) == 1 and table["score"][failed[0]] is None and "HTTP 500" in table["error"][failed[0]]
    sent_before = len(stub.served)
    [summary] = score_release(release, ["gemba-mqm"], out=out, options=opts)  # the failure was not cached
    assert not summary.get("n_retry") and summary["n_scored"] == summary["n"]
    assert len(stub.served) == sent_before + 1  # only the failed segment's request went out again
    [summary] = score_release(release, ["gemba-mqm"], out=out, options=opts)
    assert summary["skipped"] and len(stub.served) == sent_before + 1


def test_rerun_of_all_four_metrics_sends_zero_requests_even_without_the_parts(stub, tmp_path):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    out = tmp_path / "out"
    args = [
        "run",
        "--release",
        str(release),
        "--metrics",
        "gemba-mqm,askqe,cef,dcr",
        "--directions",
        "en-de",
        "--limit",
        "12",
        "--option",
        "nli_model=none",
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "stub-judge",
        "--out",
        str(out),
        "--quiet",
    ]
    first = _cli(*args)
    stdout, stderr = first.communicate(timeout=240)
    assert first.returncode == 0, stderr
    sent = len(stub.served)
    assert sent > 0
    import shutil

    shutil.rmtree(out / "parts")  # finished parts gone: everything is recomputed, every answer from the cache
    for name in ("gemba-mqm", "askqe", "cef", "dcr"):
        (out / f"{name}.parquet").unlink()
    again = _cli(*args)
    stdout2, stderr2 = again.communicate(timeout=240)
    assert again.returncode == 0, stderr2
    assert len(stub.served) == sent
    for name in ("gemba-mqm", "askqe", "cef", "dcr"):
        table = pq.read_table(out / f"{name}.parquet")
        assert table.num_rows == 12 and {"direction", "triplet_id", "score"} <= set(table.column_names)
    summary = json.loads((out / "summary.json").read_text())
    judge = summary["metrics"]["dcr"]["directions"]["en-de"]["judge"]
    assert judge["sent"] == 0 and judge["cached"] == judge["calls"] > 0


@pytest.mark.parametrize(
    ("metric", "hang_on"),
    [
        ("gemba-mqm", FROG),
        # a multi-stage metric, killed in its last stage (answers on the back-translation of one triplet)
        ("askqe", "Text: Forscher entdeckten eine neue Froschart im Regenwald.\n"),
    ],
)
def test_a_run_killed_mid_way_and_resumed_sends_no_request_twice(stub, tmp_path, metric, hang_on):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    out = tmp_path / "out"
    stub.script(hang_on, "hang")
    args = [
        "run",
        "--release",
        str(release),
        "--metrics",
        metric,
        "--out",
        str(out),
        "--quiet",
        "--concurrency",
        "4",
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "stub-judge",
        *(["--option", "nli_model=none"] if metric == "askqe" else []),
    ]
    proc = _cli(*args)
    n, stable_since = -1, time.monotonic()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # everything else answered and stored; the hung request holds the run
        now = len(stub.served)
        if now != n:
            n, stable_since = now, time.monotonic()
        elif n > 0 and time.monotonic() - stable_since > 2.0:
            break
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = {c.body_key for c in stub.served}
    assert len(first) == len(stub.served) >= 40
    resumed = _cli(*args)
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    second = [c for c in stub.served[len(first) :] if c.behaviour != "hang"]
    assert len(second) == 1 and hang_on in second[0].prompt  # only the request that never got its answer
    assert not first & {c.body_key for c in second}
    assert pq.read_table(out / f"{metric}.parquet").num_rows == 48


def test_budget_stops_the_run_and_a_rerun_resumes_from_the_cache(stub, tmp_path, monkeypatch):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    env = {"LLM_PRICES": json.dumps({"stub-judge": [1000.0, 1000.0]})}  # dear enough to reach $0.5 in a few calls
    args = [
        "run",
        "--release",
        str(release),
        "--metrics",
        "gemba-mqm",
        "--out",
        str(tmp_path / "out"),
        "--quiet",
        "--concurrency",
        "2",
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "stub-judge",
    ]
    proc = _cli(*args, "--max-usd", "0.5", env_extra=env)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "budget" in stderr
    spent = len(stub.served)
    assert 0 < spent < 48
    proc = _cli(*args, env_extra=env)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert len(stub.served) == 48  # the answers bought before the stop were not bought again


def test_dry_run_prints_calls_and_tokens_and_sends_and_writes_nothing(stub, tmp_path):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    out = tmp_path / "out"
    proc = _cli(
        "run",
        "--release",
        str(release),
        "--metrics",
        "gemba-mqm,askqe,cef,dcr",
        "--out",
        str(out),
        "--dry-run",
        "--option",
        "nli_model=none",
        "--limit",
        "6",
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "gpt-4o",
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert len(stub.served) == 0 and not out.exists()
    lines = {line.split()[0]: line for line in stdout.splitlines() if "triplets=" in line}
    assert set(lines) == {"gemba-mqm", "askqe", "cef", "dcr"}
    assert "to send=6 " in lines["gemba-mqm"] and "to send=12 " in lines["dcr"]  # DCE + AMC per triplet
    assert "cost at most=$0.0" in lines["gemba-mqm"] and "$0.0000" not in lines["gemba-mqm"]


# ---- prompts, signature, metric behaviour --------------------------------------------------------------------


def test_prompt_file_override_enters_the_signature_and_the_cache_key(stub, tmp_path):
    packaged = packaged_template("dcr-amc")
    mine = tmp_path / "amc.toml"
    mine.write_text((Path(packaged.path).read_text()).replace('version = "dcr-amc-v1"', 'version = "dcr-amc-mine-1"'))
    base = get_metric("dcr").build(judge=_judge(stub, tmp_path))
    over = get_metric("dcr").build(judge=_judge(stub, tmp_path, prompt_files=[f"dcr-amc={mine}"]))
    sig, sig2 = base.signature("de"), over.signature("de")
    assert (
        sig["prompts"]["dcr-amc"]["version"] == "dcr-amc-v1"
        and sig2["prompts"]["dcr-amc"]["version"] == "dcr-amc-mine-1"
    )
    assert sig["prompts"]["dcr-amc"]["sha256"] != sig2["prompts"]["dcr-amc"]["sha256"]
    assert sig["judge"] == {
        "model": "stub-judge",
        "endpoint_kind": "openai-compatible",
        "decoding": {"temperature": 0.0, "max_tokens": 1024, "seed": None, "structured": False},
    }
    assert sig["variant"] == "mt" and "dcr-dce-mt" in sig["prompts"] and "dcr-dce-paper" not in sig["prompts"]
    d = Decoding()
    k1 = Call(base.prompt_set["dcr-amc"], ({"role": "user", "content": "x"},), d).key("m")
    k2 = Call(over.prompt_set["dcr-amc"], ({"role": "user", "content": "x"},), d).key("m")
    assert k1 != k2
    bad = tmp_path / "bad.toml"
    bad.write_text('version = "x"\nuser = "{nonsense}"\n')
    with pytest.raises(Exception, match="unknown field"):
        get_metric("dcr").build(judge=_judge(stub, tmp_path, prompt_files=[f"dcr-amc={bad}"]))


def test_dcr_paper_variant_is_blind_to_omissions_and_the_mt_variant_is_not(stub, tmp_path):
    ref = "Der Zug in die Hauptstadt hatte heute Morgen zwei Stunden Verspätung."
    omission = "Der Zug hatte heute Morgen Verspätung."  # drops "in die Hauptstadt" and "zwei Stunden"
    addition = "Der Zug in die Hauptstadt hatte heute Morgen zwei Stunden Verspätung wegen Schnee."
    segs = [_seg("", ref, ref), _seg("", omission, ref), _seg("", addition, ref)]
    paper = get_metric("dcr").build(judge=_judge(stub, tmp_path), variant="paper").score(segs).scores
    mt = get_metric("dcr").build(judge=_judge(stub, tmp_path), variant="mt").score(segs).scores
    assert paper[0] == mt[0] == 1.0
    assert paper[1] == 1.0  # blind: the omission goes unnoticed under the paper's instructions
    assert mt[1] < 1.0
    assert paper[2] < 1.0 and mt[2] < 1.0


def test_structured_output_asks_for_the_schema_and_scores_the_same(stub, tmp_path):
    segs = [_seg("He left the school bag at home yesterday.", "Er ließ die Schultasche gestern zu Hause. school")]
    plain = _gemba_scorer(stub, tmp_path).score(segs)
    structured = _gemba_scorer(stub, tmp_path, structured=True).score(segs)
    bodies = [json.loads(c.body_key) for c in stub.served]
    assert "response_format" not in bodies[0] and bodies[1]["response_format"]["json_schema"]["name"] == "mqm_errors"
    assert plain.scores == structured.scores == [-1.0]  # "school" left untranslated: one minor error
    [err] = json.loads(json.dumps(structured.extras["errors"][0]))
    assert err["span"] == "school" and err["found"] and segs[0].mt[err["start"] : err["end"]] == "school"


def test_askqe_with_a_user_back_translation_column_and_its_decision(stub, tmp_path):
    rows = []
    src = [
        "The committee approved the new budget after a long debate.",
        "Heavy rain caused flooding in several villages near the river.",
    ]
    for s_i, s in enumerate(src):
        for k in range(6):
            words = s.split()
            bt = " ".join(words[: len(words) - 2 * k] or words[:1])  # the more errors, the more of the meaning is lost
            rows.append({"triplet_id": f"t{s_i}-{k}", "src": s, "ref": "r", "mt": f"m{k}", "num_errors": k, "bt": bt})
    (tmp_path / "rel" / "en-de").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rel" / "en-de" / "test.parquet")
    opts = ScoreOptions(judge=_judge(stub, tmp_path), extra={"bt_column": "bt", "nli_model": "none"})
    [summary] = score_release(tmp_path / "rel", ["askqe"], out=tmp_path / "out", options=opts)
    table = pq.read_table(tmp_path / "out" / "askqe.parquet").to_pydict()
    assert table["score"][0] == 1.0 and table["score"][5] < table["score"][1] <= 1.0
    assert (
        set(table["decision"]) <= {"accept", "reject"}
        and table["decision"][0] == "accept"
        and table["decision"][5] == "reject"
    )
    assert summary["gmm"]["fitted"]
    # source-side stages once per source: 2 sources x (facts, questions, answers) + 12 answers on the
    # back-translations, of which the 2 whose back-translation is the source itself are the same request
    assert summary["judge"]["sent"] == 2 * 3 + 12 - 2 and summary["judge"]["calls"] == 2 * 3 + 12
    meta = json.loads(pq.read_schema(part_path(tmp_path / "out", "askqe", "en-de")).metadata[META_KEY])
    assert (
        meta["summary"]["gmm"]["means"]
        and json.loads((tmp_path / "out" / "summary.json").read_text())["metrics"]["askqe"]["directions"]["en-de"][
            "gmm"
        ]["fitted"]
    )


def _askqe_release(root: Path, losses: dict[str, list[int]]) -> Path:
    """A release whose back-translations (column ``bt``) drop 2k words of the source per triplet, k per
    direction from ``losses``: the more words lost, the lower AskQE's score."""
    src = [
        "The committee approved the new budget after a long debate.",
        "Heavy rain caused flooding in several villages near the river.",
    ]
    for direction, ks in losses.items():
        rows = []
        for s_i, s in enumerate(src):
            for j, k in enumerate(ks):
                words = s.split()
                bt = " ".join(words[: len(words) - 2 * k] or words[:1])
                rows.append(
                    {
                        "triplet_id": f"{direction}:{s_i}-{j}",
                        "src": s,
                        "ref": "r",
                        "mt": f"m{k}",
                        "num_errors": k,
                        "bt": bt,
                    }
                )
        (root / direction).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), root / direction / "test.parquet")
    return root


def test_askqe_decides_on_a_release_column_as_the_authors_gmm_script_with_decision_score(stub, tmp_path):
    # the authors' gmm.py, read literally: fit on the score, compare another score (here the release column
    # "xcomet") with the midpoint, accept a row without it; run through the runner's run-wide step
    release = _askqe_release(tmp_path / "rel", {"en-de": [0, 1, 2, 0, 1, 3], "en-zh": [0, 5, 4, 5, 1, 4]})
    other = {}
    for d in ("en-de", "en-zh"):
        table = pq.read_table(release / d / "test.parquet")
        values = [None if i % 5 == 0 else round(0.1 + 0.07 * i, 2) for i in range(table.num_rows)]
        other[d] = values
        pq.write_table(table.append_column("xcomet", pa.array(values, pa.float64())), release / d / "test.parquet")
    extra = {"bt_column": "bt", "nli_model": "none", "decision_score": "xcomet"}
    out = tmp_path / "out"
    score_release(release, ["askqe"], out=out, options=ScoreOptions(judge=_judge(stub, tmp_path), extra=extra))
    parts = {d: pq.read_table(part_path(out, "askqe", d)).to_pydict() for d in ("en-de", "en-zh")}
    assert {d: p["decision_input"] for d, p in parts.items()} == other
    scores = parts["en-de"]["score"] + parts["en-zh"]["score"]
    literal, _, fit = gmm_decision(scores, decide_on=other["en-de"] + other["en-zh"])
    assert parts["en-de"]["decision"] + parts["en-zh"]["decision"] == literal
    assert literal != gmm_decision(scores)[0]  # the paper's default decides otherwise on this release
    assert every(d == "accept" for d, v in zip(literal, other["en-de"] + other["en-zh"]) if v is None)
    assert fit["decided_on"]


def test_askqe_decides_over_every_direction_of_the_run_and_a_rerun_keeps_the_decisions(stub, tmp_path):
    from scoring.worker import score_direction_task

    # en-de: all 1.0 but one 0.8; en-zh: 1.0, 0.8 and 0. Alone, en-de's mixture (1.0 against 0.8) rejects
    # its 0.8; the run's mixture (low component near 0) accepts it
    release = _askqe_release(tmp_path / "rel", {"en-de": [0, 1, 2, 0, 1, 3], "en-zh": [0, 5, 4, 5, 1, 4]})
    extra = {"bt_column": "bt", "nli_model": "none"}
    out = tmp_path / "out"
    summaries = score_release(
        release, ["askqe"], out=out, options=ScoreOptions(judge=_judge(stub, tmp_path), extra=extra)
    )
    parts = {d: pq.read_table(part_path(out, "askqe", d)).to_pydict() for d in ("en-de", "en-zh")}
    scores = {d: p["score"] for d, p in parts.items()}
    # the authors' script on the run's whole file: one mixture over both directions' rows, in sorted order
    decision, p_reject, _ = gmm_decision(scores["en-de"] + scores["en-zh"])
    pooled = {"en-de": decision[:12], "en-zh": decision[12:]}
    posterior = {"en-de": p_reject[:12], "en-zh": p_reject[12:]}
    per_direction = {d: gmm_decision(v)[0] for d, v in scores.items()}
    assert per_direction != pooled  # this release tells the two scopes apart
    whole = pq.read_table(out / "askqe.parquet").to_pydict()
    assert whole["decision"] == pooled["en-de"] + pooled["en-zh"] and "reject" in pooled["en-zh"]
    for d, part in parts.items():
        assert part["decision"] == pooled[d] and part["p_reject"] == posterior[d]
        meta = json.loads(pq.read_schema(part_path(out, "askqe", d)).metadata[META_KEY])
        assert meta["summary"]["gmm"]["scope"] == "pooled" and meta["summary"]["gmm"]["directions"] == [
            "en-de",
            "en-zh",
        ]
    assert every(s["gmm"]["fitted"] and s["gmm"]["n_pooled"] == 24 for s in summaries)
    listed = json.loads((out / "summary.json").read_text())["metrics"]["askqe"]["directions"]
    assert {d: v["gmm"]["n_reject"] for d, v in listed.items()} == {d: v.count("reject") for d, v in pooled.items()}

    # a rerun scores nothing and rewrites no part; the decisions stay
    written = {d: part_path(out, "askqe", d).stat().st_mtime_ns for d in parts}
    again = score_release(release, ["askqe"], out=out, options=ScoreOptions(judge=_judge(stub, tmp_path), extra=extra))
    assert every(s["skipped"] for s in again)
    assert {d: part_path(out, "askqe", d).stat().st_mtime_ns for d in parts} == written
    assert pq.read_table(out / "askqe.parquet").to_pydict()["decision"] == whole["decision"]
    # a run that redoes one direction (its part lost) gives the same decisions, and leaves the other's part
    part_path(out, "askqe", "en-zh").unlink()
    score_release(release, ["askqe"], out=out, options=ScoreOptions(judge=_judge(stub, tmp_path), extra=extra))
    assert part_path(out, "askqe", "en-de").stat().st_mtime_ns == written["en-de"]
    assert pq.read_table(out / "askqe.parquet").to_pydict()["decision"] == whole["decision"]

    # one worker task per direction: a direction scored alone waits for the others; the last one decides all
    out2 = tmp_path / "out2"
    options = {"judge": _judge(stub, tmp_path), "extra": extra}
    for i, d in enumerate(("en-zh", "en-de")):
        score_direction_task.apply(
            kwargs={
                "release_dir": str(release),
                "metric": "askqe",
                "direction": d,
                "out_dir": str(out2),
                "options": options,
            }
        ).get()
        if i == 0:
            first = pq.read_table(part_path(out2, "askqe", d)).to_pydict()
            meta = json.loads(pq.read_schema(part_path(out2, "askqe", d)).metadata[META_KEY])
            assert set(first["decision"]) == {None} and meta["summary"]["gmm"]["pending"]
            assert not (out2 / "askqe.parquet").exists()
    for d in parts:
        assert pq.read_table(part_path(out2, "askqe", d)).to_pydict()["decision"] == pooled[d]

    # gmm_scope=direction: each direction's own mixture, decided as its part is written
    out3 = tmp_path / "out3"
    score_release(
        release,
        ["askqe"],
        out=out3,
        options=ScoreOptions(judge=_judge(stub, tmp_path), extra={**extra, "gmm_scope": "direction"}),
    )
    for d in parts:
        part = pq.read_table(part_path(out3, "askqe", d)).to_pydict()
        assert part["score"] == scores[d] and part["decision"] == per_direction[d]


def test_cef_reliability_of_several_judges_is_written_beside_the_scores(stub, tmp_path):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    opts = ScoreOptions(judge=_judge(stub, tmp_path), extra={"judges": "stub-judge,stub-b,stub-c"}, limit=6)
    score_release(release, ["cef"], out=tmp_path / "out", options=opts)
    rel = pq.read_table(tmp_path / "out" / "cef.reliability.parquet").to_pydict()
    assert rel["judge"] == ["stub-judge", "stub-b", "stub-c"] and rel["direction"] == ["en-de"] * 3
    assert every(0.0 <= x <= 1.0 for x in rel["adr"] + rel["ads"]) and rel["n_sources"] == [1] * 3
    models = {json.loads(c.body_key)["model"] for c in stub.served}
    assert models == {"stub-judge", "stub-b", "stub-c"}
    judge = json.loads((tmp_path / "out" / "summary.json").read_text())["metrics"]["cef"]["directions"]["en-de"][
        "judge"
    ]
    assert (
        judge["sent"] == len(stub.served) and "stub-b:reliability-answers" in judge["by_stage"]
    )  # every judge's calls counted
    scores = pq.read_table(tmp_path / "out" / "cef.parquet").to_pydict()
    assert {"coverage", "conformity", "consistency"} <= set(scores) and scores["score"][0] is not None


def test_judge_refuses_to_run_without_a_model(tmp_path):
    with pytest.raises(Exception, match="--judge-model"):
        Judge(JudgeConfig(model=""))


# ---- end to end, worker, boundaries -------------------------------------------------------------------------------


def test_four_metrics_score_a_release_built_from_the_shared_data_on_the_cli(stub, tmp_path, shared_data):
    from scoring.tests.releases import write_release_from_shared

    release = write_release_from_shared(tmp_path / "rel", shared_data, directions=("en-de", "en-es"))
    out = tmp_path / "out"
    proc = _cli(
        "run",
        "--release",
        str(release),
        "--metrics",
        "gemba-mqm,askqe,cef,dcr",
        "--directions",
        "en-de",
        "--limit",
        "40",
        "--option",
        "nli_model=none",
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "stub-judge",
        "--out",
        str(out),
        "--quiet",
        "--structured",
    )
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    expected_ids = pq.read_table(release / "en-de" / "test.parquet").column("triplet_id").to_pylist()[:40]
    extras = {
        "gemba-mqm": {"n_critical", "errors", "raw_answer"},
        "askqe": {"decision", "p_reject", "questions"},
        "cef": {"coverage", "conformity", "consistency"},
        "dcr": {"dce", "marks", "k"},
    }
    summary = json.loads((out / "summary.json").read_text())
    for name, cols in extras.items():
        table = pq.read_table(out / f"{name}.parquet").to_pydict()
        assert table["triplet_id"] == expected_ids and set(table["direction"]) == {"en-de"}
        assert cols <= set(table) and every(s is not None for s in table["score"]), (name, table["note"])
        d = summary["metrics"][name]["directions"]["en-de"]
        assert d["judge"]["calls"] > 0 and d["signature"]["judge"]["decoding"]["structured"] is True
        assert {"prompt_tokens", "completion_tokens", "cost_usd"} <= set(table)
    # the DCR MT variant sees the single injected errors: error-free triplets score 1, the others lower on average
    dcr = pq.read_table(out / "dcr.parquet").to_pydict()
    clean = [s for s, k in zip(dcr["score"], dcr["num_errors"]) if k == 0]
    faulty = [s for s, k in zip(dcr["score"], dcr["num_errors"]) if k == 1]
    assert clean and faulty and min(clean) == 1.0 and sum(faulty) / len(faulty) < 1.0


def test_judge_metrics_route_to_the_judge_queue_and_the_worker_task_runs_them(stub, tmp_path):
    from scoring.queues import JUDGE_QUEUE, queue_for
    from scoring.worker import score_direction_task

    assert {queue_for(m) for m in ("gemba-mqm", "askqe", "cef", "dcr")} == {JUDGE_QUEUE}
    release = write_release(tmp_path / "rel", directions=("en-de",))
    result = score_direction_task.apply(
        kwargs={
            "release_dir": str(release),
            "metric": "gemba-mqm",
            "direction": "en-de",
            "out_dir": str(tmp_path / "out"),
            "options": {"judge": _judge(stub, tmp_path), "limit": 6},
        }
    ).get()
    assert result["summary"]["n"] == 6 and result["summary"]["judge"]["sent"] == 6


def test_shared_client_never_imports_django():
    import re

    offenders = [
        f"{p.name}:{i}"
        for p in (REPO / "llm_client").rglob("*.py")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s*(from|import)\s+(django|injection|scoring)\b", line)
    ]
    assert not offenders


def test_the_cache_keeps_raw_answers_with_their_requests_inspectable(stub, tmp_path):
    scorer = _gemba_scorer(stub, tmp_path, temperature=0.3, seed=5)
    scorer.score([_seg("The dog sleeps.", "Der Hund schläft.")])
    proc = _cli("judge-cache", str(tmp_path / "cache"))
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    [record] = [json.loads(line) for line in stdout.splitlines()]
    assert record["text"].startswith("Critical:") and record["request"]["decoding"] == {
        "temperature": 0.3,
        "max_tokens": 500,
        "seed": 5,
        "structured": False,
    }
    assert (
        record["request"]["prompt"]["version"] == "gemba-mqm-v2"
        and "Der Hund schläft." in record["request"]["messages"][-1]["content"]
    )


def test_rai_command_improves_translations_from_the_dce_reasons(stub, tmp_path):
    release = write_release(tmp_path / "rel", directions=("en-de",))
    out = tmp_path / "rai" / "improved.parquet"
    out.parent.mkdir()
    proc = _cli(
        "rai",
        "--release",
        str(release),
        "--direction",
        "en-de",
        "--limit",
        "6",
        "--out",
        str(out),
        "--judge-url",
        stub.base_url,
        "--judge-model",
        "stub-judge",
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    table = pq.read_table(out).to_pydict()
    assert table["triplet_id"] == [f"en-de:0:{k}:0" for k in range(6)]
    assert (
        table["score_before"][0] == 1.0 and table["improved"][0] == table["mt"][0]
    )  # consistent: left alone, no RAI call
    assert every(b < 1.0 for b in table["score_before"][1:]) and table["score_after"] == [1.0] * 6
    rai_calls = [c for c in stub.served if "Improve a" in c.prompt]
    assert len(rai_calls) == 5


def test_json_metrics_ask_again_when_an_answer_is_cut_off_or_unreadable(stub, tmp_path):
    ref = "Der Zug in die Hauptstadt hatte heute Morgen zwei Stunden Verspätung."
    stub.script(f"Candidate: {ref}", "truncated")
    stub.script("into atomic facts", "unparsable", "unparsable")
    dcr = get_metric("dcr").build(judge=_judge(stub, tmp_path))
    assert dcr.score([_seg("", ref, ref)]).scores == [1.0]
    dce = [json.loads(c.body_key) for c in stub.served if f"Candidate: {ref}" in c.prompt]
    assert [b["max_tokens"] for b in dce] == [1024, 2048]
    askqe = get_metric("askqe").build(judge=_judge(stub, tmp_path), nli_model="none")
    result = askqe.score(
        [_seg("The museum will reopen next spring.", "Das Museum öffnet im nächsten Frühjahr wieder.")]
    )
    facts = [json.loads(c.body_key)["temperature"] for c in stub.served if "into atomic facts" in c.prompt]
    assert facts == [0.0, 0.1, 0.2] and result.extras["facts"][0] and result.extras["note"][0] == ""
    stats = askqe.stats()
    assert stats["by_stage"]["facts+backtranslation-reask"]["calls"] == 2


def test_judge_settings_are_read_from_text_and_checked():
    """--judge-option values arrive as text or JSON: "false" is false (bool("false") was true), numbers are
    checked against their range, and a mistake names the option."""
    import re

    from scoring.judges.engine import JudgeConfig
    from scoring.registry import MetricError

    config = JudgeConfig.from_options(
        {
            "concurrency": "8",
            "structured": "false",
            "temperature": "0.2",
            "rpm": None,
            "seed": 7,
            "timeout": 30,
            "base_url": "http://127.0.0.1:8000/v1",
            "dry_run": "true",
        }
    )
    assert (
        config.concurrency,
        config.decoding.structured,
        config.decoding.temperature,
        config.rpm,
        config.decoding.seed,
    ) == (8, False, 0.2, None, 7)
    assert config.timeout == 30.0 and config.dry_run is True
    for options, message in [
        ({"concurrency": 0}, "concurrency=0: a number at least 1"),
        ({"timeout": 0}, "timeout=0: a number more than 0"),
        ({"max_usd": "nan"}, "max_usd='nan'"),
        ({"max_tokens": True}, "max_tokens=True"),
        ({"seed": -1}, "seed=-1"),
        ({"base_url": "ftp://x"}, "an http:// or https:// URL"),
        ({"backend": "tgi"}, "one of openai, vllm"),
        ({"structured": 2}, "true or false"),
    ]:
        with pytest.raises(MetricError, match=re.escape(message)):
            JudgeConfig.from_options(options)


# ---- keys bound to endpoints (#36.1) ------------------------------------------------------------------------


class _KeyRecording(JudgeStubHandler):
    def do_POST(self):
        self.server.keys.append(self.headers.get("Authorization", ""))
        super().do_POST()


def _recording_stub() -> JudgeStubServer:
    server = JudgeStubServer()
    server.RequestHandlerClass = _KeyRecording
    server.keys = []
    return server.start()


def test_a_judge_url_no_endpoint_names_never_gets_the_workers_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-secret-4242")
    monkeypatch.delenv("LLM_ENDPOINTS", raising=False)  # the default endpoint: api.openai.com with OPENAI_API_KEY
    server = _recording_stub()
    try:
        scorer = get_metric("gemba-mqm").build(judge=_judge(server, tmp_path))
        scorer.score([_seg("Hello.", "Hallo.")])
    finally:
        server.stop()
    assert server.keys and set(server.keys) == {"Bearer EMPTY"}


def test_a_judge_endpoint_the_worker_configured_gets_its_own_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-secret-4242")
    monkeypatch.setenv("JUDGE_KEY", "judge-key-777777")
    server = _recording_stub()
    monkeypatch.setenv(
        "LLM_ENDPOINTS", json.dumps([{"name": "judges", "base_url": server.base_url, "key_env": "JUDGE_KEY"}])
    )
    try:
        scorer = get_metric("gemba-mqm").build(judge={**_judge(server, tmp_path), "base_url": "", "endpoint": "judges"})
        scorer.score([_seg("Hello.", "Hallo.")])
    finally:
        server.stop()
    assert server.keys and set(server.keys) == {"Bearer judge-key-777777"}
    with pytest.raises(MetricError, match="no endpoint named 'elsewhere'"):
        get_metric("gemba-mqm").build(judge={**_judge(server, tmp_path / "fresh"), "endpoint": "elsewhere"}).score(
            [_seg("Hello.", "Hallo.")]
        )


# ---- one endpoint window for the judges of a run --------------------------------------------------------------


class _InFlight(JudgeStubHandler):
    """Counts the requests being answered at once, and which metric each came from."""

    KINDS = {
        "list its errors": "gemba-mqm",
        "atomic facts": "askqe",
        "closed questions": "cef",
        "Check a candidate": "dcr",
    }

    def _body(self) -> bytes:
        return self.body  # read once below, to see which metric asks

    def do_POST(self):
        self.body = super()._body()
        kind = next((m for k, m in self.KINDS.items() if k.encode() in self.body), None)
        with self.server.count_lock:
            self.server.now += 1
            self.server.peak = max(self.server.peak, self.server.now)
            if kind:
                self.server.kinds_seen.append((kind, frozenset(self.server.open_kinds)))
                self.server.open_kinds[kind] = self.server.open_kinds.get(kind, 0) + 1
        try:
            super().do_POST()
        finally:
            with self.server.count_lock:
                self.server.now -= 1
                if kind:
                    self.server.open_kinds[kind] -= 1
                    if not self.server.open_kinds[kind]:
                        del self.server.open_kinds[kind]


def test_the_judges_of_a_run_share_the_endpoints_window_side_by_side_and_score_as_alone(tmp_path):
    import threading

    server = JudgeStubServer(latency=0.05)
    server.RequestHandlerClass = _InFlight
    server.count_lock, server.now, server.peak, server.kinds_seen, server.open_kinds = threading.Lock(), 0, 0, [], {}
    server.start()
    try:
        release = write_release(tmp_path / "rel", directions=("en-de", "en-zh"))
        metrics = ["gemba-mqm", "askqe", "cef", "dcr"]

        def options(cache: str, run: list[str]) -> ScoreOptions:
            judge = {**_judge(server, tmp_path), "concurrency": 3, "cache_dir": str(tmp_path / cache)}
            return ScoreOptions(judge=judge, limit=4, extra={"nli_model": "none"} if "askqe" in run else {})

        together = score_release(release, metrics, out=tmp_path / "together", options=options("c1", metrics))
        assert [(s["metric"], s["direction"]) for s in together] == [
            (m, d) for m in metrics for d in ("en-de", "en-zh")
        ]
        assert server.peak == 3  # one window of 3 for the four metrics, full at some point
        # first stages of different metrics were answered at the same time
        assert {kind for kind, _ in server.kinds_seen} == set(metrics)
        assert any(len(others - {kind}) for kind, others in server.kinds_seen)
        for m in metrics:  # each metric alone, from an empty cache: the same scores and decisions
            score_release(release, [m], out=tmp_path / "alone", options=options("c2", [m]))
            a = pq.read_table(tmp_path / "together" / f"{m}.parquet").to_pydict()
            b = pq.read_table(tmp_path / "alone" / f"{m}.parquet").to_pydict()
            assert a["score"] == b["score"] and a.get("decision") == b.get("decision"), m
    finally:
        server.stop()


def test_a_freed_slot_goes_to_the_waiter_with_the_fewest_requests_left():
    import asyncio

    from llm_client.limits import PrioritySlots

    async def main() -> list[str]:
        slots, order = PrioritySlots(1), []
        await slots.acquire()

        async def waiter(name: str, left: int) -> None:
            await slots.acquire(left)
            order.append(name)
            slots.release()

        tasks = [asyncio.create_task(waiter(n, k)) for n, k in (("bulk", 500), ("short", 3), ("bulk2", 500))]
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(waiter("gone", 1))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        slots.release()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == ["short", "bulk", "bulk2"]  # equal priorities: first come
