"""Django admin for review data. Decisions and ratings are read-only here: they change only through the
review services, which audit every change (the review admin pages are under /review/<project>/manage/)."""
from django.contrib import admin

from annotation.models import (
    AuditEvent, LikertRating, RatingItem, ReviewDecision, ReviewLock, ReviewRound, ReviewSkip, UsedIdempotencyKey,
)


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ReviewRound)
class ReviewRoundAdmin(admin.ModelAdmin):
    list_display = ["project", "number", "sample_size", "seed", "is_open", "created_at"]
    list_filter = ["project", "is_open"]
    readonly_fields = ["candidates"]


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(ReadOnly):
    list_display = ["candidate", "reviewer", "round", "decision", "reason", "source", "is_final", "time_spent_ms", "updated_at"]
    list_filter = ["candidate__segment__project", "candidate__segment__direction", "decision", "source", "is_final", "round__number"]
    search_fields = ["reviewer__username", "candidate__segment__external_id"]
    raw_id_fields = ["candidate"]


@admin.register(ReviewSkip)
class ReviewSkipAdmin(ReadOnly):
    list_display = ["candidate", "reviewer", "round", "reason", "created_at"]
    list_filter = ["candidate__segment__project", "candidate__segment__direction", "reason"]


@admin.register(ReviewLock)
class ReviewLockAdmin(admin.ModelAdmin):
    list_display = ["candidate", "reviewer", "round", "expires_at"]
    list_filter = ["candidate__segment__project", "candidate__segment__direction"]
    raw_id_fields = ["candidate"]


@admin.register(RatingItem)
class RatingItemAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "direction", "kind", "system", "external_id"]
    list_filter = ["project", "kind", "direction"]
    raw_id_fields = ["candidate", "pseudo_translation"]


@admin.register(LikertRating)
class LikertRatingAdmin(ReadOnly):
    list_display = ["item", "rater", "informativeness", "clarity", "plausibility", "faithfulness", "updated_at"]
    list_filter = ["item__project", "item__direction", "item__kind"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnly):
    list_display = ["at", "actor", "action", "object_type", "object_id", "old", "new"]
    list_filter = ["action", "object_type"]
    search_fields = ["object_id", "actor__username"]


@admin.register(UsedIdempotencyKey)
class UsedIdempotencyKeyAdmin(ReadOnly):
    list_display = ["created_at", "kind", "key", "user", "object_id"]
    list_filter = ["kind"]
    search_fields = ["key", "user__username"]
