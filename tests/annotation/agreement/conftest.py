"""A project with live review decisions, rounds, adjudications, gold items and Likert ratings, made
through the ORM."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from annotation.models import LikertRating, RatingItem, ReviewDecision, ReviewRound
from core.domain.units import split_units
from core.models import GoldSegment
from core.services import user_create
from injection.models import Candidate, InjectionRun

A, R = "accept", "reject"

# (language, error_type) → per candidate: (round-1 decisions of reviewer 1, reviewer 2)
DE_R1 = [(A, A), (A, R), (R, R), (A, A), (A, A), (R, A), (A, A), (R, R), (A, A), (A, R), (A, A), (A, A)]
ZH_R1 = [(A, A), (A, A), (A, A), (R, R), (A, A), (A, R), (A, A), (A, A)]


@dataclass
class World:
    project: object
    de: list = field(default_factory=list)  # candidates
    zh: list = field(default_factory=list)
    users: dict = field(default_factory=dict)
    rounds: dict = field(default_factory=dict)
    items: list = field(default_factory=list)


@pytest.fixture(autouse=True)
def few_resamples(settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 50
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast fixtures


@pytest.fixture
def world(db, project, admin_user, annotator_de, annotator_zh, languages):
    users = {
        "admin": admin_user,
        "anna_de": annotator_de,
        "ben_de": user_create(username="ben_de", password="ben-pass-123", languages=["de"]),
        "li_zh": annotator_zh,
        "wang_zh": user_create(username="wang_zh", password="wang-pass-123", languages=["zh"]),
    }
    w = World(project=project, users=users)
    run = InjectionRun.objects.create(project=project, name="rule-1", backend="rule")
    r1 = ReviewRound.objects.create(project=project, number=1)
    r2 = ReviewRound.objects.create(project=project, number=2, sample_size=4)
    w.rounds = {1: r1, 2: r2}
    types = ["Addition", "Omission", "Mistranslation", "Untranslated"]
    for lang, pattern, (u1, u2), bucket in [
        ("de", DE_R1, ("anna_de", "ben_de"), w.de),
        ("zh", ZH_R1, ("li_zh", "wang_zh"), w.zh),
    ]:
        direction = languages[f"en-{lang}"]
        for i, (d1, d2) in enumerate(pattern):
            ref = "Das ist ein kleiner Test Satz hier" if lang == "de" else "这是一个小测试句子"
            seg = GoldSegment.objects.create(
                project=project,
                direction=direction,
                external_id=f"{lang}{i}",
                source="This is a small test sentence here",
                reference=ref,
            )
            added = "extra" if lang == "de" else "多"
            end = len(split_units(ref, lang))
            cand = Candidate.objects.create(  # an insertion at the end of the reference
                run=run,
                segment=seg,
                error_type=types[i % 4],
                position="end",
                text=ref + (" " if lang == "de" else "") + added,
                span_start=end,
                span_end=end,
                edit_text=added,
                status=Candidate.Status.ACCEPTED if d1 == d2 == A else Candidate.Status.REJECTED,
            )
            bucket.append(cand)
            ReviewDecision.objects.create(
                candidate=cand, reviewer=users[u1], round=r1, decision=d1, time_spent_ms=4000 + 100 * i
            )
            ReviewDecision.objects.create(
                candidate=cand, reviewer=users[u2], round=r1, decision=d2, time_spent_ms=9000 + 100 * i
            )
    # German disagreements adjudicated by the admin: accept on 1, reject on 5 and 9
    for i, decision in [(1, A), (5, R), (9, R)]:
        ReviewDecision.objects.create(
            candidate=w.de[i],
            reviewer=users["admin"],
            round=r1,
            decision=decision,
            source="adjudication",
            is_final=True,
        )
    # An imported final decision (no reviewer) on a German candidate: must not count as a rater
    ReviewDecision.objects.create(
        candidate=w.de[2], reviewer=None, round=None, decision=A, source="imported", is_final=True
    )
    # Round 2 on four German candidates: outcomes differ from round 1 on w.de[3] only
    for i, (d1, d2) in [(0, (A, A)), (2, (R, R)), (3, (A, R)), (4, (A, A))]:
        ReviewDecision.objects.create(candidate=w.de[i], reviewer=users["anna_de"], round=r2, decision=d1)
        ReviewDecision.objects.create(candidate=w.de[i], reviewer=users["ben_de"], round=r2, decision=d2)
    # Likert: three German items and one Chinese, rated by two raters (one item by three)
    scores = {
        ("de", 0): [(5, 4, 5, 4), (4, 4, 5, 5)],
        ("de", 1): [(2, 3, 3, 1), (4, 3, 2, 5), (3, 3, 3, 3)],
        ("de", 2): [(3, 3, 3, 3), (3, 3, 3, 3)],
        ("zh", 0): [(1, 2, 3, 4), (5, 2, 3, 4)],
    }
    for (lang, n), rows in scores.items():
        item = RatingItem.objects.create(
            project=project,
            direction=languages[f"en-{lang}"],
            kind="system_output",
            external_id=f"{lang}-item-{n}",
            source="src",
            reference="ref",
            text="out",
        )
        raters = ["anna_de", "ben_de", "admin"] if lang == "de" else ["li_zh", "wang_zh"]
        for rater, s in zip(raters, rows):
            LikertRating.objects.create(
                item=item,
                rater=users[rater],
                informativeness=s[0],
                clarity=s[1],
                plausibility=s[2],
                faithfulness=s[3],
                time_spent_ms=20000,
            )
        w.items.append(item)
    return w


@pytest.fixture(autouse=True)
def empty_report_cache():
    """Each test starts without cached reports, queued refreshes or refresh states: SQLite reuses primary keys
    after a rollback, so another test's entries for 'the same' project would otherwise be found."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    backend = caches["default"]
    if isinstance(
        backend, LocMemCache
    ):  # only the in-process cache: clear() on a shared Redis wipes other people's keys
        backend.clear()


@dataclass
class Broker:
    """A real Redis broker with a queue of this test's own; ``messages()`` reads what was queued on it."""

    url: str
    queue: str

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def messages(self) -> list[dict]:
        import base64
        import json

        out = []
        for raw in reversed(self.client().lrange(self.queue, 0, -1)):  # kombu LPUSHes: oldest last
            message = json.loads(raw)
            args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
            out.append(
                {
                    "task": message["headers"]["task"],
                    "args": args,
                    "kwargs": kwargs,
                    "eta": message["headers"].get("eta"),
                }
            )
        return out

    def run_next(self):
        """Take the oldest message off the queue and run it here, as a worker would."""
        import base64
        import json

        from xqmeval.celery import app

        message = json.loads(self.client().rpop(self.queue))
        args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        return app.tasks[message["headers"]["task"]].apply(args=args, kwargs=kwargs)


@pytest.fixture
def broker(redis_url, settings):
    """Celery with a Redis broker instead of running tasks in-process, as in production; the agreement
    refresh goes to a queue of this test's own (``AGREEMENT_QUEUE``) that no worker consumes."""
    import uuid

    from xqmeval.celery import app

    def forget_connections() -> None:
        # The app caches its connection and producer pools from the configuration it first saw.
        app._pool = None
        app.amqp._producer_pool = None

    queue = f"agreement-test-{uuid.uuid4().hex}"
    settings.AGREEMENT_QUEUE = queue
    saved = {k: app.conf.get(k) for k in ("broker_url", "task_always_eager")}
    forget_connections()
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    b = Broker(redis_url, queue)
    try:
        yield b
    finally:
        forget_connections()
        app.conf.update(saved)
        client = b.client()
        client.delete(queue, *client.keys(f"*{queue}*"))
