from django.core.management.base import BaseCommand

from xqmeval.demo.setup import setup_demo


class Command(BaseCommand):
    help = "Create demo accounts and load the demo corpus (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-scores",
            action="store_true",
            help="leave the XQ-MEval release unscored (set-up scores it with chrF++ and BLEU where ../shared holds it)",
        )

    def handle(self, *args, **opts):
        setup_demo(self.stdout.write, score=not opts["no_scores"])
