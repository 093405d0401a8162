"""``manage.py agreement PROJECT --format json|csv``: the dashboard's tables, from the same selector.
``manage.py agreement [PROJECT] --prewarm``: compute and cache the dashboard's reports now (what the
refresh task does), with a progress bar; every project when none is named."""

from __future__ import annotations

from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.management.base import BaseCommand, CommandError

from annotation.agreement import refresh
from annotation.agreement import selectors as sel
from annotation.agreement.domain import tables
from core.models import Project


class Command(BaseCommand):
    help = "Print a project's agreement tables (the numbers the agreement dashboard shows) as JSON or CSV, or prewarm the dashboard's cache."

    def add_arguments(self, parser):
        parser.add_argument("project", nargs="?", help="project name (optional with --prewarm: every project)")
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--table", action="append", choices=sel.TABLES, help="only this table (repeatable)")
        parser.add_argument("--language", action="append", help="only this target language (repeatable)")
        parser.add_argument(
            "--prewarm",
            action="store_true",
            help="compute and cache the report of every dashboard scope whose rows changed; print nothing else",
        )

    def handle(
        self,
        *args,
        project: str | None,
        format: str,
        table: list[str] | None,
        language: list[str] | None,
        prewarm: bool,
        **options,
    ):
        if prewarm:
            if table or language:
                raise CommandError("--prewarm computes every dashboard scope; --table and --language do not apply")
            projects = [self._project(project)] if project else list(Project.objects.order_by("name"))
            if isinstance(caches["default"], LocMemCache):
                self.stderr.write(
                    "warning: the cache is this process's memory (no CACHE_URL), so the web app will not see these reports"
                )
            for p in projects:
                self._prewarm(p, options["verbosity"])
            return
        if not project:
            raise CommandError("name a project (or use --prewarm)")
        project_obj = self._project(project)
        known = sorted(project_obj.directions.values_list("target__code", flat=True).distinct())
        unknown = sorted(set(language or ()) - set(known))
        if unknown:
            raise CommandError(
                f"--language {', '.join(unknown)}: not a target language of project {project_obj.name} ({', '.join(known) or 'none'})"
            )
        report = sel.project_report(project_obj, languages=language)
        if table:
            report = {name: report[name] for name in table}
        if format == "json":
            self.stdout.write(tables.to_json({"project": project_obj.name, "tables": report}))
        else:
            self.stdout.write(tables.report_to_csv(report), ending="")

    def _project(self, name: str) -> Project:
        project_obj = Project.objects.filter(name=name).first()
        if project_obj is None:
            raise CommandError(
                f"no project {name!r}; known: {', '.join(Project.objects.values_list('name', flat=True)) or 'none'}"
            )
        return project_obj

    def _prewarm(self, project: Project, verbosity: int) -> None:
        from tqdm import tqdm

        bar = tqdm(
            total=len(sel.dashboard_scopes(project)),
            unit="scope",
            desc=f"agreement {project.name}",
            disable=verbosity == 0,
        )
        try:
            result = refresh.refresh_project(project.pk, progress=lambda scope, computed: bar.update(1))
        except Exception as exc:
            refresh.record_failure(project.pk, exc)
            raise CommandError(f"agreement of {project.name} failed: {exc}") from exc
        finally:
            bar.close()
        if result is None:
            raise CommandError(f"project {project.name} was deleted meanwhile")
        self.stdout.write(
            f"{project.name}: {result.scopes} scope(s), {result.computed} computed, {result.hits} already cached, {result.seconds:.1f} s"
        )
