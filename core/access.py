"""Who may see and change what. Every view and API endpoint asks here, never decides on its own.

Admins (role admin, staff or superuser) see everything. Annotators see only items whose target language
is one of their assigned languages, and change only their own work. Viewers read aggregate pages only.

Two language sets, one rule: ``allowed_languages`` decides which projects, directions and aggregates
(counts, agreement by language, scores) a user reads; ``item_languages`` decides whose items (candidate and
rating texts, review queues) a user reads or works on: a viewer's is empty. Anything a user may not see
answers exactly as a missing thing does (``not_found``: HTTP 404, one message), so no answer tells
whether it exists.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from core.models import Language, Profile, Project, ReviewerAssignment


def profile_of(user) -> Profile | None:
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        return None
    try:
        return user.profile
    except Profile.DoesNotExist:
        return None


def is_admin(user) -> bool:
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser or user.is_staff:
        return True
    profile = profile_of(user)
    return bool(profile and profile.role == Profile.Role.ADMIN)


def is_annotator(user) -> bool:
    profile = profile_of(user)
    return bool(profile and profile.role == Profile.Role.ANNOTATOR)


def allowed_languages(user, project: Project | None = None) -> QuerySet[Language]:
    """Target languages whose items this user may see (all for admins, none for strangers). In ``project``:
    for an annotator, the targets of the directions she is assigned there, once the project assigns anyone
    (an assignment in one project opens no other), and her languages in a project with no assignment; for a
    viewer (never assigned: viewers review nothing), her languages. Without a project: the user's languages
    and every assigned target (the union over projects; pages about one project pass it)."""
    if is_admin(user):
        return Language.objects.all()
    profile = profile_of(user)
    if profile is None:
        return Language.objects.none()
    assigned = ReviewerAssignment.objects.filter(user=user)
    if project is not None and not is_annotator(user):
        return profile.languages.all()
    if project is not None:  # one query: the hot path of review counts them
        assigns_anyone = Exists(ReviewerAssignment.objects.filter(project=project))
        return Language.objects.filter(
            Q(directions_into__in=assigned.filter(project=project).values("direction"))
            | (Q(pk__in=profile.languages.values("pk")) & ~assigns_anyone)
        ).distinct()
    return Language.objects.filter(
        Q(pk__in=profile.languages.values("pk")) | Q(directions_into__in=assigned.values("direction"))
    ).distinct()


def work_filter(user, *, project_path: str, direction_path: str) -> Q:
    """A filter on rows whose project and direction are reached by the paths ``project_path`` and ``direction_path``
    (e.g. ``segment__project``): the rows this user works on. Admins: all; in a project with assignments,
    the directions assigned to the user; in one without, the user's languages."""
    if is_admin(user):
        return Q()
    profile = profile_of(user)
    if profile is None:
        return Q(pk__in=[])
    mine = ReviewerAssignment.objects.filter(
        user=user, project=OuterRef(project_path), direction=OuterRef(direction_path)
    )
    assigning = ReviewerAssignment.objects.values("project")
    return Q(Exists(mine)) | (
        ~Q(**{f"{project_path}__in": assigning})
        & Q(**{f"{direction_path}__target__in": profile.languages.values("pk")})
    )


def item_languages(user, project: Project | None = None) -> QuerySet[Language]:
    """Target languages whose items (candidate and rating texts, queues) this user may read or work on: all
    for admins, theirs for annotators (in ``project``: their assignments there), none for viewers and
    strangers (viewers read aggregates only)."""
    if is_admin(user) or is_annotator(user):
        return allowed_languages(user, project)
    return Language.objects.none()


NOT_FOUND = "Not found."


def not_found() -> Http404:
    """What every view raises for a thing that is missing or that the caller may not see: one status, one
    message, so the answer never tells which."""
    return Http404(NOT_FOUND)


def may_see_language(user, language_code: str) -> bool:
    if is_admin(user):
        return True
    return allowed_languages(user).filter(code=language_code).exists()


def require_admin(user, *, message: str = "admins only", error: type[Exception] = PermissionDenied) -> None:
    """Raise ``error(message)`` (by default PermissionDenied, HTTP 403) unless ``user`` is an admin. Views
    and services call this instead of testing ``is_admin`` themselves."""
    if not is_admin(user):
        raise error(message)


def visible_projects(user, *, items: bool = False) -> QuerySet[Project]:
    """Projects ``user`` may see: admins every project; others those with a direction into one of
    ``allowed_languages(user, project)`` (an annotator: the projects that assign her a direction, and those
    that assign nobody with a direction into her languages); with ``items``, only those whose items they may
    read or work on (none for viewers)."""
    if is_admin(user):
        return Project.objects.all()
    profile = profile_of(user)
    if profile is None or (items and not is_annotator(user)):
        return Project.objects.none()
    by_language = Q(directions__target__in=profile.languages.all())
    if not is_annotator(user):
        return Project.objects.filter(by_language).distinct()
    assigned_here = Exists(ReviewerAssignment.objects.filter(user=user, project=OuterRef("pk")))
    assigns_anyone = Exists(ReviewerAssignment.objects.filter(project=OuterRef("pk")))
    return Project.objects.filter(Q(assigned_here) | (~Q(assigns_anyone) & by_language)).distinct()


def visible_project(user, name, *, items: bool = False) -> Project:
    """The project named ``name`` if ``user`` may see it (its items too, with ``items``); ``not_found``
    otherwise, so a stranger cannot tell it exists."""
    try:
        return visible_projects(user, items=items).select_related("source_language").get(name=str(name))
    except Project.DoesNotExist:
        raise not_found() from None


def work_project(user, name) -> Project:
    """A project whose items ``user`` reviews or rates (review screens, queues, progress): viewers get 404."""
    return visible_project(user, name, items=True)
