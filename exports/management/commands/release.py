"""python manage.py release PROJECT --version V [--out DIR] [--format jsonl,tsv] [--push REPO_ID] [--public]

Stages the release one direction at a time (the steps a worker chord runs), -v2 prints a line per direction;
run again after a failure or an interruption, it resumes with the directions left."""

import os
import time

from django.core.management.base import BaseCommand, CommandError

from core.domain.errors import AppError
from core.models import Project
from exports.release import services


class Command(BaseCommand):
    help = "Write an immutable, versioned release (HF dataset layout) and optionally push it to the Hub (HF_TOKEN)."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version is the release version here, not Django's "show the program version".
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name")
        parser.add_argument("--version", required=True, help="release version, e.g. 1.0.0")
        parser.add_argument("--out", help="output directory (default: RELEASES_DIR/PROJECT/VERSION)")
        parser.add_argument("--format", default="", help="extra formats, comma-separated: jsonl,tsv")
        parser.add_argument("--push", metavar="REPO_ID", help="push to this Hub dataset repo (token from HF_TOKEN)")
        parser.add_argument("--public", action="store_true", help="create the Hub repo public (default private)")
        parser.add_argument("--seed", type=int, help="base seed of the sampling plan (new versions only)")

    def _checked_project(self, opts) -> Project:
        """The project, once the version and a push are known to be possible: refused before anything is written."""
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        try:
            services.release_version_check(project=project, version=opts["version"])
        except AppError as exc:
            raise CommandError(f"--version: {exc}") from None
        if opts["public"] and not opts["push"]:
            raise CommandError("--public applies to the Hub repo that --push creates; give --push REPO_ID too")
        if opts["push"]:  # a push that cannot start is refused before the release is written
            try:
                services.release_request_check(project=project, version=opts["version"], push_repo=opts["push"])
            except AppError as exc:  # a bad request, or a release of the project being written
                raise CommandError(f"--push: {exc}") from None
            if not os.environ.get("HF_TOKEN"):
                raise CommandError("--push: HF_TOKEN is not set in the environment; nothing was written")
        return project

    def handle(self, *args, **opts):
        from tqdm import tqdm

        project = self._checked_project(opts)
        formats = tuple(f.strip() for f in opts["format"].split(",") if f.strip())
        overrides = {"seed": opts["seed"]} if opts["seed"] is not None else None
        bar = tqdm(total=100, desc="release", unit="%", disable=opts["verbosity"] == 0)

        def progress(stage: str, pct: int) -> None:
            bar.set_description(stage[:30])
            bar.n = pct
            bar.refresh()

        def direction_done(code: str, entry: dict) -> None:
            if opts["verbosity"] > 1:  # a line per direction; the bar shows the whole
                with bar.external_write_mode():
                    self.stdout.write(f"{code}: {entry['triplets']} triplets staged")

        started = time.perf_counter()
        try:
            release = services.release_create(
                project=project,
                version=opts["version"],
                out_dir=opts["out"],
                formats=formats,
                plan_overrides=overrides,
                progress=progress,
                on_direction=direction_done,
            )
        except (AppError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        w = self.stdout.write
        w(f"{release}: {release.manifest.get('triplets')} triplets, content hash {release.content_hash}")
        w(f"written to {release.path} in {time.perf_counter() - started:.1f} s")
        if opts["push"]:
            try:
                release = services.release_push(release=release, repo_id=opts["push"], private=not opts["public"])
            except (
                services.HubPushError
            ) as exc:  # network or Hub error: recorded on the release, resumable by re-running
                raise CommandError(f"push failed ({exc}); run the same command again to resume") from None
            except services.ReleaseError as exc:
                raise CommandError(str(exc)) from None
            w(f"pushed to {release.hub_repo} at revision {release.hub_revision}")
