"""Replica language codes (synthetic scale workloads): a replica follows every rule of its base language."""

import pytest

from annotation.review.xqmeval_import.domain import FILE_RE
from core.domain.languages import (
    CHAR,
    TOKEN,
    UnknownDirection,
    base_language,
    is_known,
    language_info,
    parse_direction,
    replica_code,
    unit_of,
)


def test_replica_codes_take_script_unit_and_direction_of_writing_from_their_base():
    for base in ("zh", "ja", "lo", "de", "ar"):
        for n in (1, 9, 49):
            code = replica_code(base, n)
            info, base_info = language_info(code), language_info(base)
            assert (info.script, info.rtl, info.unit) == (base_info.script, base_info.rtl, base_info.unit)
            assert unit_of(code) == unit_of(base)
            assert base_language(code) == base
    assert unit_of(replica_code("zh", 3)) == CHAR and unit_of(replica_code("de", 3)) == TOKEN


def test_replica_numbers_are_distinct_and_inside_the_private_use_range():
    codes = [replica_code("de", n) for n in range(1, 50)]
    assert len(set(codes)) == 49
    assert codes[0] == "de_Qaab" and codes[-1] == "de_Qabx"
    with pytest.raises(ValueError):
        replica_code("de", 50)
    with pytest.raises(ValueError):
        replica_code("de", 0)
    with pytest.raises(UnknownDirection):
        replica_code("xx", 1)


@pytest.mark.parametrize("code", ["de_Qaaa", "de_Qaby", "xx_Qaab", "de_Qbab", "de_qaab", "de_Latn", "de-Qaab"])
def test_other_suffixes_are_unknown(code):
    assert not is_known(code)
    with pytest.raises(UnknownDirection):
        language_info(code)


def test_directions_and_xqmeval_file_names_accept_replicas():
    assert parse_direction("en-zh_Qaac") == ("en", "zh_Qaac")
    match = FILE_RE.match("en-lo_Qaab-Omission.parquet")
    assert match and match["tgt"] == "lo_Qaab" and match["type"] == "Omission"
    with pytest.raises(UnknownDirection):
        parse_direction("en-zh_Qzzz")
