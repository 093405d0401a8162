"""import_xqmeval on the real shared XQ-MEval release, and on malformed copies of it."""

import csv
import io
import shutil
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from annotation.models import ReviewDecision
from core.domain.units import Edit, apply_edit, find_marked_region, mark_edit, split_units, strip_markup
from core.models import GoldSegment
from injection.models import Candidate
from tests.support.asserts import every

pytestmark = [pytest.mark.shared_data]


def run(*args):
    out = io.StringIO()
    call_command("import_xqmeval", *args, stdout=out, verbosity=0)
    return out.getvalue()


@pytest.fixture(scope="module")
def imported_once(module_data, shared_data):
    """The whole release imported once for the module's first tests (``module_data``: each test's changes are
    rolled back after it; the database is emptied after the last of them, before the malformed copies)."""
    module_data(lambda: run("xqm", str(shared_data / "candidates"), "--decisions", str(shared_data / "decisions.csv")))
    return shared_data


@pytest.fixture
def imported(db, imported_once):
    return imported_once


@pytest.mark.django_db(transaction=False)
def test_counts_per_language_and_error_type_match_the_files(imported):
    expected = Counter()
    for path in sorted((imported / "candidates").glob("*.parquet")):
        _, lang, etype = path.stem.split("-")
        expected[(f"en-{lang}", etype)] = pq.read_metadata(path).num_rows
    stored = Counter(
        {
            (d, t): n
            for d, t, n in Candidate.objects.values_list("segment__direction__code", "error_type")
            .annotate(n=__import__("django.db.models", fromlist=["Count"]).Count("id"))
            .values_list("segment__direction__code", "error_type", "n")
        }
    )
    assert stored == expected
    assert sum(expected.values()) == 7337
    assert Candidate.objects.count() == 7337
    assert GoldSegment.objects.filter(direction__code="en-de").count() == 102


def test_released_decisions_are_one_final_imported_decision_per_candidate(imported):
    assert Candidate.objects.filter(status="accepted").count() == 6942
    assert Candidate.objects.filter(status="rejected").count() == 395
    decisions = ReviewDecision.objects.all()
    assert decisions.count() == 7337
    assert set(decisions.values_list("source", "is_final", "reviewer")) == {("imported", True, None)}
    sample = pd.read_csv(imported / "decisions.csv").query("language == 'de' and error_type == 'Omission'")
    for row in sample.itertuples():
        candidate = Candidate.objects.get(
            segment__direction__code="en-de", error_type="Omission", external_id=str(row.count_id)
        )
        assert candidate.status == row.decision
        assert candidate.decisions.get().decision == {"accepted": "accept", "rejected": "reject"}[row.decision]


def test_marking_each_stored_span_in_the_reference_reproduces_the_candidate(imported):
    """For every candidate whose edit is local, reference + stored span + stored edit = the candidate, and
    marking it reproduces the released <v>…</v> text (up to whitespace around tags)."""
    checked = 0
    for c in Candidate.objects.select_related("segment__direction__target").iterator():
        if "local_edit" in c.flags or "single_region" in c.flags:
            continue
        lang = c.segment.direction.target.code
        edit = Edit(c.span_start, c.span_end, tuple(split_units(c.edit_text, lang)))
        assert split_units(apply_edit(c.segment.reference, edit, lang), lang) == split_units(c.text, lang), c.pk
        marked = mark_edit(c.segment.reference, edit, lang)
        assert split_units(strip_markup(marked), lang) == split_units(strip_markup(c.raw_output), lang), c.pk
        # Our region is the released one, widened to whole tokens where a tag fell inside a token.
        ours, theirs = find_marked_region(marked)[1], find_marked_region(c.raw_output)[1]
        assert theirs.strip() in ours, c.pk
        checked += 1
    assert checked >= 7300


def test_candidates_changed_outside_their_span_are_flagged_not_dropped(imported):
    flagged = (
        Candidate.objects.filter(flags__contains=["local_edit"])
        if _json_contains()
        else [c for c in Candidate.objects.all() if "local_edit" in c.flags]
    )
    flagged = list(flagged)
    assert len(flagged) == 12
    assert every(c.checks["local_edit"]["passed"] is False and c.checks["local_edit"]["detail"] for c in flagged)
    double = [
        c
        for c in Candidate.objects.filter(segment__direction__code="en-ja", error_type="Untranslated")
        if "single_region" in c.flags
    ]
    assert sorted(int(c.external_id) for c in double) == [10, 100]
    assert every(c.status == "rejected" for c in double)


def _json_contains():
    from django.db import connection

    return connection.vendor == "postgresql"


def test_second_import_changes_nothing(imported):
    before = (Candidate.objects.count(), ReviewDecision.objects.count(), GoldSegment.objects.count())
    out = io.StringIO()
    call_command(
        "import_xqmeval",
        "xqm",
        str(imported / "candidates"),
        "--decisions",
        str(imported / "decisions.csv"),
        stdout=out,
    )
    assert "nothing changed" in out.getvalue()
    assert (Candidate.objects.count(), ReviewDecision.objects.count(), GoldSegment.objects.count()) == before


def test_an_import_leaves_planner_statistics_for_what_it_wrote(imported):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    tables = [GoldSegment._meta.db_table, Candidate._meta.db_table, ReviewDecision._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT tablename FROM pg_stats WHERE tablename = ANY(%s)", [tables])
        analysed = {row[0] for row in cursor.fetchall()}
    # without them the review queue's first queries after an import plan as sequential scans
    assert analysed == set(tables)


def test_a_different_decision_for_an_imported_candidate_is_refused(imported, tmp_path):
    rows = list(csv.DictReader(open(imported / "decisions.csv", encoding="utf-8")))
    rows[0]["decision"] = "rejected" if rows[0]["decision"] == "accepted" else "accepted"
    path = tmp_path / "decisions.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(CommandError, match="already imported as"):
        run("xqm", str(imported / "candidates"), "--decisions", str(path))
    assert Candidate.objects.filter(status="accepted").count() == 6942


# ---- malformed copies: clear error naming file and row, nothing written -------------------------------


@pytest.fixture
def german(tmp_path, shared_data):
    """A copy of the four en-de files to damage."""
    folder = tmp_path / "cands"
    folder.mkdir()
    for path in (shared_data / "candidates").glob("en-de-*.parquet"):
        shutil.copy(path, folder / path.name)
    return folder


def damage(folder, name, edit):
    path = folder / name
    df = pd.read_parquet(path)
    df = edit(df)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)


MALFORMED = [
    ("missing column", lambda df: df.drop(columns=["mt"]), "missing column(s) mt"),
    (
        "two regions",
        lambda df: df.assign(mt=df.mt.where(df.index != 4, "a <v>b</v> c <v>d</v>")),
        "row 5: mt markup: 2 <v>",
    ),
    (
        "unbalanced tags",
        lambda df: df.assign(mt=df.mt.where(df.index != 2, "a <v>b c")),
        "row 3: mt markup: unbalanced",
    ),
    ("no region", lambda df: df.assign(mt=df.mt.where(df.index != 0, "no markup")), "row 1: mt markup: no <v>"),
    ("duplicate id", lambda df: df.assign(count_id=df.count_id.where(df.index != 1, 1)), "row 2: duplicate count_id 1"),
    (
        "wrong position",
        lambda df: df.assign(error_position=df.error_position.where(df.index != 0, "middle")),
        "is not head or end",
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "edit", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_candidate_files_write_nothing(german, label, edit, message):
    damage(german, "en-de-Addition.parquet", edit)
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        run("xqm", str(german), "--strict")
    assert "en-de-Addition.parquet" in str(info.value)
    assert Candidate.objects.count() == 0 and GoldSegment.objects.count() == 0


@pytest.mark.django_db
def test_empty_file_and_unknown_direction(german):
    (german / "en-de-Addition.parquet").write_bytes(b"")
    shutil.copy(german / "en-de-Omission.parquet", german / "en-xx-Omission.parquet")
    with pytest.raises(CommandError) as info:
        run("xqm", str(german))
    assert "en-de-Addition.parquet: the file is empty" in str(info.value)
    assert "en-xx-Omission.parquet: unknown direction en-xx" in str(info.value)
    assert Candidate.objects.count() == 0


@pytest.mark.django_db
def test_bad_decisions_file_is_reported_by_line(german, tmp_path):
    path = tmp_path / "decisions.csv"
    path.write_text(
        "language,error_type,count_id,segment_id,error_position,decision\nde,Addition,1,2,head,maybe\nde,Addition,999,2,head,accepted\n"
    )
    with pytest.raises(CommandError) as info:
        run("xqm", str(german), "--decisions", str(path))
    assert "line 2: decision 'maybe'" in str(info.value) and "line 3: no candidate de/Addition/999" in str(info.value)
    assert Candidate.objects.count() == 0


@pytest.mark.django_db
def test_bad_encoding_of_decisions(german, tmp_path):
    path = tmp_path / "decisions.csv"
    path.write_bytes(b"language,error_type\n\xff\xfe")
    with pytest.raises(CommandError, match="not valid UTF-8"):
        run("xqm", str(german), "--decisions", str(path))
    assert Candidate.objects.count() == 0


@pytest.mark.django_db
def test_changed_reference_under_an_existing_segment_is_refused(german):
    run("xqm", str(german))
    damage(german, "en-de-Addition.parquet", lambda df: df.assign(ref=df.ref + " X"))
    damage(german, "en-de-Omission.parquet", lambda df: df.assign(ref=df.ref + " X"))
    damage(german, "en-de-Mistranslation.parquet", lambda df: df.assign(ref=df.ref + " X"))
    before = Candidate.objects.count()
    with pytest.raises(CommandError, match="already exists in xqm with different text"):
        run("xqm", str(german))
    assert Candidate.objects.count() == before


# ---- one language at a time: all or nothing over the whole file set, the same rows with worker processes ---


def _stored_rows():
    return sorted(
        Candidate.objects.values_list(
            "segment__direction__code",
            "segment__external_id",
            "error_type",
            "position",
            "external_id",
            "text",
            "span_start",
            "span_end",
            "edit_text",
            "raw_output",
            "checks",
            "flags",
            "status",
            "status_reason",
        )
    )


@pytest.fixture
def three_languages(tmp_path, shared_data):
    folder = tmp_path / "three"
    folder.mkdir()
    for lang in ("de", "ja", "zh"):
        for path in (shared_data / "candidates").glob(f"en-{lang}-*.parquet"):
            shutil.copy(path, folder / path.name)
    lines = (shared_data / "decisions.csv").read_text(encoding="utf-8").splitlines()
    decisions = tmp_path / "decisions.csv"
    decisions.write_text(
        "\n".join([lines[0]] + [line for line in lines[1:] if line.split(",")[0] in ("de", "ja", "zh")]) + "\n",
        encoding="utf-8",
    )
    return folder, decisions


@pytest.mark.django_db(transaction=True)
def test_worker_processes_import_the_same_rows_as_one_process(three_languages):
    folder, decisions = three_languages
    run("one", str(folder), "--decisions", str(decisions))
    in_process = _stored_rows()
    Candidate.objects.all().delete()
    GoldSegment.objects.all().delete()
    out = run("one", str(folder), "--decisions", str(decisions), "--jobs", "2")
    assert _stored_rows() == in_process
    assert len(in_process) == sum(pq.read_metadata(p).num_rows for p in folder.glob("*.parquet"))
    assert ReviewDecision.objects.count() == len(in_process)
    assert "nothing changed" not in out


@pytest.mark.django_db(transaction=True)
def test_a_bad_file_in_a_later_language_undoes_the_languages_written_before_and_every_problem_is_listed(
    three_languages,
):
    folder, decisions = three_languages
    # de is written first; ja and zh (read after it) are both damaged
    damage(folder, "en-ja-Omission.parquet", lambda df: df.assign(mt=df.mt.where(df.index != 1, "no markup")))
    damage(
        folder,
        "en-zh-Addition.parquet",
        lambda df: df.assign(error_position=df.error_position.where(df.index != 0, "middle")),
    )
    with pytest.raises(CommandError) as info:
        run("bad", str(folder), "--decisions", str(decisions))
    assert "en-ja-Omission.parquet row 2: mt markup: no <v>" in str(info.value)
    assert "en-zh-Addition.parquet row 1: error_position 'middle' is not head or end" in str(info.value)
    assert not Candidate.objects.exists() and not GoldSegment.objects.exists() and not ReviewDecision.objects.exists()
    from core.models import Project

    assert not Project.objects.filter(name="bad").exists()


@pytest.mark.django_db
def test_decisions_imported_after_their_candidates_set_the_status_once(three_languages):
    folder, decisions = three_languages
    run("later", str(folder))
    assert set(Candidate.objects.values_list("status", flat=True)) == {"pending"}
    run("later", str(folder), "--decisions", str(decisions))
    expected = Counter(line.rsplit(",", 1)[1] for line in decisions.read_text(encoding="utf-8").splitlines()[1:])
    assert Counter(Candidate.objects.values_list("status", flat=True)) == expected
    assert ReviewDecision.objects.count() == sum(expected.values())
    out = run("later", str(folder), "--decisions", str(decisions))
    assert ReviewDecision.objects.count() == sum(expected.values()) and "nothing changed" in out


@pytest.mark.django_db
def test_verbosity_2_prints_a_line_per_language(three_languages):
    folder, decisions = three_languages
    out = io.StringIO()
    call_command("import_xqmeval", "lines", str(folder), "--decisions", str(decisions), stdout=out, verbosity=2)
    lines = [line for line in out.getvalue().splitlines() if "candidates read and checked" in line]
    assert [line.split(":")[0] for line in lines] == ["de", "ja", "zh"]
    assert every(line.endswith("written") for line in lines)
    counts = {line.split(":")[0]: int(line.split()[1]) for line in lines}
    assert counts["de"] == sum(pq.read_metadata(p).num_rows for p in folder.glob("en-de-*.parquet"))


# ---- parallel writers (PostgreSQL): every language validated first, then one transaction per language ---


def _postgresql_only():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("parallel writers write through several PostgreSQL connections")


def _database_now():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def _analysed_since(moment) -> set[str]:
    """The import's tables ANALYZEd after ``moment`` (by any backend: the writers analyse them)."""
    import time

    from django.db import connection

    tables = [GoldSegment._meta.db_table, Candidate._meta.db_table, ReviewDecision._meta.db_table]
    for _ in range(
        20
    ):  # a backend's statistics reach the shared view when it reports them (at the latest, as it exits)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(%s) AND last_analyze > %s",
                [tables, moment],
            )
            analysed = {row[0] for row in cursor.fetchall()}
        if len(analysed) == len(tables):
            break
        time.sleep(0.1)
    return analysed


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_import_the_same_rows_as_one_process(three_languages):
    _postgresql_only()
    from injection.models import InjectionRun

    folder, decisions = three_languages
    run("one", str(folder), "--decisions", str(decisions))
    in_process = _stored_rows()
    run_totals = list(InjectionRun.objects.values_list("total", "done"))
    Candidate.objects.all().delete()
    GoldSegment.objects.all().delete()
    InjectionRun.objects.all().delete()
    started = _database_now()
    out = run("one", str(folder), "--decisions", str(decisions), "--writers", "2")
    assert _stored_rows() == in_process
    assert _analysed_since(started) == {
        GoldSegment._meta.db_table,
        Candidate._meta.db_table,
        ReviewDecision._meta.db_table,
    }
    assert ReviewDecision.objects.count() == len(in_process)
    assert list(InjectionRun.objects.values_list("total", "done")) == run_totals == [(len(in_process), len(in_process))]
    assert f"{GoldSegment.objects.count()} gold segments, {len(in_process)} candidates (0 unchanged)" in out
    assert "read, checked and written by 2 writers" in out
    again = run("one", str(folder), "--decisions", str(decisions), "--writers", "2")
    assert f"0 candidates ({len(in_process)} unchanged)" in again and "nothing changed" in again


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_validate_every_language_before_writing_any(three_languages):
    _postgresql_only()
    from core.models import Project

    folder, decisions = three_languages
    damage(folder, "en-ja-Omission.parquet", lambda df: df.assign(mt=df.mt.where(df.index != 1, "no markup")))
    damage(
        folder,
        "en-zh-Addition.parquet",
        lambda df: df.assign(error_position=df.error_position.where(df.index != 0, "middle")),
    )
    lines = decisions.read_text(encoding="utf-8").splitlines()
    decisions.write_text(
        "\n".join(lines + ["xx,Addition,1,1,head,accepted"]) + "\n", encoding="utf-8"
    )  # no such language
    with pytest.raises(CommandError) as info:
        run("bad", str(folder), "--decisions", str(decisions), "--writers", "2")
    message = str(info.value)
    assert "nothing imported" in message
    assert "en-ja-Omission.parquet row 2: mt markup: no <v>" in message
    assert "en-zh-Addition.parquet row 1: error_position 'middle' is not head or end" in message
    assert f"line {len(lines) + 1}: no candidate xx/Addition/1 in the candidate files" in message
    assert not Project.objects.filter(name="bad").exists()
    assert not Candidate.objects.exists() and not GoldSegment.objects.exists() and not ReviewDecision.objects.exists()


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_keep_the_languages_written_before_a_conflict_and_a_second_run_completes_the_import(
    three_languages, tmp_path
):
    _postgresql_only()
    folder, decisions = three_languages
    japanese = tmp_path / "ja"
    japanese.mkdir()
    for path in folder.glob(
        "en-ja-*.parquet"
    ):  # stored first with other reference texts: the full import conflicts on ja
        shutil.copy(path, japanese / path.name)
        damage(japanese, path.name, lambda df: df.assign(ref=df.ref + " X"))
    run("mixed", str(japanese))
    stored_ja = Candidate.objects.count()
    with pytest.raises(CommandError) as info:
        run("mixed", str(folder), "--decisions", str(decisions), "--writers", "2")
    message = str(info.value)
    assert "2 language(s) written and kept (de, zh), the others not" in message
    assert "already exists in mixed with different text" in message and "en-ja#" in message
    by_language = Counter(Candidate.objects.values_list("segment__direction__code", flat=True))
    assert by_language["en-ja"] == stored_ja  # ja rolled back: what was stored before is all there is
    for lang in ("de", "zh"):
        assert by_language[f"en-{lang}"] == sum(
            pq.read_metadata(p).num_rows for p in folder.glob(f"en-{lang}-*.parquet")
        )
    assert ReviewDecision.objects.filter(candidate__segment__direction__code="en-ja").count() == 0
    # the conflict resolved (the wrong ja rows removed), the same command finishes: de and zh come back unchanged
    Candidate.objects.filter(segment__direction__code="en-ja").delete()
    GoldSegment.objects.filter(direction__code="en-ja").delete()
    out = run("mixed", str(folder), "--decisions", str(decisions), "--writers", "2")
    ja_rows = sum(pq.read_metadata(p).num_rows for p in folder.glob("en-ja-*.parquet"))
    assert f"{ja_rows} candidates ({by_language['en-de'] + by_language['en-zh']} unchanged)" in out
    assert ReviewDecision.objects.count() == Candidate.objects.count()


@pytest.mark.django_db
def test_parallel_writers_refuse_a_surrounding_transaction_and_a_database_without_several_writers(three_languages):
    from django.db import connection

    folder, decisions = three_languages
    expected = (
        "call the import outside a transaction"
        if connection.vendor == "postgresql"
        else "parallel writers need PostgreSQL"
    )
    with pytest.raises(CommandError, match=expected):
        run("x", str(folder), "--writers", "2")  # (a test without transaction=True runs inside one)
    with pytest.raises(CommandError, match="not with --jobs"):
        run("x", str(folder), "--writers", "2", "--jobs", "2")
    assert not Candidate.objects.exists()


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_report_a_database_error_in_one_language_and_keep_the_others(three_languages):
    _postgresql_only()
    from django.db import connection

    from core.models import Direction

    folder, decisions = three_languages
    refuse = f"""
        CREATE FUNCTION xq_test_refuse_ja() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.direction_id IN (SELECT id FROM {Direction._meta.db_table} WHERE code = 'en-ja') THEN RAISE EXCEPTION 'refused for the test'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER xq_test_refuse_ja BEFORE INSERT ON {GoldSegment._meta.db_table} FOR EACH ROW EXECUTE FUNCTION xq_test_refuse_ja();
    """
    with connection.cursor() as cursor:
        cursor.execute(refuse)  # the database refuses ja's gold segments, as a failing disk or a lock timeout would
    try:
        with pytest.raises(CommandError) as info:
            run("refused", str(folder), "--decisions", str(decisions), "--writers", "2")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                f"DROP TRIGGER xq_test_refuse_ja ON {GoldSegment._meta.db_table}; DROP FUNCTION xq_test_refuse_ja();"
            )
    message = str(info.value)
    assert "2 language(s) written and kept (de, zh), the others not" in message
    assert "language ja: writing failed" in message and "refused for the test" in message
    assert set(Candidate.objects.values_list("segment__direction__code", flat=True).distinct()) == {"en-de", "en-zh"}
    assert not GoldSegment.objects.filter(direction__code="en-ja").exists()
