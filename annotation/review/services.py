"""Write operations of review: assignment with locks, decisions, skips, adjudication, rounds. Every change is
audited (``annotation.common.audit``). Rating's writes are ``annotation.rating.services``, annotator accounts
``annotation.people.services``; review and rating write a submission the same way (``annotation.common.submissions``:
idempotency keys, the owner check, the locks below).

Concurrency. "Never more than N reviews of a candidate" is enforced where the slot is taken: inside a
transaction holding the candidate's row lock (``SELECT … FOR UPDATE``; when looking for work, ``SKIP
LOCKED`` so concurrent reviewers pass each other instead of queueing). SQLite has no row locks: there
the transaction first takes SQLite's database write lock, which serialises the same critical sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from annotation.common import submissions
from annotation.common.audit import audit_record
from annotation.common.selectors import language_codes
from annotation.models import (
    ReviewDecision,
    ReviewLock,
    ReviewRound,
    ReviewSkip,
    UsedIdempotencyKey,
)
from annotation.review import domain as rules
from annotation.review import selectors
from annotation.signals import annotations_written
from core import access
from core.domain.errors import Conflict, Forbidden, Invalid, NotFound
from core.domain.params import MAX_ID, MAX_POSITIVE_INT, id_param
from core.models import Project
from core.services import project_pool_rule_set
from injection.models import Candidate

ANNOTATOR = ReviewDecision.Source.ANNOTATOR
MAX_COMMENT = 5000  # characters of a decision, skip or adjudication comment


def _lock_seconds() -> int:
    return int(getattr(settings, "REVIEW_LOCK_SECONDS", 900))


def candidate_get_visible(*, user, candidate_id, lock: bool = False) -> Candidate:
    qs = selectors.visible_candidates(user).select_related(
        "segment__direction__target", "segment__direction__source", "segment__project"
    )
    if lock:
        qs = submissions.for_update(qs)
    try:
        return qs.get(pk=candidate_id)
    except (Candidate.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"candidate {candidate_id} not found") from None


def _clean_comment(comment) -> str:
    """A comment of at most MAX_COMMENT characters (the API's serializers check the same limit)."""
    comment = comment or ""
    if len(comment) > MAX_COMMENT:
        raise Invalid(f"comment must be at most {MAX_COMMENT} characters (got {len(comment)})", "comment")
    return comment


# ---- assignment -------------------------------------------------------------------------------------


@dataclass
class Assignment:
    candidate: Candidate
    round: ReviewRound
    expires_at: datetime
    resumed: bool


def candidate_take_next(*, user, project: Project, language: str | None = None) -> Assignment | None:
    """The reviewer's current item (resume) or a new one, held by a lock with expiry; None when done."""
    codes = language_codes(user, language, project)
    if not codes:
        return None
    for attempt in range(DEADLOCK_RETRIES):
        try:
            return _next_candidate(user, project, codes)
        except OperationalError as exc:
            # PostgreSQL aborted us to break a lock cycle; the other reviewer went on, so try again.
            if not _is_deadlock(exc) or attempt == DEADLOCK_RETRIES - 1:
                raise
    return None


def candidate_get_held(*, user, project: Project, language: str | None = None) -> Assignment | None:
    """The item this reviewer already holds (an unexpired lock, undecided), read only: what ``GET …/next/``
    resumes. A GET takes no lock (prefetchers follow links); ``candidate_take_next`` does, on POST (#36.10)."""
    codes = language_codes(user, language)
    if not codes:
        return None
    mine = _held_locks(user, project, codes, timezone.now()).select_related("candidate", "round").first()
    return Assignment(mine.candidate, mine.round, mine.expires_at, resumed=True) if mine is not None else None


def _held_locks(user, project: Project, codes, now):
    """The reviewer's unexpired locks on items of open rounds in ``codes`` she has not decided, oldest first:
    what she resumes."""
    decided = ReviewDecision.objects.filter(candidate=OuterRef("candidate"), reviewer=user, round=OuterRef("round"))
    return (
        ReviewLock.objects.filter(
            reviewer=user,
            round__project=project,
            round__is_open=True,
            expires_at__gt=now,
            candidate__segment__direction__target__code__in=codes,
        )
        .filter(~Exists(decided))
        .order_by("created_at")
    )


def work_exists(*, user, project: Project, language: str | None = None) -> bool:
    """Whether ``candidate_take_next`` would find something for this reviewer now (read only)."""
    codes = language_codes(user, language)
    now = timezone.now()
    return bool(codes) and any(
        selectors.queue(user, project, rnd, codes, now=now).exists() for rnd in selectors.open_rounds(project)
    )


DEADLOCK_RETRIES = 3


def _is_deadlock(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "40P01" or "deadlock detected" in str(exc)


def _next_candidate(user, project: Project, codes) -> Assignment | None:
    now = timezone.now()
    expires = now + timedelta(seconds=_lock_seconds())
    with transaction.atomic():
        submissions.serialize_writers()
        mine = (
            _held_locks(user, project, codes, now)  # the resume check in the same query
            .select_related("candidate__segment__direction__target", "candidate__segment__direction__source", "round")
            .first()
        )
        if mine is not None:
            ReviewLock.objects.filter(pk=mine.pk).update(expires_at=expires)
            return Assignment(mine.candidate, mine.round, expires, resumed=True)
        for rnd in selectors.open_rounds(project):
            base = selectors.queue(user, project, rnd, codes, now=now).order_by("segment_id", "id")
            base = base.select_related("segment__direction__target", "segment__direction__source")
            # SKIP LOCKED lets concurrent reviewers pass each other; when everything left is locked for a
            # moment by someone else's short transaction, wait for it rather than report an empty queue.
            for skip_locked in (True, False):
                # Each pass in a savepoint: rows it locked but could not use (they filled up between the
                # query's snapshot and our lock) are released when it rolls back, so a blocking second pass
                # never waits while holding rows another reviewer's second pass waits for (a deadlock).
                with transaction.atomic():
                    # Try a few: a row we lock may have filled up between the query's snapshot and our lock.
                    for candidate in submissions.for_update(base, skip_locked=skip_locked)[:5]:
                        if _take_slot(candidate.pk, user, rnd, project.reviewers_per_candidate, now, expires):
                            return Assignment(candidate, rnd, expires, resumed=False)
                    transaction.set_rollback(True)
                if connection.vendor == "sqlite":
                    break
    return None


def _take_slot(candidate_id: int, user, rnd: ReviewRound, required: int, now, expires) -> bool:
    """Lock the candidate for this reviewer if fewer than ``required`` reviews are taken; False if full.

    Called while holding the candidate's row lock. The recount must be a statement of its own: the queue
    query counted in a snapshot taken before the row lock was granted, and a reviewer who committed a lock
    or decision in between is only visible to a later statement (every writer of locks and decisions holds
    the same row lock, so none can commit between this statement's snapshot and its insert). Count and
    insert in one statement, as the queue counts ``taken`` (``selectors.others_taken``); an expired lock of
    ours is renewed by the upsert."""
    lock, decision = ReviewLock._meta.db_table, ReviewDecision._meta.db_table
    adapt = connection.ops.adapt_datetimefield_value  # SQLite stores datetimes as text: compare like with like
    sql = f"""
        INSERT INTO {lock} (candidate_id, reviewer_id, round_id, expires_at, created_at)
        SELECT %s, %s, %s, %s, %s
        WHERE (SELECT COUNT(*) FROM {decision} d WHERE d.candidate_id = %s AND d.round_id = %s AND d.source = %s
                 AND (d.reviewer_id IS NULL OR d.reviewer_id <> %s))
            + (SELECT COUNT(*) FROM {lock} l WHERE l.candidate_id = %s AND l.round_id = %s AND l.expires_at > %s
                 AND l.reviewer_id <> %s) < %s
        ON CONFLICT (candidate_id, reviewer_id, round_id) DO UPDATE SET expires_at = excluded.expires_at
    """
    params = [
        candidate_id,
        user.pk,
        rnd.pk,
        adapt(expires),
        adapt(timezone.now()),
        candidate_id,
        rnd.pk,
        ANNOTATOR,
        user.pk,
        candidate_id,
        rnd.pk,
        adapt(now),
        user.pk,
        required,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


def lock_clear_expired(*, now=None) -> int:
    """Housekeeping (periodic task): expired locks no longer count, deleting them keeps the table small."""
    deleted, _ = ReviewLock.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return deleted


def round_resolve(*, user, candidate: Candidate, round_id=None, number=None) -> ReviewRound:
    """The round named by its id (the API's ``round``) or by its number (the pages' ``?round=``, the number
    they show); with neither, the round the user holds the candidate in, else round 1."""
    project = candidate.segment.project
    if round_id not in (None, "") or number not in (None, ""):
        named = {"pk": id_param(round_id) or 0} if number in (None, "") else {"number": id_param(number) or 0}
        try:
            return ReviewRound.objects.get(project=project, **named)
        except ReviewRound.DoesNotExist:
            given = round_id if number in (None, "") else number
            raise Invalid(f"round {given} is not a round of project {project.name}", "round") from None
    lock = (
        ReviewLock.objects.filter(candidate=candidate, reviewer=user, round__is_open=True)
        .select_related("round")
        .order_by("-round__number")
        .first()
    )
    if lock:
        return lock.round
    return selectors.first_round(project)


# ---- decisions --------------------------------------------------------------------------------------


def _decision_state(d: ReviewDecision) -> dict:
    return {"decision": d.decision, "reason": d.reason, "comment": d.comment}


def decision_submit(
    *,
    user,
    candidate_id,
    decision: str,
    idempotency_key: str,
    reason: str = "",
    comment: str = "",
    time_spent_ms=None,
    round_id=None,
    client_user=None,
) -> tuple[ReviewDecision, bool]:
    """Store (or change) this reviewer's decision. Returns (decision, created). A submission with a key
    used before answers with what that key stored then and changes nothing, so clients may retry freely and
    a late duplicate never undoes a newer change. Changing a decision needs the round to be open, as a new
    one does; a decision on a candidate not taken from the queue is allowed while it has a free slot."""
    submissions.check_owner(user, client_user)
    key = submissions.clean_key(idempotency_key)
    reason = _clean_reason(decision, reason)
    time_spent_ms = submissions.clean_time(time_spent_ms)
    comment = _clean_comment(comment)
    request = {"candidate": id_param(candidate_id), "decision": decision, "reason": reason, "comment": comment}
    fingerprint = submissions.request_hash(
        request=request | {"round": None if round_id in (None, "") else id_param(round_id)}
    )
    try:
        with transaction.atomic():
            submissions.serialize_writers()
            replay = _replay(user, key, fingerprint)
            if replay:
                return replay, False
            candidate = candidate_get_visible(user=user, candidate_id=candidate_id, lock=True)
            rnd = round_resolve(user=user, candidate=candidate, round_id=round_id)
            project = candidate.segment.project
            state = _slot_state(user, candidate, rnd)
            own = ReviewDecision.objects.get(pk=state["own"]) if state["own"] else None
            values = {"decision": decision, "reason": reason, "comment": comment or "", "idempotency_key": key}
            if own is not None:
                round_check_revisable(rnd=rnd)
                result, created = _decision_change(own, user=user, values=values, time_spent_ms=time_spent_ms), False
            else:
                _check_open_slot(candidate, rnd, project, state)
                result = _decision_create(candidate, user=user, rnd=rnd, values=values, time_spent_ms=time_spent_ms)
                if state["skip"]:  # deciding an item set aside replaces the skip
                    _drop_skip(user, candidate, rnd, replaced_by="decision")
                created = True
            submissions.remember_key(UsedIdempotencyKey.Kind.DECISION, key, user, result, fingerprint)
            ReviewLock.objects.filter(candidate=candidate, reviewer=user, round=rnd).delete()
            if rnd.number == 1:
                _refresh_status(candidate, actor=user, first_round=rnd)
            annotations_written.send(sender=__name__, project_id=project.pk)
            return result, created
    except IntegrityError:
        # A concurrent twin of this very submission won the race: answer with what it stored.
        replay = _replay(user, key, fingerprint)
        if replay:
            return replay, False
        raise Conflict("this candidate was decided concurrently; reload") from None


def _clean_reason(decision: str, reason: str) -> str:
    """The reason of a valid decision: only a rejection has one, from the rejection reason categories."""
    if decision not in ReviewDecision.Decision.values:
        raise Invalid("decision must be 'accept' or 'reject'", "decision")
    reason = (reason or "").strip()
    if reason and (decision != "reject" or reason not in rules.reason_codes(rules.REJECT_REASONS)):
        raise Invalid(f"reason {reason!r} is not a rejection reason category", "reason")
    return reason


def _decision_change(own: ReviewDecision, *, user, values: dict, time_spent_ms) -> ReviewDecision:
    """A reviewer's new answer on their decision, its time added to the time spent, audited."""
    old = _decision_state(own)
    own.decision, own.reason, own.comment = values["decision"], values["reason"], values["comment"]
    own.idempotency_key = values["idempotency_key"]
    if time_spent_ms is not None:
        own.time_spent_ms = (own.time_spent_ms or 0) + time_spent_ms
    own.save()
    audit_record(actor=user, action="decision.change", obj=own, old=old, new=_decision_state(own))
    return own


def _decision_create(candidate, *, user, rnd: ReviewRound, values: dict, time_spent_ms) -> ReviewDecision:
    """A reviewer's first decision on a candidate in a round, audited."""
    result = ReviewDecision.objects.create(
        candidate=candidate, reviewer=user, round=rnd, time_spent_ms=time_spent_ms, source=ANNOTATOR, **values
    )
    audit_record(
        actor=user, action="decision.create", obj=result, old=None, new=_decision_state(result) | {"round": rnd.number}
    )
    return result


def round_check_revisable(*, rnd: ReviewRound, what: str = "decisions in it") -> None:
    """The one rule for work already done (changing or withdrawing a decision, a skip): its round is open.
    /review/mine/'s revise links and the review screen's Previous offer exactly the work it allows."""
    if not rnd.is_open:
        raise Conflict(f"round {rnd.number} is closed; {what} can no longer change")


def _drop_skip(user, candidate: Candidate, rnd: ReviewRound, **new) -> bool:
    skip = ReviewSkip.objects.filter(candidate=candidate, reviewer=user, round=rnd).first()
    if skip is None:
        return False
    audit_record(
        actor=user,
        action="review.unskip",
        obj=skip,
        old={"reason": skip.reason, "comment": skip.comment, "round": rnd.number},
        new=new,
    )
    skip.delete()
    return True


@dataclass
class Withdrawal:
    candidate: Candidate
    round: ReviewRound
    withdrawn: str | None  # "decision", "skip", or None: nothing of this reviewer's was stored
    held: bool  # the item is held for the reviewer again, as before they decided


def decision_withdraw(*, user, candidate_id, round_id=None, client_user=None) -> Withdrawal:
    """Undo this reviewer's decision or skip of a candidate in a round, under the rule that lets them change
    it (``round_check_revisable``): the candidate is theirs to decide again, held for them if it still needs a
    review in that round. Nothing to withdraw is no error: an undo retried by the review screen's outbox,
    or sent for a decision that never reached the server, answers the same."""
    submissions.check_owner(user, client_user)
    with transaction.atomic():
        submissions.serialize_writers()
        candidate = candidate_get_visible(user=user, candidate_id=candidate_id, lock=True)
        rnd = round_resolve(user=user, candidate=candidate, round_id=round_id)
        round_check_revisable(rnd=rnd, what="decisions and skips in it")
        project = candidate.segment.project
        withdrawn = None
        own = ReviewDecision.objects.filter(candidate=candidate, reviewer=user, round=rnd, source=ANNOTATOR).first()
        if own is not None:
            audit_record(
                actor=user,
                action="decision.withdraw",
                obj=own,
                old=_decision_state(own) | {"round": rnd.number},
                new=None,
            )
            own.delete()
            withdrawn = "decision"
        if _drop_skip(user, candidate, rnd, withdrawn=True):
            withdrawn = withdrawn or "skip"
        held = False
        if withdrawn is not None:
            if rnd.number == 1:
                _refresh_status(candidate, actor=user, first_round=rnd)
            if _slot_state(user, candidate, rnd)["in_scope"]:
                now = timezone.now()
                expires = now + timedelta(seconds=_lock_seconds())
                held = _take_slot(candidate.pk, user, rnd, project.reviewers_per_candidate, now, expires)
            annotations_written.send(sender=__name__, project_id=project.pk)
    return Withdrawal(candidate, rnd, withdrawn, held)


def _replay(user, key: str, fingerprint: str) -> ReviewDecision | None:
    return submissions.replay_key(UsedIdempotencyKey.Kind.DECISION, ReviewDecision, user, key, fingerprint)


def _slot_state(user, candidate: Candidate, rnd: ReviewRound) -> dict:
    """One query, read after the candidate's row lock (so in a snapshot that sees every committed review of
    it): the reviewer's own decision in this round, whether the round still covers the candidate, and how
    many reviews others have taken; and their skip of it in this round, if any."""
    project = candidate.segment.project
    own = ReviewDecision.objects.filter(candidate=candidate, reviewer=user, round=rnd).order_by().values("pk")[:1]
    skip = ReviewSkip.objects.filter(candidate=candidate, reviewer=user, round=rnd).order_by().values("pk")[:1]
    return (
        Candidate.objects.filter(pk=candidate.pk)
        .annotate(
            own=Subquery(own),
            skip=Subquery(skip),
            in_scope=Exists(selectors.round_scope(project, rnd).filter(pk=OuterRef("pk"))),
            taken=selectors.others_taken(rnd, user, timezone.now()),
        )
        .values("own", "skip", "in_scope", "taken")
        .get()
    )


def _check_open_slot(candidate: Candidate, rnd: ReviewRound, project: Project, state: dict) -> None:
    if not rnd.is_open:
        raise Conflict(f"round {rnd.number} is closed")
    if candidate.status == Candidate.Status.EXCLUDED:
        raise Conflict("this candidate was excluded and is no longer reviewed")
    if not state["in_scope"]:
        raise Conflict(f"this candidate is not reviewed in round {rnd.number} (already decided)")
    if state["taken"] >= project.reviewers_per_candidate:
        raise Conflict(
            f"this candidate already has its {project.reviewers_per_candidate} reviewers; your hold on it had expired"
        )


def _refresh_status(candidate: Candidate, *, actor=None, first_round: ReviewRound | None = None) -> Candidate:
    """Set the candidate's status from its round-1 and final decisions under the project's pool rule."""
    if candidate.status == Candidate.Status.EXCLUDED:
        return candidate
    project = candidate.segment.project
    rnd = first_round or selectors.first_round(project)
    decisions, final = [], None
    for decision, source, is_final, round_id in (
        ReviewDecision.objects.filter(candidate=candidate)
        .order_by("updated_at")
        .values_list("decision", "source", "is_final", "round_id")
    ):
        if is_final:
            final = decision  # the latest final decision wins
        elif source == ANNOTATOR and round_id == rnd.pk:
            decisions.append(decision)
    outcome = rules.pool_outcome(project.pool_rule, decisions, final, project.reviewers_per_candidate)
    if (candidate.status, candidate.status_reason) != (outcome.status, outcome.reason):
        old = {"status": candidate.status, "status_reason": candidate.status_reason}
        Candidate.objects.filter(pk=candidate.pk).update(status=outcome.status, status_reason=outcome.reason)
        candidate.status, candidate.status_reason = outcome.status, outcome.reason
        audit_record(
            actor=actor,
            action="candidate.status",
            obj=candidate,
            old=old,
            new={"status": outcome.status, "status_reason": outcome.reason},
        )
    return candidate


def candidate_skip(
    *, user, candidate_id, reason: str, comment: str = "", round_id=None, client_user=None
) -> ReviewSkip:
    """Set a candidate aside (idempotent per reviewer and round); refused once the round is closed."""
    submissions.check_owner(user, client_user)
    if reason not in rules.reason_codes(rules.SKIP_REASONS):
        raise Invalid(
            f"skip reason must be one of {', '.join(sorted(rules.reason_codes(rules.SKIP_REASONS)))}", "reason"
        )
    comment = _clean_comment(comment)
    with transaction.atomic():
        submissions.serialize_writers()
        candidate = candidate_get_visible(user=user, candidate_id=candidate_id, lock=True)
        rnd = round_resolve(user=user, candidate=candidate, round_id=round_id)
        round_check_revisable(rnd=rnd, what="skips in it")
        skip, created = ReviewSkip.objects.get_or_create(
            candidate=candidate, reviewer=user, round=rnd, defaults={"reason": reason, "comment": comment or ""}
        )
        ReviewLock.objects.filter(candidate=candidate, reviewer=user, round=rnd).delete()
        if created:
            audit_record(
                actor=user,
                action="review.skip",
                obj=skip,
                old=None,
                new={"candidate": candidate.pk, "reason": reason, "comment": comment or ""},
            )
    return skip


def candidate_adjudicate(*, admin, candidate_id, decision: str, comment: str = "") -> ReviewDecision:
    """The admin's final decision on a candidate (typically one whose reviewers disagree)."""
    access.require_admin(admin, error=Forbidden)
    if decision not in ReviewDecision.Decision.values:
        raise Invalid("decision must be 'accept' or 'reject'", "decision")
    comment = _clean_comment(comment)
    with transaction.atomic():
        submissions.serialize_writers()
        candidate = candidate_get_visible(user=admin, candidate_id=candidate_id, lock=True)
        existing = ReviewDecision.objects.filter(candidate=candidate, source=ReviewDecision.Source.ADJUDICATION).first()
        if existing and (existing.decision, existing.comment) == (decision, comment):
            return existing  # the same decision again (a double click): nothing to change or record
        if existing:
            old = _decision_state(existing)
            existing.decision, existing.comment, existing.reviewer = decision, comment, admin
            existing.save()
            audit_record(
                actor=admin, action="adjudication.change", obj=existing, old=old, new=_decision_state(existing)
            )
            result = existing
        else:
            result = ReviewDecision.objects.create(
                candidate=candidate,
                reviewer=admin,
                decision=decision,
                comment=comment,
                source=ReviewDecision.Source.ADJUDICATION,
                is_final=True,
            )
            audit_record(actor=admin, action="adjudication.create", obj=result, old=None, new=_decision_state(result))
        _refresh_status(candidate, actor=admin)
        annotations_written.send(
            sender=__name__, project_id=candidate.segment.project_id
        )  # adjudications feed annotator quality
    return result


def pool_rule_set(*, admin, project: Project, rule: str) -> int:
    """Change the project's pool rule and re-derive every reviewed candidate's status. Returns changes."""
    access.require_admin(admin, error=Forbidden)
    if rule not in rules.POOL_RULES:
        raise Invalid(f"unknown pool rule {rule!r}", "pool_rule")
    with transaction.atomic():
        old = project_pool_rule_set(project=project, rule=rule)
        if rule != old:  # the same rule again re-derives the statuses below, and records nothing
            audit_record(
                actor=admin, action="project.pool_rule", obj=project, old={"pool_rule": old}, new={"pool_rule": rule}
            )
        changed = 0
        reviewed = Candidate.objects.filter(segment__project=project, decisions__isnull=False).distinct()
        for candidate in reviewed.select_related("segment__project"):
            before = candidate.status
            if _refresh_status(candidate, actor=admin).status != before:
                changed += 1
    return changed


# ---- rounds -----------------------------------------------------------------------------------------


def round_open(
    *, admin, project: Project, sample_size: int, seed: int, languages: list[str] | None = None
) -> ReviewRound:
    """A new, independent round on a seeded random sample of reviewed candidates (stability check).

    Opening it again while the same round is still open and nobody has reviewed in it (a double click on
    *Open round*, a resent form) answers with that round and opens none: the same seed draws the same sample,
    so a second one could only split its reviews. Another round opens once that one has reviews, is closed,
    or with another sample size, seed or languages."""
    access.require_admin(admin, error=Forbidden)
    if sample_size < 1:
        raise Invalid("sample size must be at least 1", "sample_size")
    if sample_size > MAX_POSITIVE_INT:
        raise Invalid(f"sample size must be at most {MAX_POSITIVE_INT}", "sample_size")
    if not -MAX_ID - 1 <= seed <= MAX_ID:
        raise Invalid("seed must fit in 64 bits", "seed")
    population = Candidate.objects.filter(
        segment__project=project, status__in=[Candidate.Status.ACCEPTED, Candidate.Status.REJECTED]
    )
    if languages:
        targets = set(project.directions.values_list("target__code", flat=True))
        unknown = [code for code in languages if code not in targets]
        if unknown:  # a typo would otherwise read as "nothing to sample"
            raise Invalid(
                f"languages: {', '.join(map(repr, unknown))} is not a target language of {project.name}", "languages"
            )
        population = population.filter(segment__direction__target__code__in=languages)
    ids = list(population.values_list("id", flat=True))
    if not ids:
        raise Invalid("no reviewed candidates to sample from", "sample_size")
    with transaction.atomic():
        submissions.serialize_writers()
        # the project's row is the lock two concurrent submits of the form queue on, so the second sees the first's round
        submissions.for_update(Project.objects.filter(pk=project.pk)).get()
        selectors.first_round(project)
        chosen = rules.sample_ids(ids, sample_size, seed)
        twin = _same_round_still_unreviewed(project, sample_size=sample_size, seed=seed, chosen=chosen)
        if twin is not None:
            return twin
        number = (
            ReviewRound.objects.filter(project=project).order_by("-number").values_list("number", flat=True).first()
            or 0
        ) + 1
        rnd = ReviewRound.objects.create(project=project, number=number, sample_size=sample_size, seed=seed)
        rnd.candidates.set(chosen)
        audit_record(
            actor=admin,
            action="round.open",
            obj=rnd,
            old=None,
            new={"number": number, "sample_size": len(chosen), "seed": seed, "languages": languages or []},
        )
    return rnd


def _same_round_still_unreviewed(project: Project, *, sample_size: int, seed: int, chosen) -> ReviewRound | None:
    """The project's newest round if it is this very round (open, same size, seed and sample) with no review in it."""
    newest = ReviewRound.objects.filter(project=project, number__gt=1).order_by("-number").first()
    if newest is None or not newest.is_open or (newest.sample_size, newest.seed) != (sample_size, seed):
        return None
    if set(newest.candidates.values_list("id", flat=True)) != set(chosen):
        return None
    if newest.decisions.exists() or newest.skips.exists():
        return None
    return newest


def round_close(*, admin, rnd: ReviewRound) -> ReviewRound:
    access.require_admin(admin, error=Forbidden)
    if rnd.is_open:
        rnd.is_open = False
        rnd.save(update_fields=["is_open"])
        audit_record(actor=admin, action="round.close", obj=rnd, old={"is_open": True}, new={"is_open": False})
    return rnd
