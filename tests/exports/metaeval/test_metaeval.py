"""Meta-evaluation of a scored release: selector, command and page, on a release built through the ORM
whose en-zh scores carry a cross-lingual bias (compressed and shifted scale)."""

import io
import json

import pytest
from django.core.management import call_command
from scipy import stats

from core.models import Direction
from exports.metaeval.selectors import release_meta_evaluation
from exports.models import MetricScore, PseudoSystem, Release
from exports.scores.services import scores_summarize
from tests.support.asserts import every

pytestmark = pytest.mark.django_db

MIXES = [(0, 3), (2, 0), (1, 5), (4, 1), (3, 5), (5, 4)]  # (k en-de, k en-zh) of each multilingual system


def chrf_like(direction_code: str, k: int, i: int) -> float:
    base = 80.0 - 8 * k + 0.3 * i
    return base if direction_code == "en-de" else 0.5 * base - 10


@pytest.fixture
def scored(project, languages):
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    ids = {}
    for code in ("en-de", "en-zh"):
        direction = Direction.objects.get(code=code)
        for k in range(6):
            ids[(code, k)] = [f"{code}/{k * 10 + i}/k{k}" for i in range(4)]
            for i, tid in enumerate(ids[(code, k)]):
                MetricScore.objects.create(
                    release=release,
                    metric="chrF++",
                    direction=direction,
                    triplet_id=tid,
                    level=k,
                    score=chrf_like(code, k, i),
                )
                # A lower-is-better metric: more errors, higher score.
                MetricScore.objects.create(
                    release=release,
                    metric="MetricX-23",
                    direction=direction,
                    triplet_id=tid,
                    level=k,
                    score=2.0 * k + 0.1 * i,
                )
            for r in range(2):
                PseudoSystem.objects.create(
                    release=release,
                    project=project,
                    kind="monolingual",
                    name=f"mono/{code}/k{k}/r{r}",
                    direction=direction,
                    level=k,
                    repetition=r,
                    seed=r,
                    human_score=-5.0 * k,
                    triplet_ids=ids[(code, k)],
                )
    for r in range(2):
        for s, (kde, kzh) in enumerate(MIXES):
            PseudoSystem.objects.create(
                release=release,
                project=project,
                kind="multilingual",
                name=f"multi/s{s}/r{r}",
                repetition=r,
                seed=r,
                human_score=-5.0 * (kde + kzh) / 2,
                triplet_ids=ids[("en-de", kde)] + ids[("en-zh", kzh)],
            )
    scores_summarize(release=release)  # as the ingest does
    return release


def test_triplet_level_tau_matches_scipy_and_lgn_fixes_the_bias(scored):
    result = release_meta_evaluation(scored, "chrF++")
    de = [chrf_like("en-de", k, i) for k in range(6) for i in range(4)]
    human = [-5.0 * k for k in range(6) for _ in range(4)]
    row = next(r for r in result["triplet_level"] if r["direction"] == "en-de")
    assert row["tau"] == pytest.approx(stats.kendalltau(de, human, variant="b").statistic) and row["n"] == 24
    assert result["system_level"] == {"en-de": pytest.approx(1.0), "en-zh": pytest.approx(1.0)}
    assert [c["level"] for c in result["cv"]] == [0, 1, 2, 3, 4, 5] and every(c["cv"] > 0 for c in result["cv"])
    multi = result["multilingual"]
    assert (
        multi["repetitions"] == 2 and multi["tau_lgn"] == pytest.approx(1.0) and multi["tau_plain"] < multi["tau_lgn"]
    )


def test_lower_is_better_metrics_are_oriented_before_tau(scored):
    result = release_meta_evaluation(scored, "MetricX-23", variant="c")
    assert result["better"] == "lower" and result["variant"] == "c"
    assert every(r["tau"] > 0.9 for r in result["triplet_level"])


def test_command_prints_the_same_numbers(scored):
    out = io.StringIO()
    call_command("metaeval", "demo@1.0.0", "--metrics", "chrF++", "--format", "json", stdout=out)
    printed = json.loads(out.getvalue())[0]
    assert printed["triplet_level"] == release_meta_evaluation(scored, "chrF++")["triplet_level"]
    text = io.StringIO()
    call_command("metaeval", "demo@1.0.0", "--metrics", "chrF++", stdout=text)
    assert "multilingual systems: τ plain" in text.getvalue() and "cross-lingual CV" in text.getvalue()


def test_command_shows_each_step_in_a_progress_bar_on_stderr(scored, capsys):
    from exports.metaeval.selectors import meta_evaluation_steps

    steps = []
    release_meta_evaluation(scored, "chrF++", progress=steps.append)
    assert steps == meta_evaluation_steps(scored, "chrF++")  # every step, once, in order
    assert steps == ["multilingual systems read", "directions: en-de", "directions: en-zh", "multilingual study"]
    out = io.StringIO()
    call_command("metaeval", "demo@1.0.0", "--metrics", "chrF++,MetricX-23", "--format", "json", stdout=out)
    assert len(json.loads(out.getvalue())) == 2  # stdout holds the JSON alone
    bar = capsys.readouterr().err
    assert (
        "meta-evaluation" in bar
        and "8/8" in bar
        and "MetricX-23: multilingual study" in bar
        and "chrF++: directions: en-zh" in bar
    )


def test_command_errors_are_clear(scored):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no BLEU scores"):
        call_command("metaeval", "demo@1.0.0", "--metrics", "BLEU", stdout=io.StringIO())
    with pytest.raises(CommandError, match="unknown τ variant"):
        call_command("metaeval", "demo@1.0.0", "--metrics", "chrF++", "--variant", "a", stdout=io.StringIO())


def test_multilingual_study_needs_every_triplet_scored_and_leaves_no_spool(scored, monkeypatch, tmp_path):
    """The multilingual systems are spooled to disk per direction; a triplet of one of them without a score
    (here en-zh/51, in a level-5 system) leaves the study out, as when every score was held together, and
    the spool is removed either way."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert release_meta_evaluation(scored, "chrF++")["multilingual"]["repetitions"] == 2
    MetricScore.objects.filter(release=scored, metric="chrF++", triplet_id="en-zh/51/k5").delete()
    result = release_meta_evaluation(scored, "chrF++")
    assert result["multilingual"] is None and "multilingual_error" not in result
    # en-zh's level-5 systems lost a triplet: en-zh keeps its systems of levels 0-4, en-de all six
    assert set(result["system_level"]) == {"en-de", "en-zh"} and [c["directions"] for c in result["cv"]] == [
        2,
        2,
        2,
        2,
        2,
        1,
    ]
    assert list(tmp_path.iterdir()) == []
    # A viewer who sees one direction gets its figures, and no study
    one = release_meta_evaluation(scored, "MetricX-23", directions=["en-de"])
    assert [r["direction"] for r in one["triplet_level"]] == ["en-de"] and one["multilingual"] is None


def test_page_shows_visible_directions_only(client, scored, admin_user, annotator_de):
    url = f"/scores/{scored.pk}/metaeval/"
    assert client.get(url, {"metric": "chrF++"}).status_code == 302
    client.force_login(admin_user)
    page = client.get(url, {"metric": "chrF++"}).content.decode()
    assert "en-de" in page and "en-zh" in page and "with language-specific global normalisation" in page
    nope = client.get(url, {"metric": "nope"})  # an existing release says why, in words (#46.3)
    assert nope.status_code == 200 and "Nothing to show yet: release" in nope.content.decode()
    assert "no nope scores" in nope.content.decode()
    unnamed = client.get(url).content.decode()  # no metric named: the scored ones, each a link
    assert "name a metric to meta-evaluate" in unnamed and "?metric=chrF%2B%2B" in unnamed
    client.force_login(annotator_de)
    page = client.get(url, {"metric": "chrF++"}).content.decode()
    assert "en-de" in page and "en-zh" not in page
    assert "Needs every direction of the release scored and visible to you" in page


def test_tie_calibrated_acc23_on_command_and_page(scored, client, admin_user):
    """acc23-tc (WMT23 segment level) is offered beside the plain variants and equals the pure function."""
    from exports.metaeval.domain import kendall_tau

    result = release_meta_evaluation(scored, "MetricX-23", variant="acc23-tc")
    human = [-5.0 * k for k in range(6) for _ in range(4)]
    oriented = [-(2.0 * k + 0.1 * i) for k in range(6) for i in range(4)]
    expected = kendall_tau(oriented, human, "acc23", calibrate_ties=True)
    row = next(r for r in result["triplet_level"] if r["direction"] == "en-de")
    assert row["tau"] == pytest.approx(expected.value) and row["epsilon"] == pytest.approx(expected.epsilon)
    # Four triplets per level, 0.1 apart: ε = 0.3 ties each level's triplets and nothing else → acc23 = 1.
    assert row["tau"] == pytest.approx(1.0) and row["epsilon"] == pytest.approx(0.3)
    assert release_meta_evaluation(scored, "MetricX-23", variant="acc23")["triplet_level"][0]["tau"] < 1.0

    text = io.StringIO()
    call_command("metaeval", "demo@1.0.0", "--metrics", "MetricX-23", "--variant", "acc23-tc", stdout=text)
    assert "acc23, tie-calibrated" in text.getvalue() and "ε=0.3" in text.getvalue()

    client.force_login(admin_user)
    url = f"/scores/{scored.pk}/metaeval/"
    page = client.get(url, {"metric": "MetricX-23"}).content.decode()
    assert "variant=acc23-tc" in page and "variant=23-tc" in page
    page = client.get(url, {"metric": "MetricX-23", "variant": "acc23-tc"}).content.decode()
    assert "<strong>acc23, tie-calibrated (WMT23 segment level)</strong>" in page and "<th>ε</th>" in page


def test_page_keeps_its_result_until_the_scores_change(client, scored, admin_user, annotator_de, tmp_path):
    """Without a worker the page computes the result once per scores, variant and scope, then reads it
    from the cache (no score is read); a new ingest of the metric changes the key."""
    import re

    from django.core.cache import cache
    from django.db import connection
    from django.db.models import F
    from django.test.utils import CaptureQueriesContext

    from exports.metaeval import selectors as metaeval_selectors

    cache.clear()
    url = f"/scores/{scored.pk}/metaeval/"
    client.force_login(admin_user)
    first = client.get(url, {"metric": "chrF++"}).content.decode()
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url, {"metric": "chrF++"}).content.decode()
    cells = lambda page: re.findall(r"<td>(.*?)</td>", page)  # noqa: E731 (the page differs by its CSP nonce)
    assert cells(again) == cells(first) and "en-zh" in cells(again)
    assert not [q["sql"] for q in queries.captured_queries if re.search(r'FROM "exports_metricscore"', q["sql"])]
    assert metaeval_selectors.cached_meta_evaluation(scored, "chrF++", "b", None) is not None
    assert metaeval_selectors.cached_meta_evaluation(scored, "chrF++", "c", None) is None  # per variant
    client.force_login(annotator_de)  # another scope: its own entry, its directions only
    mine = client.get(url, {"metric": "chrF++"}).content.decode()
    assert "en-de" in mine and "<td>en-zh</td>" not in mine
    assert metaeval_selectors.cached_meta_evaluation(scored, "chrF++", "b", ["en-de"]) is not None
    # the scores change (a re-ingest writes new summaries): the kept result is not found any more
    de = Direction.objects.get(code="en-de")
    MetricScore.objects.filter(release=scored, metric="chrF++", direction=de).update(score=F("score") * 0.5)
    scores_summarize(release=scored, metric="chrF++", direction=de)
    assert metaeval_selectors.cached_meta_evaluation(scored, "chrF++", "b", None) is None
    client.force_login(admin_user)
    changed = client.get(url, {"metric": "chrF++"}).content.decode()
    assert cells(changed) != cells(first)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_page_asks_a_worker_when_one_runs(client, scored, admin_user, redis_url):
    import redis as redis_lib
    from django.core.cache import cache

    from exports.metaeval import selectors as metaeval_selectors
    from exports.metaeval.tasks import metaeval_result_task
    from tests.support.celery_queue import tasks_queued_to

    cache.clear()
    client.force_login(admin_user)
    url = f"/scores/{scored.pk}/metaeval/?metric=chrF%2B%2B"
    redis_lib.Redis.from_url(redis_url).delete("default")
    with tasks_queued_to(redis_url):
        page = client.get(url).content.decode()
        again = client.get(url).content.decode()
    assert "Being computed by a worker" in page and f'hx-get="{url}" hx-trigger="every 5s"' in page
    assert "Being computed by a worker" in again and "Triplet-level" not in again
    queued = redis_lib.Redis.from_url(redis_url).lrange("default", 0, -1)
    assert sum(b"exports.metaeval_result" in m for m in queued) == 1  # the second view queued nothing more
    redis_lib.Redis.from_url(redis_url).delete("default")
    metaeval_result_task.apply((scored.pk, "chrF++", "b", None))  # what the worker runs
    assert metaeval_selectors.cached_meta_evaluation(scored, "chrF++", "b", None) is not None
    done = client.get(url).content.decode()
    assert "Triplet-level" in done and "Being computed" not in done and "hx-trigger" not in done


def test_page_says_why_lgn_is_undefined_instead_of_failing(client, scored, admin_user):
    """A direction whose monolingual systems all score the same has no LGN (no spread to normalise by):
    the page says so in the multilingual section and shows the rest."""
    MetricScore.objects.filter(release=scored, metric="chrF++", direction__code="en-de").update(score=50.0)
    scores_summarize(release=scored)
    client.force_login(admin_user)
    response = client.get(f"/scores/{scored.pk}/metaeval/", {"metric": "chrF++"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Not computed: en-de: LGN needs at least two distinct scores" in page and "<td>en-zh</td>" in page
    out = io.StringIO()
    call_command("metaeval", "demo@1.0.0", "--metrics", "chrF++", stdout=out)
    assert "multilingual systems: not computed (en-de: LGN needs at least two distinct scores)" in out.getvalue()
    assert "en-zh: triplet τ" in out.getvalue()
