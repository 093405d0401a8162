"""How an annotator's submission is written, the same for a review decision and a Likert rating: its
idempotency key (a retry answers with what the key stored the first time), the user the client recorded it
for, the time spent on it, and the locks the writers take (see ``annotation.review.services`` on
concurrency). Shared by review and rating, so neither imports the other's services."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime

from django.db import IntegrityError, connection, transaction

from annotation.models import UsedIdempotencyKey
from core.domain.errors import Conflict, Forbidden, Invalid


class KeyMismatch(Invalid):
    # A key reused for another request: Stripe and the IETF idempotency-key draft answer 422, never the first
    # request's answer (which would silently drop the second request).
    code = "key_mismatch"
    status = 422


def serialize_writers() -> None:
    """On SQLite take the database write lock now, so the reads below cannot go stale before our write."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("UPDATE annotation_reviewround SET is_open = is_open WHERE 0")


def for_update(qs, *, skip_locked: bool = False):
    """``qs`` with its rows locked (``SELECT … FOR UPDATE OF`` the queried table); SQLite has no row locks
    (``serialize_writers`` took its database lock)."""
    if connection.vendor == "sqlite":
        return qs
    return qs.select_for_update(skip_locked=skip_locked, of=("self",))


def clean_time(ms) -> int | None:
    if ms in (None, ""):
        return None
    try:
        ms = int(ms)
    except (TypeError, ValueError):
        raise Invalid("time_spent_ms must be an integer", "time_spent_ms") from None
    # Cap at a day: a tab left open overnight must not distort the medians.
    return max(0, min(ms, 86_400_000))


def clean_key(key) -> str:
    key = (key or "").strip()
    if not key or len(key) > 64:
        raise Invalid("idempotency_key is required (1–64 characters, one per submission)", "idempotency_key")
    return key


def check_owner(user, client_user) -> None:
    """Refuse a submission that the client recorded for another user: a shared browser keeps unsent work per
    user, and a page (or an outbox entry) made while someone else was logged in must never be stored as the
    person logged in now. ``client_user`` is the user id the page was rendered for; None: not sent."""
    if client_user in (None, ""):
        return
    if str(client_user).strip() != str(user.pk):
        raise Forbidden(
            f"this was recorded on this device for another user (id {client_user}), not for {user.get_username()}; "
            "it is not stored. That user sees it again when they log in on this device.",
            "client_user",
        )


def _snapshot(obj) -> dict:
    """The row's fields as JSON; datetimes in full ISO form (DjangoJSONEncoder would cut microseconds)."""
    return {f.attname: _json_value(f.value_from_object(obj)) for f in obj._meta.concrete_fields}


def _json_value(value):
    return value.isoformat() if isinstance(value, datetime) else value


def _restore(model, snapshot: dict):
    """The row as a key's first submission stored it (an unsaved copy: never written back)."""
    fields = {f.attname: f.to_python(snapshot[f.attname]) for f in model._meta.concrete_fields if f.attname in snapshot}
    return model(**fields)


def request_hash(*, request: dict) -> str:
    """The fingerprint a key is bound to: what the submission asks for (its target, its values, its comment and
    round), not when or how long it took, so a client's retry of the same submission matches."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def remember_key(kind: str, key: str, user, obj, fingerprint: str) -> None:
    UsedIdempotencyKey.objects.create(
        kind=kind,
        key=key,
        user=user,
        object_id=obj.pk,
        response=_snapshot(obj),
        request_hash=fingerprint,
    )


def replay_key(kind: str, model, user, key: str, fingerprint: str):
    """What this key did the first time, or None for a key never used. Another user's key is a conflict; the
    same user's key with another request is refused (422), so the second request is never silently dropped.
    (Keys stored before this table existed were copied into it by migration 0004; keys stored before the
    request hash have none and replay as before.)"""
    used = UsedIdempotencyKey.objects.filter(kind=kind, key=key).first()
    if used is not None:
        if used.user_id != user.id:
            raise Conflict("idempotency key already used by another submission", "idempotency_key")
        if used.request_hash and used.request_hash != fingerprint:
            raise KeyMismatch(
                f"idempotency key {key!r} was already used for a different {kind}; nothing was stored. "
                "Send a new key with each new submission.",
                "idempotency_key",
            )
        return _restore(model, used.response)
    return None


def keyed_write(kind: str, model, user, key: str, fingerprint: str, write: Callable[[], tuple], *, concurrent: str):
    """A submission under an idempotency key: ``write()`` (returning (row, created)) in one transaction with the
    writers serialized, unless the key was used before: then what it stored, ``(row, False)``. A key a
    concurrent request stored first (the write's IntegrityError) answers the same way; another conflict of the
    write is refused with ``concurrent``."""
    try:
        with transaction.atomic():
            serialize_writers()
            replay = replay_key(kind, model, user, key, fingerprint)
            if replay is not None:
                return replay, False
            return write()
    except IntegrityError:
        replay = replay_key(kind, model, user, key, fingerprint)
        if replay is not None:
            return replay, False
        raise Conflict(concurrent) from None
