"""python manage.py build_benchmark PROJECT [--force]"""

import time

from django.core.management.base import BaseCommand, CommandError

from core.models import Project
from exports.benchmark import services
from exports.models import BenchmarkBuild


class Command(BaseCommand):
    help = "Merge a project's accepted candidates into pseudo translations (levels 0…max_errors); incremental."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name")
        parser.add_argument("--force", action="store_true", help="rebuild every gold pair, changed or not")
        parser.add_argument(
            "--resume",
            action="store_true",
            help="go on with the latest build if it did not finish (its done directions are skipped)",
        )

    def handle(self, *args, **opts):
        from tqdm import tqdm

        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        latest = BenchmarkBuild.objects.filter(project=project).order_by("-created_at", "-pk").first()
        if opts["resume"] and latest is not None and latest.status != BenchmarkBuild.Status.DONE:
            build = latest
            left = sorted(code for code, entry in build.directions.items() if entry.get("status") != "done")
            self.stdout.write(
                f"resuming build {build.number}: {len(build.directions) - len(left)} direction(s) done, {len(left)} left"
            )
        else:
            try:  # one build per project at a time, as on the site (an interrupted one is resumed)
                build = services.build_create(project=project)
            except services.BuildRunning as running:
                raise CommandError(f"{running}; wait for it, or run again with --resume once it has stopped") from None
        bar = tqdm(desc="gold pairs", unit="pair", disable=opts["verbosity"] == 0)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        def on_direction(code: str, entry: dict) -> None:
            if opts["verbosity"] > 1:  # a line per direction; the bar shows the whole
                with bar.external_write_mode():
                    self.stdout.write(
                        f"{code}: {entry['gold_pairs']} gold pairs, {entry['rebuilt']} rebuilt, {entry['pseudo_created']} pseudo translations, "
                        f"{entry['excluded']} excluded, {entry['transplanted']} transplanted"
                    )

        started = time.perf_counter()
        try:
            services.build_run(build=build, progress=progress, force=opts["force"], on_direction=on_direction)
        except Exception as exc:
            raise CommandError(f"build {build.number} failed: {exc}") from exc
        finally:
            bar.close()
        build.refresh_from_db()
        w = self.stdout.write
        w(
            f"{project.name}: {build.total_segments} gold pairs, {build.rebuilt_segments} rebuilt, "
            f"{build.pseudo_created} pseudo translations written, {build.excluded} candidate(s) excluded, "
            f"{build.transplanted} placed by transplanting their edit (flag 'transplanted') in {time.perf_counter() - started:.1f} s"
        )
        failed = {code: entry for code, entry in build.directions.items() if entry.get("status") != "done"}
        if failed:
            raise CommandError(f"build {build.number}: directions not merged: {', '.join(sorted(failed))}")
        for line in services.counts_format(counts=build.counts):
            w(line)
