"""Reads of the corpus stage: the Hub imports a corpus page shows, and the input limits of every upload."""

from __future__ import annotations

from core.models import CorpusImport, Project

SHOWN_IMPORTS = 10


def hub_imports(project: Project, limit: int = SHOWN_IMPORTS) -> list[CorpusImport]:
    """The project's newest Hub imports, newest first."""
    return list(
        CorpusImport.objects.filter(project=project).select_related("direction").order_by("-created_at", "-id")[:limit]
    )


def any_live(imports: list[CorpusImport]) -> bool:
    """Whether the page should fetch them again: one is pending or running and its process is alive."""
    return any(job.status in CorpusImport.LIVE and not job.interrupted for job in imports)


def corpus_limits():
    """The input limits the settings give (``CORPUS_LIMITS``), for every reader of an upload: corpus files,
    system outputs to rate, the XQ-MEval files, EvalSets (docs/security.md, "Input limits")."""
    from django.conf import settings

    from core.corpus.domain import Limits

    return Limits(**settings.CORPUS_LIMITS)
