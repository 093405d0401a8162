"""python manage.py make_rating_items PROJECT --from accepted-candidates|pseudo-translations [--direction en-de] [--level K] [--limit N --seed S]

Turns existing candidates or pseudo translations into Likert rating items (idempotent: existing items are
kept). ``--limit`` draws a seeded random sample.

An exports command although it makes rating items: it reads pseudo translations (exports) as well as
candidates, and only a later stage may import both; the items are written by the annotation services.
"""

from django.core.management.base import BaseCommand, CommandError

from core.domain.params import positive_int
from core.models import Project
from exports import rating_items
from exports.management.common import item_sample, options_refused


class Command(BaseCommand):
    help = "Create Likert rating items from accepted candidates or pseudo translations."

    def add_arguments(self, parser):
        parser.add_argument("project")
        parser.add_argument("--from", dest="origin", required=True, choices=list(rating_items.ORIGINS))
        parser.add_argument("--direction", help="only this direction, e.g. en-de")
        parser.add_argument("--level", type=int, help="pseudo translations of this level k only")
        parser.add_argument("--limit", type=positive_int, help="a seeded random sample of this size")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **opts):
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        try:  # checked before the progress bar: a bad option writes nothing
            total = rating_items.rating_item_rows(
                project, opts["origin"], direction_code=opts["direction"], level=opts["level"]
            ).count()
        except rating_items.RatingSourceRejected as exc:
            raise options_refused(exc.problems) from None
        total = min(total, opts["limit"]) if opts["limit"] else total
        from tqdm import tqdm

        with tqdm(total=total, desc="looked at", unit="row", disable=opts["verbosity"] == 0) as bar:
            created = rating_items.make_rating_items(project, opts["origin"], **item_sample(opts), progress=bar.update)
        self.stdout.write(f"{created} rating items created")
