"""The pure rules of rating: the Likert dimensions and the check that every one has a score."""

from annotation.rating import domain as rules
from tests.support.asserts import every


def test_missing_dimensions():
    full = {"informativeness": 5, "clarity": "4", "plausibility": 3, "faithfulness": 1}
    assert rules.missing_dimensions(full) == []
    assert rules.missing_dimensions({**full, "clarity": 0}) == ["clarity"]
    assert rules.missing_dimensions({**full, "faithfulness": 6, "plausibility": None}) == [
        "plausibility",
        "faithfulness",
    ]
    assert rules.missing_dimensions({**full, "informativeness": True}) == ["informativeness"]


def test_every_dimension_has_five_anchors():
    assert rules.DIMENSION_NAMES == ("informativeness", "clarity", "plausibility", "faithfulness")
    assert every(len(d.anchors) == 5 for d in rules.DIMENSIONS)
