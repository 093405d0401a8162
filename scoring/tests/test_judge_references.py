"""The judge metrics against their authors' own functions (fixtures made by running the authors' code from
a fetched checkout: ``scoring/tests/regen_judge_fixtures.py``), and answers kept aligned with their
questions."""
from __future__ import annotations

import json

import pytest

from scoring.judges.parsing import string_list

# ---- answer alignment ---------------------------------------------------------------------------------------


def test_an_empty_answer_keeps_its_place():
    assert string_list('["Paris", "", "1999"]') == ["Paris", "", "1999"]
    assert string_list('{"answers": ["", "x"]}', n=2) == ["", "x"]


@pytest.mark.parametrize("text", ['["a", "b"]', '["a", "b", "c", "d"]', '["a", null, "c"]', '["a", ["b"], "c"]'])
def test_a_list_of_the_wrong_length_or_shape_is_unreadable_not_padded(text):
    assert string_list(text, n=3) is None


def test_cef_labels_are_read_in_place_and_never_padded():
    from scoring.metrics.cef import labels

    assert labels(json.dumps(["YES", "", "no"]), 3) == ["YES", "IDK", "NO"]
    assert labels(json.dumps(["YES", "NO"]), 3) is None
