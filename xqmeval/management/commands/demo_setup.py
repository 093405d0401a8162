from django.core.management.base import BaseCommand

from xqmeval.demo.setup import setup_demo


class Command(BaseCommand):
    help = "Create demo accounts and load the demo corpus (idempotent)."

    def handle(self, *args, **opts):
        setup_demo(self.stdout.write)
