"""The audit trail of the annotation rooms (``annotation.AuditEvent``): review, rating and the annotator
accounts record every change here. Shared, so no room reaches into another's services for it."""

from __future__ import annotations

from annotation.models import AuditEvent


def audit_record(*, actor, action: str, obj, old=None, new=None) -> AuditEvent:
    if action not in AuditEvent.ACTIONS:
        raise ValueError(f"audit action {action!r} is not in AuditEvent.ACTIONS")
    return AuditEvent.objects.create(
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk),
        old=old,
        new=new,
    )
