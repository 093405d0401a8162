"""The WMT24 task set on the shared XQ-MEval data, end to end (imported, built, released, scored with chrF++, BLEU and
TER by the scoring package, ingested: ``test_metaeval_shared``'s release), on the diagnostics page beside the
known-answer figures. The seg-level values equal the leaderboard's acc23-tc averaged by item, which groups a
direction's triplets by gold segment on its own (``selectors.release_leaderboard``, checked against
mt-metrics-eval by the stats tests)."""

import pytest
from django.urls import reverse

from exports.metaeval import tasksets
from exports.metaeval.selectors import release_leaderboard
from exports.metaeval.taskset_selectors import release_task_set
from tests.exports.metaeval.test_metaeval_shared import CODES, scored_release  # noqa: F401

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db, pytest.mark.slow]


def test_the_wmt24_table_of_a_real_release(scored_release, client, admin_user):  # noqa: F811
    metrics = ["chrF++", "BLEU", "TER"]
    board = release_task_set(scored_release, metrics, "wmt24", k=1000)
    print(tasksets.as_text(board))  # the table docs/metaeval.md quotes (pytest -s)
    assert [t["attributes"]["lang"] for t in board["tasks"]] == [c for c in CODES for _ in (0, 1)]
    leaderboard = release_leaderboard(scored_release, metrics, statistic="acc23-tc", average_by="item", resamples=1)
    per_direction = {g["direction"]: {r["metric"]: r["value"] for r in g["ranking"]} for g in leaderboard["directions"]}
    for task in board["tasks"]:
        if task["attributes"]["level"] == "seg":
            for row in task["ranking"]:
                assert row["value"] == pytest.approx(
                    per_direction[task["attributes"]["lang"]][row["metric"]], abs=1e-12
                )
    assert {row["metric"] for row in board["overall"]} == set(metrics)
    client.force_login(admin_user)
    page = client.get(reverse("scores:diagnostics", args=[scored_release.pk]), {"metrics": "chrF++,BLEU"})
    text = page.content.decode()
    assert page.status_code == 200 and "<h2>WMT24 task set</h2>" in text and "Additivity" in text
