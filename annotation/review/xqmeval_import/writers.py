"""Entry points of the import's writer processes (``import_xqmeval(writers=N)``), spawned fresh: the pool's
initializer sets Django up before anything imports a model, so this module imports none at its top."""

from __future__ import annotations


def setup(database: dict) -> None:
    """A writer process: Django with the parent's database (under pytest, its test database)."""
    import django
    from django.conf import settings

    settings.AXES_VERBOSE = False  # one start-up banner per writer would break into the command's progress bar
    django.setup()
    from django.db import connections

    connections["default"].close()
    connections["default"].settings_dict.update(database)


def write_language(project_id: int, run_id: int, group, strict: bool, decisions_path: str | None, decisions_name: str):
    from annotation.review.xqmeval_import.services import language_task_write

    return language_task_write(
        project_id=project_id,
        run_id=run_id,
        group=group,
        strict=strict,
        decisions_path=decisions_path,
        name=decisions_name,
    )


def analyze(model_label: str) -> None:
    """ANALYZE one table (the import's planner statistics, one table per writer)."""
    from django.apps import apps

    from core import bulk

    bulk.refresh_planner_statistics(apps.get_model(model_label))
