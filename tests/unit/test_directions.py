"""The per-direction progress entries that builds and releases share (core.domain.directions)."""

from core.domain.directions import first_failure, with_entry


def test_an_entry_is_updated_and_the_others_are_kept():
    before = {"en-de": {"status": "running", "segments": 3}, "en-zh": {"status": "done"}}
    after = with_entry(before, "en-de", {"status": "retrying", "error": "lock timeout"})
    assert after == {
        "en-de": {"status": "retrying", "segments": 3, "error": "lock timeout"},
        "en-zh": {"status": "done"},
    }
    assert before["en-de"] == {"status": "running", "segments": 3}  # not changed in place
    assert with_entry(None, "en-ar", {"status": "running"}) == {"en-ar": {"status": "running"}}


def test_the_first_direction_failed_for_good_is_named():
    assert first_failure({"en-de": {"status": "retrying", "error": "lock timeout"}}) == ""
    assert (
        first_failure(
            {
                "en-de": {"status": "done"},
                "en-zh": {"status": "failed", "error": "bad span"},
                "en-ar": {"status": "failed"},
            }
        )
        == "en-zh: bad span"
    )
