"""python manage.py recount_review_progress [PROJECT …]

Rebuilds the review progress counters (``ReviewTally``) of the named projects, or of every project, from
their candidates, decisions and round samples. The triggers keep them exact; this is for upgrades, a
restore from a backup taken without them, or to check them (``--check`` reports differences, changes
nothing). PostgreSQL only (elsewhere progress is counted from the rows).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.review import tally
from core.models import Project


class Command(BaseCommand):
    help = "Rebuild the review progress counters from the rows."

    def add_arguments(self, parser):
        parser.add_argument("projects", nargs="*", help="project names (default: every project)")
        parser.add_argument(
            "--check", action="store_true", help="report counters that differ from a recount; change nothing"
        )

    def handle(self, *args, **opts):
        if not tally.available():
            raise CommandError("review progress counters exist on PostgreSQL only")
        names = opts["projects"]
        projects = list(Project.objects.filter(name__in=names) if names else Project.objects.all())
        missing = sorted(set(names) - {p.name for p in projects})
        if missing:
            raise CommandError(f"no project named {', '.join(map(repr, missing))}")
        differ = 0
        for project in sorted(projects, key=lambda p: p.name):
            if opts["check"]:
                with transaction.atomic():
                    before = _key(tally.units(project))
                    tally.recount(project)
                    after = _key(tally.units(project))
                    transaction.set_rollback(True)
                if before != after:
                    differ += 1
                    self.stdout.write(f"{project.name}: counters differ from a recount ({len(before ^ after)} rows)")
                else:
                    self.stdout.write(f"{project.name}: counters exact")
            else:
                rows = tally.recount(project)
                self.stdout.write(f"{project.name}: {rows} counter rows")
        if differ:
            raise CommandError(f"{differ} project(s) with counters that differ; run without --check to rebuild")


def _key(units) -> set:
    return {(u.language, u.round_number, u.status, u.reviews, u.candidates) for u in units}
