"""The worker task run in-process (no broker), its resource check, Hub ids offline, and the package's
promise never to import Django."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scoring.queues import ANY_QUEUE, GPU_QUEUE, queue_for
from scoring.registry import MetricError, all_metrics
from scoring.release import open_release
from scoring.runner import part_path
from scoring.tests.asserts import every

PACKAGE = Path(__file__).resolve().parents[1]


def test_package_never_imports_django():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*(from|import)\s+django\b", line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{i}")
    assert not offenders


def test_the_worker_protocol_is_loaded_with_the_worker_app():
    """``celery -A scoring.worker`` from the repository root has the root on the path only while it loads the
    app: every module of ``worker_client`` must be imported by then (none imported later, inside a task)."""
    import subprocess
    import sys

    root = PACKAGE.parent
    script = (
        "import pkgutil, sys; sys.path.insert(0, sys.argv[1]); import scoring.worker; sys.path.remove(sys.argv[1]); "
        "import worker_client; "
        "names = sorted(f'worker_client.{m.name}' for m in pkgutil.iter_modules(worker_client.__path__)); "
        "missing = [n for n in names if n not in sys.modules]; print(len(names), missing)"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root)}  # no PYTHONPATH: the path is the worker's own
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)], cwd="/", env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    count, missing = done.stdout.split(" ", 1)
    assert int(count) >= 3 and missing.strip() == "[]", done.stdout


def test_routing_by_resource():
    assert queue_for("chrF++") == queue_for("spBLEU") == queue_for("SBERT") == ANY_QUEUE
    assert {queue_for(m.name) for m in all_metrics() if m.family in ("regression", "QE") and m.name != "SBERT"} == {
        GPU_QUEUE
    }


def test_worker_task_scores_and_reports_the_part(release, tmp_path, monkeypatch):
    from scoring.worker import score_direction_task

    out = tmp_path / "out"
    result = score_direction_task.apply(
        kwargs={"release_dir": str(release), "metric": "chrF++", "direction": "en-zh", "out_dir": str(out)}
    ).get()
    assert result["output_path"] == str(part_path(out, "chrF++", "en-zh"))
    assert result["summary"]["n"] == 48 and not result["summary"]["skipped"]
    again = score_direction_task.apply(
        kwargs={"release_dir": str(release), "metric": "chrF++", "direction": "en-zh", "out_dir": str(out)}
    ).get()
    assert again["summary"]["skipped"]
    assert json.loads((out / "summary.json").read_text())["metrics"]["chrF++"]["directions"]["en-zh"]["n"] == 48


def test_workers_write_the_whole_metric_file_once_every_direction_has_its_part(release, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scoring.runner import _write_parts
    from scoring.worker import score_direction_task

    out = tmp_path / "out"
    directions = open_release(release).directions()
    assert len(directions) > 1
    for i, direction in enumerate(directions):
        score_direction_task.apply(
            kwargs={"release_dir": str(release), "metric": "chrF++", "direction": direction, "out_dir": str(out)}
        ).get()
        summary = json.loads((out / "summary.json").read_text())["metrics"]["chrF++"]["directions"]
        assert sorted(summary) == sorted(directions[: i + 1])  # the summary follows every part
        # the whole-metric file waits for the last direction instead of being rewritten after each one
        assert (out / "chrfpp.parquet").exists() == (i == len(directions) - 1)
    parts = [part_path(out, "chrF++", d) for d in sorted(directions)]
    whole = pq.read_table(out / "chrfpp.parquet")
    expected = pa.concat_tables(
        [pq.read_table(p).replace_schema_metadata(None) for p in parts], promote_options="default"
    )
    assert whole.replace_schema_metadata(None).to_pylist() == expected.to_pylist()
    assert json.loads(whole.schema.metadata[b"xqmeval.scoring"])["directions"].keys() == set(directions)

    # parts whose extras differ: columns united, absent values null, as concat_tables(promote) gives
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"score": [0.5, 0.25], "note": ["x", None]}), a)
    pq.write_table(pa.table({"score": [1.0], "tokens": [3]}), b)
    _write_parts(tmp_path / "ab.parquet", [a, b], {"metric": "m"})
    assert pq.read_table(tmp_path / "ab.parquet").to_pylist() == [
        {"score": 0.5, "note": "x", "tokens": None},
        {"score": 0.25, "note": None, "tokens": None},
        {"score": 1.0, "note": None, "tokens": 3},
    ]


def test_worker_without_gpu_refuses_gpu_metrics(release, tmp_path, monkeypatch):
    import scoring.worker as worker

    monkeypatch.delenv(worker.ALLOW_CPU_ENV, raising=False)
    monkeypatch.setattr(worker, "_has_gpu", lambda: False)
    res = worker.score_direction_task.apply(
        kwargs={"release_dir": str(release), "metric": "COMET-22", "direction": "en-de"}
    )
    with pytest.raises(MetricError, match="needs a GPU"):
        res.get()
    assert not (release / "scores" / "comet-22.parquet").exists()


def test_hub_dataset_id_offline_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MetricError, match="cannot fetch dataset 'someone/xq-release'.*pass the directory"):
        open_release("someone/xq-release")
    with pytest.raises(MetricError, match="not a release directory"):
        open_release(str(tmp_path / "missing" / "dir"))


def test_route_options_sends_each_option_to_the_metrics_that_take_it():
    from scoring.registry import get_metric, route_options

    specs = [get_metric(n) for n in ("COMET-22", "xCOMET-XL", "BERTScore", "chrF++")]
    routed = route_options(specs, {"encode_once": True, "num_layers": 9})
    assert routed == {"COMET-22": {"encode_once": True}, "xCOMET-XL": {}, "BERTScore": {"num_layers": 9}, "chrF++": {}}
    # METRIC:KEY for one metric only (names case-insensitive), and it wins over the plain KEY whatever the order
    assert route_options(specs, {"bertscore:num_layers": 4})["BERTScore"] == {"num_layers": 4}
    assert route_options(specs, {"num_layers": 9, "BERTScore:num_layers": 4})["BERTScore"] == {"num_layers": 4}
    assert route_options(specs, {"BERTScore:num_layers": 4, "num_layers": 9})["BERTScore"] == {"num_layers": 4}
    with pytest.raises(
        MetricError,
        match=r"'nm_layers': no metric of this run takes it \(options taken: COMET-22: encode_once; "
        r"xCOMET-XL: none; BERTScore: num_layers; chrF\+\+: none\)",
    ):
        route_options(specs, {"nm_layers": 9})
    with pytest.raises(MetricError, match="xCOMET-XL does not take 'encode_once'"):
        route_options(specs, {"xCOMET-XL:encode_once": True})
    with pytest.raises(MetricError, match="'BLEURT-20' is not a metric of this run"):
        route_options(specs, {"BLEURT-20:max_length": 256})


def test_every_option_a_metric_declares_is_a_parameter_of_its_scorer():
    """``MetricSpec.takes`` is what the routing lets through; each name must be a keyword its scorer reads, and
    every switch the scores page offers (``options``) one of them."""
    import inspect

    from scoring.metrics.bertscore import BertScoreScorer
    from scoring.metrics.bleurt import BleurtScorer
    from scoring.metrics.comet import CometScorer
    from scoring.metrics.metricx import MetricXScorer
    from scoring.metrics.omniscore import OmniScoreScorer
    from scoring.metrics.sbert import SbertScorer
    from scoring.metrics.strings import SacrebleuScorer

    classes = {
        "COMET": CometScorer,
        "xCOMET": CometScorer,
        "MetricX": MetricXScorer,
        "BLEURT": BleurtScorer,
        "BERTScore": BertScoreScorer,
        "OmniScore": OmniScoreScorer,
        "SBERT": SbertScorer,
    }
    checked = 0
    from scoring.metrics.askqe import AskQEScorer
    from scoring.metrics.cef import CEFScorer
    from scoring.metrics.dcr import DCRScorer
    from scoring.metrics.gemba import GembaMQMScorer

    judges = {"askqe": AskQEScorer, "cef": CEFScorer, "dcr": DCRScorer, "gemba-mqm": GembaMQMScorer}
    checked = set()
    for spec in all_metrics():
        assert set(spec.options) <= set(spec.takes), spec.name
        if spec.name in judges:  # a judge reads exactly the options its class declares as data
            assert spec.takes == tuple(judges[spec.name].options), spec.name
        else:
            cls = next((c for prefix, c in classes.items() if spec.name.startswith(prefix)), SacrebleuScorer)
            # the scorer's keywords, and the factory's own (MetricX's build takes the tokenizer)
            params = set(inspect.signature(cls.__init__).parameters) | set(inspect.signature(spec.build).parameters)
            assert set(spec.takes) <= params, (spec.name, spec.takes, params)
        checked.add(spec.name)
    assert set(judges) <= checked and {"COMET-22", "BERTScore", "MetricX-24", "chrF++"} <= checked


def test_a_misspelt_option_fails_the_run_before_any_score_is_written(release, tmp_path):
    from scoring.runner import ScoreOptions, score_release

    with pytest.raises(MetricError, match="'nm_layers': no metric of this run takes it"):
        score_release(release, ["chrF++", "BLEU"], out=tmp_path / "out", options=ScoreOptions(extra={"nm_layers": 9}))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.parquet"))
    # the command line says so and exits non-zero
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scoring",
            "run",
            "--release",
            str(release),
            "--metrics",
            "chrf++",
            "--out",
            str(tmp_path / "cli"),
            "--option",
            "word_order=3",
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and "'word_order': no metric of this run takes it" in proc.stderr, proc.stderr[-2000:]


def test_a_scorer_built_directly_refuses_an_option_it_does_not_take():
    from scoring.registry import get_metric
    from scoring.runner import ScoreOptions

    with pytest.raises(MetricError, match=r"chrF\+\+: unknown option\(s\) word_order; it takes none"):
        get_metric("chrF++").build(**ScoreOptions().for_metric(), word_order=3)
    with pytest.raises(MetricError, match=r"BERTScore: unknown option\(s\) nm_layers"):
        get_metric("BERTScore").build(**ScoreOptions().for_metric(), nm_layers=9)
    # the run-wide settings every metric is given are not options: building with them alone works
    assert (
        get_metric("chrF++").build(**ScoreOptions(trust_remote_code=True).for_metric()).signature("de")["metric"]
        == "chrF++"
    )


# ---- which faults the worker retries -------------------------------------------------------------------


@pytest.fixture
def hub_that_hangs_up(monkeypatch):
    """A Hub endpoint on 127.0.0.1 that accepts each connection and closes it at once (a Hub or proxy
    going down); counts the connections."""
    import socket
    import threading

    import huggingface_hub.constants
    from huggingface_hub.utils import reset_sessions

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # read once, when first imported (an earlier test may have set it), and baked into the cached HTTP session
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    reset_sessions()
    yield accepted
    listener.close()
    monkeypatch.undo()
    reset_sessions()


def test_transient_faults_are_told_from_permanent_ones(hub_that_hangs_up, tmp_path, monkeypatch):
    import httpx
    import redis
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    from scoring.faults import HubUnreachable, is_transient
    from scoring.model_files import resolve_model

    with pytest.raises(Exception) as cut:  # the Hub hung up: huggingface_hub raises LocalEntryNotFoundError from it
        snapshot_download("someone/model", cache_dir=tmp_path / "hub")
    assert type(cut.value).__name__ == "LocalEntryNotFoundError" and is_transient(cut.value)
    with pytest.raises(HubUnreachable, match="'someone/model' could not be downloaded: the Hub is unreachable now"):
        resolve_model("someone/model", "SBERT")
    with pytest.raises(HubUnreachable, match="cannot fetch dataset 'someone/xq-release' from the Hub: unreachable now"):
        open_release("someone/xq-release")
    with pytest.raises(Exception) as missing:  # not in the cache, and told not to look online: permanent
        snapshot_download("someone/model", cache_dir=tmp_path / "hub", local_files_only=True)
    assert not is_transient(missing.value)
    with pytest.raises(redis.exceptions.ConnectionError) as broker:
        redis.Redis(port=1, socket_connect_timeout=1).ping()
    assert is_transient(broker.value)
    assert not is_transient(OfflineModeIsEnabled("HF_HUB_OFFLINE is set"))  # a ConnectionError, yet it will not go away
    assert not is_transient(MetricError("chrF++: unknown option 'wordorder'"))

    def http_error(status: int) -> HfHubHTTPError:
        return HfHubHTTPError(
            str(status), response=httpx.Response(status, request=httpx.Request("GET", "http://127.0.0.1/"))
        )

    assert is_transient(http_error(503)) and is_transient(http_error(429)) and not is_transient(http_error(404))


def test_the_worker_retries_a_hub_outage_and_then_reports_it(hub_that_hangs_up, release, tmp_path, monkeypatch):
    from celery.signals import task_retry

    from scoring.faults import HubUnreachable
    from scoring.worker import score_direction_task

    retries = []
    task_retry.connect(on_retry := lambda **kw: retries.append(str(kw["reason"])), weak=False)
    try:
        result = score_direction_task.apply(
            kwargs={
                "release_dir": str(release),
                "metric": "SBERT",
                "direction": "en-de",
                "out_dir": str(tmp_path / "out"),
                "options": {"model": "someone/model"},
            }
        )
    finally:
        task_retry.disconnect(on_retry)
    assert len(retries) == score_direction_task.max_retries and every(
        "the Hub is unreachable now" in r for r in retries
    )
    assert len(hub_that_hangs_up) >= len(retries) + 1  # every try went to the Hub again
    with pytest.raises(HubUnreachable, match="someone/model"):
        result.get()

    # a permanent fault (the model directory does not exist) is reported at once, not retried
    task_retry.connect(on_retry, weak=False)
    try:
        result = score_direction_task.apply(
            kwargs={
                "release_dir": str(release),
                "metric": "SBERT",
                "direction": "en-de",
                "out_dir": str(tmp_path / "out"),
                "options": {"model": str(tmp_path / "no-such-model")},
            }
        )
    finally:
        task_retry.disconnect(on_retry)
    assert len(retries) == score_direction_task.max_retries
    with pytest.raises(MetricError, match="does not exist"):
        result.get()


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--batch-size", "0"), ("--batch-size", "-5"), ("--limit", "0"), ("--limit", "-3"), ("--chunk-size", "0")],
)
def test_a_size_below_one_is_refused_before_anything_is_written(release, tmp_path, capsys, flag, value):
    """It used to score nothing (--limit 0 or -3: n=0, recorded as done) or to be ignored."""
    from scoring.cli import main

    out = tmp_path / "out"
    assert (
        main(["run", "--release", str(release), "--metrics", "chrF++", "--out", str(out), "--quiet", flag, value]) == 2
    )
    assert f"{flag[2:]} must be a whole number of at least 1, got {value}" in capsys.readouterr().err
    assert not out.exists()


def test_the_rai_command_on_a_release_that_does_not_exist_says_so(tmp_path, capsys):
    """It used to fail with an UnboundLocalError (the except clause named a class imported later in the try)."""
    from scoring.cli import main

    out = tmp_path / "rai.parquet"
    argv = ["rai", "--release", str(tmp_path / "nowhere"), "--direction", "en-de", "--out", str(out)]
    assert main([*argv, "--judge-model", "m"]) == 2
    assert "error:" in capsys.readouterr().err and not out.exists()
