"""A judge's answer nested 100,000 deep (#48.2) is unreadable, never a RecursionError that ends the job."""

from __future__ import annotations

import time

from scoring.judges.parsing import extract_json, string_list


def test_a_deeply_nested_answer_is_unreadable_in_linear_time():
    deep = "[" * 100_000 + "]" * 100_000
    started = time.perf_counter()
    assert extract_json(deep) is None
    assert extract_json('{"answers": ' + deep + "}") is None
    assert string_list("Here you go: " + deep) is None
    assert time.perf_counter() - started < 2  # no parse attempt per bracket
    assert extract_json('{"answers": [["a"]]}') == {"answers": [["a"]]}  # an ordinary answer still reads
