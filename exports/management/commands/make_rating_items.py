"""python manage.py make_rating_items PROJECT --from accepted-candidates|pseudo-translations [--direction en-de] [--level K] [--limit N --seed S]

Turns existing candidates or pseudo translations into Likert rating items (idempotent: existing items are
kept). ``--limit`` draws a seeded random sample.

An exports command although it makes rating items: it reads pseudo translations (exports) as well as
candidates, and only a later stage may import both; the items are written by the annotation services.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.models import RatingItem
from annotation.review import domain as review_rules
from annotation.review import services
from core.domain.params import positive_int
from core.models import Project
from exports.models import PseudoTranslation
from injection.models import Candidate


class Command(BaseCommand):
    help = "Create Likert rating items from accepted candidates or pseudo translations."

    def add_arguments(self, parser):
        parser.add_argument("project")
        parser.add_argument(
            "--from", dest="origin", required=True, choices=["accepted-candidates", "pseudo-translations"]
        )
        parser.add_argument("--direction", help="only this direction, e.g. en-de")
        parser.add_argument("--level", type=int, help="pseudo translations of this level k only")
        parser.add_argument("--limit", type=positive_int, help="a seeded random sample of this size")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **opts):
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        if opts["level"] is not None:
            if opts["origin"] != "pseudo-translations":
                raise CommandError(
                    "--level picks pseudo translations by their number of errors: use it with --from pseudo-translations"
                )
            if not 0 <= opts["level"] <= project.max_errors:
                raise CommandError(
                    f"--level {opts['level']}: project {project.name} has levels 0 to {project.max_errors}"
                )
        directions = sorted(project.directions.values_list("code", flat=True))
        if opts["direction"] and opts["direction"] not in directions:
            raise CommandError(
                f"--direction {opts['direction']}: not a direction of project {project.name} ({', '.join(directions) or 'none'})"
            )
        if opts["origin"] == "accepted-candidates":
            qs = Candidate.objects.filter(segment__project=project, status=Candidate.Status.ACCEPTED, is_gold=False)
        else:
            qs = PseudoTranslation.objects.filter(segment__project=project)
            if opts["level"] is not None:
                qs = qs.filter(level=opts["level"])
        if opts["direction"]:
            qs = qs.filter(segment__direction__code=opts["direction"])
        if opts["limit"]:
            qs = qs.filter(pk__in=review_rules.sample_ids(qs.values_list("pk", flat=True), opts["limit"], opts["seed"]))
        from tqdm import tqdm

        kind = (
            RatingItem.Kind.CANDIDATE if opts["origin"] == "accepted-candidates" else RatingItem.Kind.PSEUDO_TRANSLATION
        )
        with tqdm(total=qs.count(), desc="looked at", unit="row", disable=opts["verbosity"] == 0) as bar:
            created = services.make_ratable(project, qs, kind, progress=bar.update)
        self.stdout.write(f"{created} rating items created")
