"""python manage.py publish_release RELEASE

Copy a ready release's files from its directory (on this host: the builder's) into the ``releases`` storage
when that is object storage (``RELEASES_STORAGE=s3``; core.storage). The release's finish step does this by
itself; run it for a release built before the bucket was configured, or whose publishing failed. Files
already there with their size are kept; the manifest, which marks a whole release, is written last.
RELEASE is PROJECT@VERSION or a release id."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core import storage
from exports.management.commands.score import find_release
from exports.models import Release


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("release", help="PROJECT@VERSION or release id")

    def handle(self, *args, **opts):
        release = find_release(opts["release"])
        if release.status != Release.Status.READY:
            raise CommandError(f"release {release} is {release.status}, not ready")
        if storage.is_local(storage.storage_get(storage.RELEASES)):
            self.stdout.write("the releases storage is the local file system: the release directory is the release")
            return
        if not release.path or not (Path(release.path) / "manifest.json").is_file():
            raise CommandError(f"release {release}: no files at {release.path or '(no path)'} on this host")
        written = storage.release_publish(release=release)
        self.stdout.write(f"release {release}: {written} file(s) written to the releases storage")
