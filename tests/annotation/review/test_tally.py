"""The review progress counters (ReviewTally) against the rows: every writer, in random order, then every
counter and every progress figure compared with the exact count of the rows (the old queries, kept as
``selectors.exact_*``). PostgreSQL only: the counters are kept by its triggers."""

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from annotation.common.selectors import language_codes
from annotation.models import ReviewDecision, ReviewLock, ReviewRound, ReviewTally
from annotation.review import selectors, services, tally
from core import bulk
from core.domain.errors import AppError
from core.services import user_create
from injection.models import Candidate
from tests.annotation.review.factories import SAMPLES, make_candidate, make_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _postgres():
    if connection.vendor != "postgresql":
        pytest.skip("the review progress counters are PostgreSQL triggers")


def counted_from_rows(project) -> Counter:
    """The tally as it must be, counted candidate by candidate in Python."""
    want: Counter = Counter()
    first = ReviewRound.objects.filter(project=project, number=1).first()
    for c in Candidate.objects.filter(segment__project=project).select_related("segment__direction__target"):
        lang = c.segment.direction.target.code
        n1 = ReviewDecision.objects.filter(candidate=c, round=first, source="annotator").count() if first else 0
        want[(lang, 1, c.status, n1)] += 1
        for rnd in c.sampled_in_rounds.filter(number__gt=1):
            n = ReviewDecision.objects.filter(candidate=c, round=rnd, source="annotator").count()
            want[(lang, rnd.number, c.status, n)] += 1
    return +want


def counted_by_tally(project) -> Counter:
    return +Counter({(u.language, u.round_number, u.status, u.reviews): u.candidates for u in tally.units(project)})


def statuses_from_rows(project) -> dict:
    out: dict = {}
    for c in Candidate.objects.filter(segment__project=project).select_related("segment"):
        by_status = out.setdefault(c.segment.direction_id, {})
        by_status[c.status] = by_status.get(c.status, 0) + 1
    return out


def assert_exact(project, users):
    assert counted_by_tally(project) == counted_from_rows(project)
    assert selectors.candidate_statuses(project) == statuses_from_rows(project)  # the home and project pages
    assert selectors.language_progress(project) == selectors.exact_language_progress(project)
    assert selectors.round_summaries(project) == selectors.exact_round_summaries(project)
    for user in users:
        codes = language_codes(user)
        for rnd in selectors.open_rounds(project):
            for langs in [codes, *([c] for c in codes)]:
                assert selectors.progress(user, project, rnd, langs) == selectors.exact_progress(
                    user, project, rnd, langs
                ), (user, rnd.number, langs)


class World:
    """The writers of review progress, each one step of a random walk."""

    def __init__(self, project, languages, rng, users, admin):
        self.project, self.languages, self.rng, self.users, self.admin = project, languages, rng, users, admin
        self.serial = 0

    def _candidates(self):
        return list(Candidate.objects.filter(segment__project=self.project).order_by("pk"))

    def _sample_row(self):
        code = self.rng.choice(["en-de", "en-de", "en-zh"])
        self.serial += 1
        return code, self.rng.choice(SAMPLES[code]), f"{code}-w{self.serial}"

    def import_one(self):
        code, (s, r, t), ext = self._sample_row()
        make_candidate(self.project, self.languages[code], s, r, t, external_id=ext)

    def import_copy(self):
        # the COPY path of bulk imports (core.bulk): a statement the triggers see as one
        model = self.rng.choice(self._candidates())
        fields = {
            f.attname: getattr(model, f.attname)
            for f in Candidate._meta.concrete_fields
            if f.attname not in ("id", "created_at")
        }
        new = []
        for _ in range(self.rng.randint(1, 4)):
            self.serial += 1
            seg = model.segment
            seg.pk, seg.external_id = None, f"copy-{self.serial}"
            seg.save()
            new.append(
                Candidate(
                    **(fields | {"segment_id": seg.pk, "status": "pending", "status_reason": ""}),
                    created_at=timezone.now(),
                )
            )
        bulk.insert_objects(Candidate, new)

    def take(self):
        services.candidate_take_next(user=self.rng.choice(self.users), project=self.project)

    def take_and_decide(self):
        user = self.rng.choice(self.users)
        got = services.candidate_take_next(user=user, project=self.project)
        if got:
            self._decide(user, got.candidate, got.round)

    def decide_any(self):
        user = self.rng.choice(self.users)
        rnds = selectors.open_rounds(self.project)
        self._decide(user, self.rng.choice(self._candidates()), self.rng.choice(rnds) if rnds else None)

    def _decide(self, user, candidate, rnd):
        self.serial += 1
        try:
            services.decision_submit(
                user=user,
                candidate_id=candidate.pk,
                decision=self.rng.choice(["accept", "reject"]),
                idempotency_key=f"k{self.serial}",
                round_id=rnd.pk if rnd else None,
            )
        except AppError:
            pass

    def skip(self):
        try:
            services.candidate_skip(
                user=self.rng.choice(self.users), candidate_id=self.rng.choice(self._candidates()).pk, reason="unsure"
            )
        except AppError:
            pass

    def expire_locks(self):
        locks = list(ReviewLock.objects.values_list("pk", flat=True))
        if locks:
            ReviewLock.objects.filter(pk__in=self.rng.sample(locks, self.rng.randint(1, len(locks)))).update(
                expires_at=timezone.now() - timedelta(seconds=1)
            )
        if self.rng.random() < 0.5:
            services.lock_clear_expired()

    def adjudicate(self):
        services.candidate_adjudicate(
            admin=self.admin,
            candidate_id=self.rng.choice(self._candidates()).pk,
            decision=self.rng.choice(["accept", "reject"]),
        )

    def exclude(self):
        # as the benchmark build excludes drifted candidates: a bulk update of status
        chosen = self.rng.sample(self._candidates(), 2)
        for c in chosen:
            c.status, c.status_reason = "excluded", "excluded: test"
        Candidate.objects.bulk_update(chosen, ["status", "status_reason"])

    def open_round(self):
        try:
            services.round_open(
                admin=self.admin, project=self.project, sample_size=self.rng.randint(1, 4), seed=self.rng.randint(0, 99)
            )
        except AppError:
            pass

    def close_round(self):
        later = list(ReviewRound.objects.filter(project=self.project, is_open=True, number__gt=1))
        if later:
            services.round_close(admin=self.admin, rnd=self.rng.choice(later))

    def delete_candidate(self):
        cands = self._candidates()
        if len(cands) > 4:
            self.rng.choice(cands).delete()

    def delete_decision(self):
        ids = list(ReviewDecision.objects.filter(source="annotator").values_list("pk", flat=True))
        if ids:
            ReviewDecision.objects.filter(pk=self.rng.choice(ids)).delete()

    def pool_rule(self):
        services.pool_rule_set(
            admin=self.admin, project=self.project, rule=self.rng.choice(["unanimous", "adjudicated"])
        )

    def fold(self):
        tally.fold()

    STEPS = (
        "import_one",
        "import_copy",
        "take",
        "take_and_decide",
        "take_and_decide",
        "take_and_decide",
        "decide_any",
        "skip",
        "expire_locks",
        "adjudicate",
        "exclude",
        "open_round",
        "close_round",
        "delete_candidate",
        "delete_decision",
        "pool_rule",
        "fold",
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_counters_follow_every_writer_in_random_order(project, languages, annotator_de, annotator_zh, admin_user, seed):
    rng = random.Random(seed)
    users = [
        annotator_de,
        annotator_zh,
        user_create(username="ben_de", password="ben-pass-123", languages=["de"]),
        user_create(username="dora_dezh", password="dora-pass-123", languages=["de", "zh"]),
    ]
    make_candidates(project, languages, "en-de")
    make_candidates(project, languages, "en-zh")
    world = World(project, languages, rng, users, admin_user)
    assert_exact(project, users + [admin_user])
    done = Counter()
    for _ in range(50):
        step = rng.choice(World.STEPS)
        getattr(world, step)()
        done[step] += 1
        assert_exact(project, users), f"after {step}"
    assert_exact(project, users + [admin_user])
    assert done["take_and_decide"] and ReviewDecision.objects.filter(source="annotator").exists()


def test_remaining_counts_others_live_locks_and_own_history(project, languages, annotator_de, admin_user):
    """N = 2: a candidate another reviewer holds stays in my queue until a second one holds it too."""
    ben, cara = (user_create(username=n, password="pass-pass-123", languages=["de"]) for n in ("ben_de", "cara_de"))
    make_candidates(project, languages, "en-de", count=3)
    rnd = selectors.first_round(project)
    assert selectors.progress(annotator_de, project, rnd, ["de"])["remaining"] == 3
    first = services.candidate_take_next(user=ben, project=project).candidate
    assert services.candidate_take_next(user=cara, project=project).candidate == first
    # both slots of `first` are held: it is not in my queue, though no decision exists
    assert selectors.progress(annotator_de, project, rnd, ["de"]) == {"done": 0, "remaining": 2, "round": 1}
    ReviewLock.objects.filter(reviewer=cara).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert selectors.progress(annotator_de, project, rnd, ["de"])["remaining"] == 3
    services.decision_submit(user=annotator_de, candidate_id=first.pk, decision="accept", idempotency_key="a1")
    assert selectors.progress(annotator_de, project, rnd, ["de"]) == {"done": 1, "remaining": 2, "round": 1}
    # the zh annotator sees nothing of the de queue
    assert selectors.progress(annotator_de, project, rnd, ["zh"]) == {"done": 0, "remaining": 0, "round": 1}


def test_recount_command_rebuilds_and_checks(project, languages, annotator_de, capsys):
    make_candidates(project, languages, "en-de")
    got = services.candidate_take_next(user=annotator_de, project=project)
    services.decision_submit(user=annotator_de, candidate_id=got.candidate.pk, decision="accept", idempotency_key="k1")
    tally.fold()
    want = counted_from_rows(project)
    call_command("recount_review_progress", "--check")
    assert "demo: counters exact" in capsys.readouterr().out
    ReviewTally.objects.filter(project=project, status="pending", reviews=0).update(candidates=99)
    with pytest.raises(CommandError, match="1 project"):
        call_command("recount_review_progress", "--check")
    assert counted_by_tally(project) != want  # --check changed nothing
    call_command("recount_review_progress", "demo")
    assert counted_by_tally(project) == want
    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("recount_review_progress", "nope")


def test_project_deletion_leaves_no_counters(project, languages):
    make_candidates(project, languages, "en-de")
    tally.fold()
    project.delete()
    tally.fold()
    assert not ReviewTally.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM annotation_reviewtallychange")
        assert cursor.fetchone()[0] == 0


def test_pages_show_the_counted_figures_in_own_languages_only(
    client, project, languages, annotator_de, annotator_zh, admin_user
):
    make_candidates(project, languages, "en-de")
    make_candidates(project, languages, "en-zh")
    got = services.candidate_take_next(user=annotator_de, project=project)
    services.decision_submit(user=annotator_de, candidate_id=got.candidate.pk, decision="reject", idempotency_key="k1")
    rnd = selectors.first_round(project)
    want = selectors.exact_progress(annotator_de, project, rnd, ["de"])
    client.force_login(annotator_de)
    page = client.get("/review/").content.decode()
    assert f"round 1: {want['done']} done, {want['remaining']} remaining" in page
    assert "German" in page and "Chinese" not in page  # the zh queue is not this annotator's
    zh = selectors.exact_progress(annotator_zh, project, rnd, ["zh"])
    client.force_login(annotator_zh)
    assert f"round 1: 0 done, {zh['remaining']} remaining" in client.get("/review/").content.decode()
    client.force_login(admin_user)
    assert client.get(f"/review/{project.name}/manage/").context["languages"] == selectors.exact_language_progress(
        project
    )
