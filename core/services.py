"""Write operations on languages, directions, projects, users and gold segments."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from core import bulk
from core.corpus.domain import CorpusRow
from core.domain import bidi
from core.domain.edit_types import MQM, PERTURBATION, types_of
from core.domain.errors import InputErrors
from core.domain.language_id import language_mismatch
from core.domain.languages import language_info, parse_direction
from core.models import Direction, GoldSegment, Language, Profile, Project, ReviewerAssignment
from core.selectors import active_directions

ID_LENGTH = GoldSegment._meta.get_field("external_id").max_length


class ImportRejected(InputErrors):
    """An import found bad input against what is stored (e.g. different text under an existing id)."""


def ensure_language(code: str) -> Language:
    info = language_info(code)
    language, _ = Language.objects.get_or_create(
        code=code, defaults={"name": info.name, "script": info.script, "unit": info.unit, "rtl": info.rtl}
    )
    return language


def ensure_direction(code: str) -> Direction:
    source, target = parse_direction(code)
    direction, _ = Direction.objects.get_or_create(
        code=code, defaults={"source": ensure_language(source), "target": ensure_language(target)}
    )
    return direction


def project_name_problem(name: str) -> str:
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


def project_problems(
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
    problems = project_problems(
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
            source_language=ensure_language(source_language),
            error_types=error_types,
            reviewers_per_candidate=reviewers_per_candidate,
            max_errors=max_errors,
            options=options,
            owner=owner,
            **fields,
        )
        if directions:
            project.directions.add(*[ensure_direction(code) for code in directions])
    return project


def ensure_project(name: str, *, source_language: str = "en", owner=None, **fields) -> tuple[Project, bool]:
    """The project called ``name``, created through ``project_create`` when missing (imports and the demo)."""
    project = Project.objects.filter(name=name).first()
    if project:
        return project, False
    return project_create(name=name, source_language=source_language, owner=owner, **fields), True


def add_directions(project: Project, codes: Iterable[str]) -> list[Direction]:
    directions = [ensure_direction(code) for code in codes]
    for direction in directions:
        if direction.source.code != project.source_language.code:
            raise ValueError(
                f"direction {direction.code} does not start from the project's source language {project.source_language.code}"
            )
    project.directions.add(*directions)
    return directions


def clean_username(username: str) -> str:
    """``username`` NFKC-normalised and checked by Django's rules and the confusables rule
    (``core.domain.usernames``); a ``ValidationError`` says what is wrong. Every path that creates a user
    goes through it."""
    from django.core.exceptions import ValidationError

    from core.domain.usernames import normalize_username, username_problem

    username = normalize_username(username)
    User = get_user_model()
    User._meta.get_field(User.USERNAME_FIELD).clean(username, None)  # letters, digits, @/./+/-/_; 150 at most
    problem = username_problem(username)
    if problem:
        raise ValidationError(problem, code="confusable")
    return username


def corpus_limits():
    """The corpus limits the settings give (``CORPUS_LIMITS``), for every reader of an upload."""
    from django.conf import settings

    from core.corpus.domain import Limits

    return Limits(**settings.CORPUS_LIMITS)


def project_settings_update(
    project: Project,
    *,
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
        for p in project_problems(
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


def direction_add_problem(project: Project, target: str) -> str:
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


def direction_add(project: Project, *, target: str) -> Direction:
    """Add the direction from the project's source language into ``target`` (the settings page, after a
    confirmation). ``ProjectRejected`` says why not; nothing is written then."""
    if problem := direction_add_problem(project, target):
        raise ProjectRejected([problem])
    with transaction.atomic():
        direction = ensure_direction(f"{project.source_language.code}-{target}")
        project.directions.add(direction)
    return direction


def assignments_set(project: Project, *, direction: str, usernames: Iterable[str]) -> list[str]:
    """Make exactly ``usernames`` (annotators) the reviewers of ``direction`` in ``project``; returns them
    sorted. ``ProjectRejected`` names every unknown user, non-annotator or wrong direction; nothing is
    written then."""
    usernames = sorted(set(usernames))
    problems = []
    target = active_directions(project).filter(code=direction).first()
    if target is None:
        problems.append(f"direction: {direction} is not an active direction of {project.name}")
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


def create_user(
    username: str, password: str, *, role: str = Profile.Role.ANNOTATOR, languages: Iterable[str] = (), email: str = ""
):
    """Create (or update) a user with a role and, for annotators, their target languages. A new user's name
    goes through ``clean_username`` (a ``ValidationError`` when refused)."""
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is None:
            user, _ = User.objects.get_or_create(username=clean_username(username), defaults={"email": email})
        user.set_password(password)
        user.is_staff = role == Profile.Role.ADMIN
        user.is_superuser = role == Profile.Role.ADMIN
        user.save()
        profile, _ = Profile.objects.get_or_create(user=user, defaults={"role": role})
        profile.role = role
        profile.save()
        profile.languages.set([ensure_language(code) for code in languages])
    return user


@dataclass
class CorpusImportResult:
    created: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def import_corpus_rows(
    project: Project,
    direction_code: str,
    rows: list[CorpusRow],
    source_name: str,
    *,
    known_direction: bool = False,
    check_language: bool = False,
) -> CorpusImportResult:
    """Import gold pairs atomically and idempotently.

    Re-importing the same rows changes nothing; a row whose id exists with different text is an error.
    Any error rejects the whole file: nothing is written (no Direction either: the direction is checked
    against the project before it is created). The site's forms pass ``known_direction`` (the direction
    must be one of the project's active directions: adding one is a deliberate act in the settings, so a
    typo cannot make one) and ``check_language`` (the references must read as the direction's target)."""
    if known_direction and not active_directions(project).filter(code=direction_code).exists():
        raise ImportRejected(
            source_name,
            [
                f"direction: {direction_code} is not an active direction of project {project.name}; "
                "add it in the project's settings first"
            ],
        )
    if check_language:
        _, target = parse_direction(direction_code)
        if problem := language_mismatch((row.reference for row in rows), target):
            raise ImportRejected(
                source_name,
                [
                    f"{problem}, so it was not imported into {direction_code}; choose the right direction, "
                    "or tick “the references are in another language on purpose”"
                ],
            )
    try:
        source, _ = parse_direction(direction_code)
    except ValueError as exc:
        raise ImportRejected(source_name, [f"--direction: {exc}"]) from None
    if source != project.source_language.code:
        raise ImportRejected(
            source_name,
            [
                f"--direction: {direction_code} does not start from project {project.name}'s source language {project.source_language.code}"
            ],
        )
    errors = [
        f"{row.location}: id {row.external_id[:40]!r}… is {len(row.external_id)} characters long, at most {ID_LENGTH} fit"
        for row in rows
        if len(row.external_id) > ID_LENGTH
    ]
    if errors:
        raise ImportRejected(source_name, errors)
    direction = Direction.objects.filter(code=direction_code).first()
    existing = (
        {
            seg.external_id: seg
            for seg in GoldSegment.objects.filter(project=project, direction=direction).only(
                "external_id", "source", "reference"
            )
        }
        if direction
        else {}
    )
    to_create: list[GoldSegment] = []
    result = CorpusImportResult()
    for row in rows:
        old = existing.get(row.external_id)
        if old is None:
            to_create.append(
                GoldSegment(project=project, external_id=row.external_id, source=row.source, reference=row.reference)
            )
        elif old.source == row.source and old.reference == row.reference:
            result.unchanged += 1
        else:
            errors.append(
                f"{row.location}: id {row.external_id!r} already exists in {project.name}/{direction_code} with different text"
            )
    if errors:
        raise ImportRejected(source_name, errors)
    with transaction.atomic():
        direction = ensure_direction(direction_code)
        project.directions.add(direction)
        for segment in to_create:
            segment.direction = direction
        bulk.insert_objects(GoldSegment, to_create)
    result.created = len(to_create)
    result.warnings = [
        f"{row.location}: {col} has bidirectional mark(s) {', '.join(found)} (kept; usual in right-to-left text)"
        for row in rows
        for col, text in (("source", row.source), ("reference", row.reference))
        if (found := bidi.controls(text, bidi.MARKS))
    ]
    return result


def read_corpus_source(
    *,
    columns,
    upload_name: str = "",
    data: bytes | None = None,
    hf_dataset: str = "",
    hf_config: str | None = None,
    hf_split: str = "test",
    hub_only: bool = True,
) -> tuple[str, list[CorpusRow]]:
    """Read and validate a corpus: uploaded bytes, or a Hugging Face dataset through ``datasets`` (a Hub id,
    each Hub call timed out after ``HF_HUB_TIMEOUT``; a local dataset directory only with ``hub_only`` off,
    the command line's). Shared by the upload form, the Hub import job and ``import_corpus``. Returns
    (source name, rows); ``CorpusError`` (``HubUnreachable`` when the Hub did not answer) lists every problem."""
    from django.conf import settings

    from core.corpus.domain import read_corpus, read_hf_dataset

    if hf_dataset:
        rows = read_hf_dataset(
            hf_dataset,
            hf_config or None,
            hf_split or "test",
            columns,
            hub_only=hub_only,
            timeout=settings.HF_HUB_TIMEOUT,
            limits=corpus_limits(),
        )
        return hf_dataset, rows
    return upload_name, read_corpus(data or b"", upload_name, columns, limits=corpus_limits())


def import_corpus_source(
    project: Project,
    *,
    direction: str,
    columns,
    upload_name: str = "",
    data: bytes | None = None,
    known_direction: bool = False,
    check_language: bool = False,
) -> tuple[str, CorpusImportResult]:
    """Read an uploaded corpus file and import it with ``import_corpus_rows``: the same validation as the
    command; ``CorpusError`` or ``ImportRejected`` list every problem with its file and line, and nothing is
    written. Returns (source name, result). A Hub dataset is imported by a job (``core.corpus.services``),
    never inside a request."""
    name, rows = read_corpus_source(columns=columns, upload_name=upload_name, data=data)
    return name, import_corpus_rows(
        project, direction, rows, name, known_direction=known_direction, check_language=check_language
    )
