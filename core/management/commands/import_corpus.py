"""python manage.py import_corpus PROJECT FILE --direction en-de  |  --hf DATASET [--config C] [--split S]"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from core.corpus.domain import Columns, CorpusError, read_corpus_file
from core.corpus.services import corpus_rows_import, corpus_source_read
from core.domain.languages import UnknownDirection, parse_direction
from core.services import ImportRejected, ProjectRejected, project_ensure


class Command(BaseCommand):
    help = "Import gold pairs (id, source, reference) from TSV/CSV/JSONL/parquet or a Hugging Face dataset."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name (created when it does not exist)")
        parser.add_argument("file", nargs="?", help="corpus file: .tsv, .csv, .jsonl or .parquet")
        parser.add_argument("--direction", required=True, help="translation direction, e.g. en-de")
        parser.add_argument(
            "--format", choices=["tsv", "csv", "jsonl", "parquet"], help="override the format the suffix implies"
        )
        parser.add_argument("--id-column", default="id")
        parser.add_argument("--source-column", default="source")
        parser.add_argument("--reference-column", default="reference")
        parser.add_argument(
            "--hf", metavar="DATASET", help="load through `datasets` (a Hub id, or a local dataset directory)"
        )
        parser.add_argument("--config", help="dataset config name (with --hf)")
        parser.add_argument("--split", default="test", help="dataset split (with --hf; default: test)")

    def handle(self, *args, **opts):
        if bool(opts["file"]) == bool(opts["hf"]):
            raise CommandError("give either FILE or --hf DATASET")
        try:
            source_lang, _ = parse_direction(opts["direction"])
        except UnknownDirection as exc:
            raise CommandError(f"--direction: {exc}") from None
        columns = Columns(opts["id_column"], opts["source_column"], opts["reference_column"])
        try:
            if opts["hf"]:  # the same reading as the corpus page's import job, local directories allowed
                name, rows = corpus_source_read(
                    columns=columns,
                    hf_dataset=opts["hf"],
                    hf_config=opts["config"],
                    hf_split=opts["split"],
                    hub_only=False,
                )
            else:
                rows = read_corpus_file(opts["file"], columns, opts["format"])
                name = opts["file"]
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        try:
            with transaction.atomic():  # a rejected file leaves no new project behind
                project, created = project_ensure(name=opts["project"], source_language=source_lang)
                result = corpus_rows_import(
                    project=project, direction_code=opts["direction"], rows=rows, source_name=name
                )
        except ProjectRejected as exc:
            raise CommandError(f"project: {exc}") from None
        except ImportRejected as exc:
            raise CommandError(str(exc)) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(
            f"{project.name} {opts['direction']}: {result.created} gold segments imported, {result.unchanged} unchanged"
            + (" (project created)" if created else "")
        )
