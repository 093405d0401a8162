"""Write operations on languages, directions, projects and users (gold segments: ``core.corpus.services``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction

from core.domain.edit_types import MQM, PERTURBATION, types_of
from core.domain.errors import InputErrors
from core.domain.languages import language_info, parse_direction
from core.models import Direction, Language, Profile, Project, ReviewerAssignment
from core.selectors import active_directions


class ImportRejected(InputErrors):
    """An import found bad input against what is stored (e.g. different text under an existing id)."""


def language_ensure(*, code: str) -> Language:
    info = language_info(code)
    language, _ = Language.objects.get_or_create(
        code=code, defaults={"name": info.name, "script": info.script, "unit": info.unit, "rtl": info.rtl}
    )
    return language


def direction_ensure(*, code: str) -> Direction:
    source, target = parse_direction(code)
    direction, _ = Direction.objects.get_or_create(
        code=code, defaults={"source": language_ensure(code=source), "target": language_ensure(code=target)}
    )
    return direction


def project_name_check(*, name: str) -> str:
    """'' when ``name`` can name a project (a slug that fits the column), else why not."""
    from django.core.exceptions import ValidationError

    field = Project._meta.get_field("name")
    try:
        field.clean(name, None)
    except ValidationError as exc:
        return " ".join(exc.messages)
    return ""


class ProjectRejected(ImportRejected):
    """A project cannot be created as asked; ``errors`` names each field's problem. Nothing was written."""

    def __init__(self, errors: list[str]):
        super().__init__("project", errors)
        self.args = ("; ".join(errors),)


SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
MAX_REVIEWERS = 10
MAX_ERRORS_LIMIT = 10


def project_check(
    *,
    name: str,
    source_language: str,
    directions: Iterable[str] = (),
    error_types: Iterable[str] = (),
    perturbations: Iterable[str] = (),
    reviewers_per_candidate: int = 2,
    max_errors: int = 5,
) -> list[str]:
    """Every problem of a new project's settings, each naming its field (empty: it can be created)."""
    problems: list[str] = []
    if not name:
        problems.append("name: required")
    elif len(name) > 100 or not SLUG_RE.match(name):
        problems.append(
            f"name: {name!r} must be a slug of at most 100 characters: letters, digits, '-' or '_' (it is the project's URL)"
        )
    elif Project.objects.filter(name=name).exists():
        problems.append(f"name: a project {name!r} already exists")
    try:
        language_info(source_language)
    except ValueError as exc:
        problems.append(f"source_language: {exc}")
    for code in directions:
        try:
            source, _ = parse_direction(code)
        except ValueError as exc:
            problems.append(f"directions: {exc}")
            continue
        if source != source_language:
            problems.append(f"directions: {code} does not start from the source language {source_language}")
    for field_name, kind, names in (("error_types", MQM, error_types), ("perturbations", PERTURBATION, perturbations)):
        known = [t.name for t in types_of(kind)]
        for type_name in names:
            if type_name not in known:
                problems.append(f"{field_name}: unknown {kind} type {type_name!r} (known: {', '.join(known)})")
    if not isinstance(reviewers_per_candidate, int) or not 1 <= reviewers_per_candidate <= MAX_REVIEWERS:
        problems.append(
            f"reviewers_per_candidate: {reviewers_per_candidate!r} is not a whole number from 1 to {MAX_REVIEWERS}"
        )
    if not isinstance(max_errors, int) or not 1 <= max_errors <= MAX_ERRORS_LIMIT:
        problems.append(f"max_errors: {max_errors!r} is not a whole number from 1 to {MAX_ERRORS_LIMIT}")
    return problems


def project_create(
    *,
    name: str,
    title: str = "",
    source_language: str = "en",
    directions: Iterable[str] = (),
    error_types: Iterable[str] = (),
    perturbations: Iterable[str] = (),
    reviewers_per_candidate: int = 2,
    max_errors: int = 5,
    description: str = "",
    owner=None,
    **fields,
) -> Project:
    """Create a project with its directions; every setting is validated first (``ProjectRejected`` lists
    each problem by field) and nothing is written unless all are valid. Empty ``error_types`` or
    ``perturbations`` mean every registered type of that kind. The site's form, the admin and the commands
    all create projects here."""
    directions, error_types, perturbations = list(directions), list(error_types), list(perturbations)
    problems = project_check(
        name=name,
        source_language=source_language,
        directions=directions,
        error_types=error_types,
        perturbations=perturbations,
        reviewers_per_candidate=reviewers_per_candidate,
        max_errors=max_errors,
    )
    if problems:
        raise ProjectRejected(problems)
    options = dict(fields.pop("options", None) or {})
    if perturbations:
        options["perturbations"] = perturbations
    with transaction.atomic():
        project = Project.objects.create(
            name=name,
            title=title or name,
            description=description,
            source_language=language_ensure(code=source_language),
            error_types=error_types,
            reviewers_per_candidate=reviewers_per_candidate,
            max_errors=max_errors,
            options=options,
            owner=owner,
            **fields,
        )
        if directions:
            project.directions.add(*[direction_ensure(code=code) for code in directions])
    return project


def project_ensure(*, name: str, source_language: str = "en", owner=None, **fields) -> tuple[Project, bool]:
    """The project called ``name``, created through ``project_create`` when missing (imports and the demo)."""
    project = Project.objects.filter(name=name).first()
    if project:
        return project, False
    return project_create(name=name, source_language=source_language, owner=owner, **fields), True


def project_directions_add(*, project: Project, codes: Iterable[str]) -> list[Direction]:
    directions = [direction_ensure(code=code) for code in codes]
    for direction in directions:
        if direction.source.code != project.source_language.code:
            raise ValueError(
                f"direction {direction.code} does not start from the project's source language {project.source_language.code}"
            )
    project.directions.add(*directions)
    return directions


def username_clean(*, username: str, besides: int | None = None) -> str:
    """``username`` NFKC-normalised and checked by Django's rules, the confusables rule
    (``core.domain.usernames``) and against the names taken, compared without case (``ANNA`` meets
    ``anna``, #48.5; ``besides``: the user being renamed); a ``ValidationError`` says what is wrong (code
    ``taken`` for a name in use). Every path that creates or renames a user goes through it."""
    from django.core.exceptions import ValidationError

    from core.domain.usernames import normalize_username, username_problem

    username = normalize_username(username)
    User = get_user_model()
    User._meta.get_field(User.USERNAME_FIELD).clean(username, None)  # letters, digits, @/./+/-/_; 150 at most
    problem = username_problem(username)
    if problem:
        raise ValidationError(problem, code="confusable")
    taken = User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).exclude(pk=besides)
    existing = taken.values_list(User.USERNAME_FIELD, flat=True).first()
    if existing == username:
        raise ValidationError(f"{username} is taken: that user already exists.", code="taken")
    if existing is not None:
        raise ValidationError(
            f"{username} is taken: user {existing} already exists (user names are compared without case).",
            code="taken",
        )
    return username


def project_settings_update(
    *,
    project: Project,
    title: str,
    description: str = "",
    reviewers_per_candidate: int,
    max_errors: int,
    error_types: Iterable[str] = (),
) -> Project:
    """Change a project's settings from its settings page; ``ProjectRejected`` lists every problem by field
    (the same rules as creating one), and nothing is written unless all are valid."""
    error_types = list(error_types)
    problems = [
        p
        for p in project_check(
            name=project.name,
            source_language=project.source_language.code,
            error_types=error_types,
            reviewers_per_candidate=reviewers_per_candidate,
            max_errors=max_errors,
        )
        if not p.startswith("name: ")  # the project exists: its own name is not a problem
    ]
    if not title.strip():
        problems.insert(0, "title: required")
    if problems:
        raise ProjectRejected(problems)
    project.title, project.description = title.strip(), description
    project.reviewers_per_candidate, project.max_errors, project.error_types = (
        reviewers_per_candidate,
        max_errors,
        error_types,
    )
    project.save(update_fields=["title", "description", "reviewers_per_candidate", "max_errors", "error_types"])
    return project


def _direction_add_problem(project: Project, target: str) -> str:
    """'' when a direction from the project's source into ``target`` can be added, else why not."""
    source = project.source_language.code
    try:
        language_info(target)
    except ValueError as exc:
        return f"target: {exc}"
    if target == source:
        return f"target: {target} is the project's source language"
    if project.directions.filter(code=f"{source}-{target}").exists():
        retired = project.retired_directions.filter(code=f"{source}-{target}").exists()
        return f"target: {source}-{target} is already a direction of {project.name}" + (
            " (retired: reinstate it)" if retired else ""
        )
    return ""


def direction_add(*, project: Project, target: str) -> Direction:
    """Add the direction from the project's source language into ``target`` (the settings page, after a
    confirmation). ``ProjectRejected`` says why not; nothing is written then."""
    if problem := _direction_add_problem(project, target):
        raise ProjectRejected([problem])
    with transaction.atomic():
        direction = direction_ensure(code=f"{project.source_language.code}-{target}")
        project.directions.add(direction)
    return direction


def project_pool_rule_set(*, project: Project, rule: str) -> str:
    """Store the project's pool rule (review checks it and re-derives the statuses); returns the rule it replaced."""
    old = project.pool_rule
    if rule != old:
        project.pool_rule = rule
        project.save(update_fields=["pool_rule"])
    return old


def project_direction_remove(*, project: Project, direction: Direction) -> None:
    """Take ``direction`` out of the project and of its retired list (the caller checked it holds nothing)."""
    project.retired_directions.remove(direction)
    project.directions.remove(direction)


def project_direction_retire(*, project: Project, direction: Direction) -> None:
    project.retired_directions.add(direction)


def project_direction_reinstate(*, project: Project, direction: Direction) -> None:
    project.retired_directions.remove(direction)


def assignments_add(*, user, directions: Iterable[tuple[Project, Direction]]) -> None:
    """Let ``user`` review each (project, direction); assignments already there stay."""
    ReviewerAssignment.objects.bulk_create(
        [ReviewerAssignment(project=p, direction=d, user=user) for p, d in directions], ignore_conflicts=True
    )


def assignments_set(*, project: Project, direction_code: str, usernames: Iterable[str]) -> list[str]:
    """Make exactly ``usernames`` (annotators) the reviewers of ``direction`` in ``project``; returns them
    sorted. ``ProjectRejected`` names every unknown user, non-annotator or wrong direction; nothing is
    written then."""
    usernames = sorted(set(usernames))
    problems = []
    target = active_directions(project).filter(code=direction_code).first()
    if target is None:
        problems.append(f"direction: {direction_code} is not an active direction of {project.name}")
    users = {u.username: u for u in get_user_model().objects.filter(username__in=usernames).select_related("profile")}
    for name in usernames:
        user = users.get(name)
        if user is None:
            problems.append(f"reviewers: no user {name!r}")
        elif getattr(getattr(user, "profile", None), "role", None) != Profile.Role.ANNOTATOR:
            problems.append(f"reviewers: {name} is not an annotator (admins see every direction; viewers review none)")
    if problems:
        raise ProjectRejected(problems)
    with transaction.atomic():
        ReviewerAssignment.objects.filter(project=project, direction=target).exclude(
            user__username__in=usernames
        ).delete()
        ReviewerAssignment.objects.bulk_create(
            [ReviewerAssignment(project=project, direction=target, user=users[name]) for name in usernames],
            ignore_conflicts=True,
        )
    return usernames


def user_create(
    *,
    username: str,
    password: str | None,
    role: str = Profile.Role.ANNOTATOR,
    languages: Iterable[str] = (),
    email: str = "",
):
    """Create (or update) a user with a role and, for annotators, their target languages. A new user's name
    goes through ``username_clean`` (a ``ValidationError`` when refused). ``password`` None: no usable password
    (an account no one logs in as, such as the demo's simulated reviewers)."""
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is None:
            user, _ = User.objects.get_or_create(username=username_clean(username=username), defaults={"email": email})
        user.set_password(password)
        user.is_staff = role == Profile.Role.ADMIN
        user.is_superuser = role == Profile.Role.ADMIN
        user.save()
        profile, _ = Profile.objects.get_or_create(user=user, defaults={"role": role})
        profile.role = role
        profile.save()
        profile.languages.set([language_ensure(code=code) for code in languages])
    return user
