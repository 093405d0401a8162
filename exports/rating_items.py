"""Which existing rows become Likert rating items: accepted candidates or pseudo translations of a project,
checked the same way for the command line (``make_rating_items``) and the site's rating-items page.

At the exports app's top, not in a stage: it reads pseudo translations (exports) and candidates, and the
items are written by the annotation services."""

from __future__ import annotations

from annotation.models import RatingItem
from annotation.rating import services as rating_services
from annotation.review import domain as review_rules
from core.domain.errors import Invalid
from core.models import Project
from exports.models import PseudoTranslation
from injection.models import Candidate

ACCEPTED_CANDIDATES = "accepted-candidates"
PSEUDO_TRANSLATIONS = "pseudo-translations"
# what each origin reads, and the kind of item it makes
ORIGINS = {
    ACCEPTED_CANDIDATES: RatingItem.Kind.CANDIDATE,
    PSEUDO_TRANSLATIONS: RatingItem.Kind.PSEUDO_TRANSLATION,
}


class RatingSourceRejected(Invalid, ValueError):
    """The options name no valid set of rows. ``problems``: (option, text) pairs, the text starting with the
    value given where there is one, so each caller words the option its own way. Nothing was written."""

    code = "rating_source_rejected"

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__(
            "; ".join(f"{option}: {text}" for option, text in problems), problems[0][0] if problems else None
        )
        self.problems = problems


def _rows(origin: str, project: Project):
    if origin == ACCEPTED_CANDIDATES:
        return Candidate.objects.filter(segment__project=project, status=Candidate.Status.ACCEPTED, is_gold=False)
    return PseudoTranslation.objects.filter(segment__project=project)


def rating_item_rows(project: Project, origin: str, *, direction_code: str | None = None, level: int | None = None):
    """The rows ``origin`` names in ``project`` (one direction, one level of pseudo translations, when given);
    RatingSourceRejected names every bad option at once."""
    problems: list[tuple[str, str]] = []
    if origin not in ORIGINS:
        problems.append(("from", f"{origin}: not one of {', '.join(ORIGINS)}"))
    if level is not None:
        if origin != PSEUDO_TRANSLATIONS:
            problems.append(
                ("level", "picks pseudo translations by their number of errors: use it with pseudo translations")
            )
        elif not 0 <= level <= project.max_errors:
            problems.append(("level", f"{level}: project {project.name} has levels 0 to {project.max_errors}"))
    directions = sorted(project.directions.values_list("code", flat=True))
    if direction_code and direction_code not in directions:
        problems.append(
            (
                "direction",
                f"{direction_code}: not a direction of project {project.name} ({', '.join(directions) or 'none'})",
            )
        )
    if problems:
        raise RatingSourceRejected(problems)
    rows = _rows(origin, project)
    if level is not None:
        rows = rows.filter(level=level)
    if direction_code:
        rows = rows.filter(segment__direction__code=direction_code)
    return rows


def make_rating_items(
    project: Project,
    origin: str,
    *,
    direction_code: str | None = None,
    level: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    progress=None,
) -> int:
    """Make the rows ``origin`` names ratable (a seeded sample of ``limit`` of them when given); existing
    items are kept. Returns how many items were made."""
    rows = rating_item_rows(project, origin, direction_code=direction_code, level=level)
    if limit:
        rows = rows.filter(pk__in=review_rules.sample_ids(rows.values_list("pk", flat=True), limit, seed))
    return rating_services.rating_items_make(project=project, objects=rows, kind=ORIGINS[origin], progress=progress)
