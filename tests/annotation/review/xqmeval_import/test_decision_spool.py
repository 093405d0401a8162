"""xqmeval_import.domain.DecisionSpool: the decisions CSV split by language into temporary files, read back one
language at a time with the same validation as the whole-file reader had."""

from pathlib import Path

from annotation.review.xqmeval_import.domain import spool_decisions, unmatched_decisions

HEADER = "language,error_type,count_id,segment_id,error_position,decision\n"


def test_each_language_is_read_back_alone_and_the_files_are_deleted(tmp_path):
    path = tmp_path / "decisions.csv"
    path.write_text(
        HEADER + "de,Addition,1,7,head,accepted\nja,Omission,2,8,end,rejected\nde,Omission,3,9,end,rejected\n",
        encoding="utf-8",
    )
    spool, errors = spool_decisions(("decisions.csv", path))
    with spool:
        assert errors == []
        assert len(list(spool.directory.iterdir())) == 2  # one file per language
        de = spool.take("de", errors)
        assert {k: (r.segment_id, r.position, r.decision, r.location) for k, r in de.items()} == {
            ("de", "Addition", 1): ("7", "head", "accept", "decisions.csv line 2"),
            ("de", "Omission", 3): ("9", "end", "reject", "decisions.csv line 4"),
        }
        assert spool.take("de", errors) == {} and len(list(spool.directory.iterdir())) == 1
        rest = spool.rest(errors)
        assert list(rest) == [("ja", "Omission", 2)]
        assert unmatched_decisions(rest) == ["decisions.csv line 3: no candidate ja/Omission/2 in the candidate files"]
        directory = spool.directory
    assert not Path(directory).exists()


def test_bad_rows_are_named_by_line_and_a_second_different_decision_is_an_error():
    data = (
        HEADER + "de,Addition,x,7,head,accepted\nde,Addition,1,7,head,maybe\nde,Addition,1,7,head,accepted\n"
        "de,Addition,1,7,head,accepted\nde,Addition,1,7,head,rejected\nde,Addition,2\n"
    ).encode()
    spool, errors = spool_decisions(("d.csv", data))
    with spool:
        assert errors == [
            "d.csv line 2: count_id 'x' is not an integer",
            "d.csv line 3: decision 'maybe' is not accepted or rejected",
            "d.csv line 7: no value for segment_id, error_position, decision",
        ]
        rows = spool.take("de", errors)
    assert list(rows) == [("de", "Addition", 1)] and rows[("de", "Addition", 1)].decision == "accept"
    assert (
        errors[-1] == "d.csv line 6: a second, different decision for the same candidate"
    )  # the repeat on line 5 agrees


def test_empty_missing_columns_and_bad_encoding():
    for data, message in [
        (b"", "d.csv: the file is empty"),
        (
            b"language,decision\nde,accepted\n",
            "d.csv line 1: missing column(s) error_type, count_id, segment_id, error_position",
        ),
        (HEADER.encode() + b"de,Addition,1,7,head,accepted\n\xff\xfe\n", "d.csv: not valid UTF-8"),
    ]:
        spool, errors = spool_decisions(("d.csv", data))
        spool.close()
        assert len(errors) == 1 and errors[0].startswith(message), errors


def test_a_spool_of_a_killed_import_is_swept_when_the_next_one_starts(tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    code = (
        "from annotation.review.xqmeval_import.domain import DecisionSpool; import sys, time; s = DecisionSpool('d.csv'); "
        "print(s.directory, flush=True); time.sleep(60)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        cwd=Path(__file__).resolve().parents[4],
    )
    stale = Path(child.stdout.readline().strip())
    assert stale.is_dir() and stale.parent == tmp_path
    child.send_signal(signal.SIGKILL)  # kill -9: no exit path runs
    child.wait()
    assert stale.is_dir()
    spool, _ = spool_decisions(None)  # the next import
    with spool:
        assert not stale.exists() and spool.directory.exists()  # the dead one swept, its own kept


def test_the_spool_folder_is_removed_when_reading_the_decisions_fails(tmp_path, monkeypatch):
    import tempfile

    import pytest

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(IsADirectoryError):
        spool_decisions(("decisions.csv", tmp_path))  # a folder given as the file: an error mid-way
    assert not list(tmp_path.glob("xq-decisions-*"))
