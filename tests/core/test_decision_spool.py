"""xqmeval_io.DecisionSpool: the decisions CSV split by language into temporary files, read back one
language at a time with the same validation as the whole-file reader had."""
from pathlib import Path

from annotation.review.xqmeval_io import spool_decisions, unmatched_decisions

HEADER = "language,error_type,count_id,segment_id,error_position,decision\n"


def test_each_language_is_read_back_alone_and_the_files_are_deleted(tmp_path):
    path = tmp_path / "decisions.csv"
    path.write_text(HEADER + "de,Addition,1,7,head,accepted\nja,Omission,2,8,end,rejected\nde,Omission,3,9,end,rejected\n", encoding="utf-8")
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
    data = (HEADER + "de,Addition,x,7,head,accepted\nde,Addition,1,7,head,maybe\nde,Addition,1,7,head,accepted\n"
            "de,Addition,1,7,head,accepted\nde,Addition,1,7,head,rejected\nde,Addition,2\n").encode()
    spool, errors = spool_decisions(("d.csv", data))
    with spool:
        assert errors == [
            "d.csv line 2: count_id 'x' is not an integer",
            "d.csv line 3: decision 'maybe' is not accepted or rejected",
            "d.csv line 7: no value for segment_id, error_position, decision",
        ]
        rows = spool.take("de", errors)
    assert list(rows) == [("de", "Addition", 1)] and rows[("de", "Addition", 1)].decision == "accept"
    assert errors[-1] == "d.csv line 6: a second, different decision for the same candidate"  # the repeat on line 5 agrees


def test_empty_missing_columns_and_bad_encoding():
    for data, message in [
        (b"", "d.csv: the file is empty"),
        (b"language,decision\nde,accepted\n", "d.csv line 1: missing column(s) error_type, count_id, segment_id, error_position"),
        (HEADER.encode() + b"de,Addition,1,7,head,accepted\n\xff\xfe\n", "d.csv: not valid UTF-8"),
    ]:
        spool, errors = spool_decisions(("d.csv", data))
        spool.close()
        assert len(errors) == 1 and errors[0].startswith(message), errors
