"""python manage.py import_rating_items PROJECT DIRECTION FILE [--system NAME] [--format jsonl|tsv|csv|parquet]

Imports system outputs to rate on the Likert screen. Columns: ``source``, ``text`` (the output), optional
``reference``, ``system`` and ``id``. Any bad row rejects the file (named by line); nothing is written.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.rating import services
from core.corpus.domain import CorpusError, read_records
from core.corpus.selectors import corpus_limits
from core.models import Project
from core.services import ImportRejected


def read_rows(path: str, fmt: str | None) -> list[dict]:
    with open(path, "rb") as fh:
        records = read_records(fh.read(), path, fmt, limits=corpus_limits())  # the limits of every upload
    return [{**row, "_location": where} for where, row in records]  # values as read; the service checks their types


class Command(BaseCommand):
    help = "Import system outputs (source, reference, text) as items for Likert rating."

    def add_arguments(self, parser):
        parser.add_argument("project")
        parser.add_argument("direction", help="e.g. en-de (a direction of the project)")
        parser.add_argument("file")
        parser.add_argument("--system", default="", help="system name for rows without a 'system' column")
        parser.add_argument("--format", choices=["jsonl", "tsv", "csv", "parquet"])

    def handle(self, *args, **opts):
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        try:
            rows = read_rows(opts["file"], opts["format"])
            result = services.system_outputs_import(
                project=project,
                direction_code=opts["direction"],
                rows=rows,
                source_name=opts["file"],
                system=opts["system"],
            )
        except (CorpusError, ImportRejected) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{opts['file']}: {exc.strerror}") from None
        self.stdout.write(f"{result.created} rating items created, {result.unchanged} unchanged")
