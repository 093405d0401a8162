"""python manage.py make_span_items PROJECT TASK --from accepted-candidates|pseudo-translations|file [FILE]
[--direction en-de] [--level K] [--limit N --seed S] [--attention] [--release V --metric NAME]

Adds items to a span-annotation task (idempotent: existing items are kept). ``--from file`` reads FILE with the
columns ``import_rating_items`` reads (source, text, optional id, system, reference) for ``--direction``.
``--attention`` makes accepted candidates attention items (their injected span is the known answer).
``--release`` and ``--metric`` pre-fill ESA-AI spans from the metric's stored spans in that release.

An exports command: it reads candidates, pseudo translations and metric scores; the annotation services write.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.import_rating_items import read_rows
from annotation.models import SpanTask
from annotation.spans import services as span_services
from core.corpus.domain import CorpusError
from core.domain.params import positive_int
from core.services import ImportRejected
from exports import span_items
from exports.management.common import item_sample, options_refused


class Command(BaseCommand):
    help = "Add items to a span-annotation (ESA/MQM) task."

    def add_arguments(self, parser):
        parser.add_argument("project")
        parser.add_argument("task")
        parser.add_argument("file", nargs="?")
        parser.add_argument("--from", dest="origin", required=True, choices=[*span_items.ORIGINS, "file"])
        parser.add_argument("--direction", help="only this direction, e.g. en-de (required with --from file)")
        parser.add_argument("--level", type=int)
        parser.add_argument("--limit", type=positive_int)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--attention", action="store_true")
        parser.add_argument("--release")
        parser.add_argument("--metric")
        parser.add_argument("--format", choices=["jsonl", "tsv", "csv", "parquet"])
        parser.add_argument("--system", default="")

    def handle(self, *args, **opts):
        task = (
            SpanTask.objects.filter(project__name=opts["project"], name=opts["task"]).select_related("project").first()
        )
        if task is None:
            raise CommandError(f"no span task {opts['task']!r} in project {opts['project']!r}")
        if opts["origin"] == "file":
            if not opts["file"] or not opts["direction"]:
                raise CommandError("--from file needs FILE and --direction")
            try:
                created = span_services.span_items_import(
                    task=task,
                    direction_code=opts["direction"],
                    rows=read_rows(opts["file"], opts["format"]),
                    source_name=opts["file"],
                    system=opts["system"],
                    kind="system_output" if opts["system"] else "file",
                )
            except (CorpusError, ImportRejected) as exc:
                raise CommandError(str(exc)) from None
            except OSError as exc:
                raise CommandError(f"{opts['file']}: {exc.strerror}") from None
        else:
            try:
                created = span_items.make_span_items(
                    task,
                    opts["origin"],
                    **item_sample(opts),
                    attention=opts["attention"],
                    release=opts["release"],
                    metric=opts["metric"],
                )
            except span_items.SpanSourceRejected as exc:
                raise options_refused(exc.problems) from None
        self.stdout.write(f"{created} span items created")
