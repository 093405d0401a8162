"""python manage.py import_xqmeval PROJECT DIR [--decisions FILE] [--strict] [--jobs N | --writers N]"""

import time
from concurrent.futures.process import BrokenProcessPool

from django.core.management.base import BaseCommand, CommandError

from annotation.review.xqmeval_import.services import xqmeval_import
from core.services import ImportRejected


class Command(BaseCommand):
    help = "Import released XQ-MEval candidates (en-{lang}-{ErrorType}.parquet) and their review decisions."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name (created when it does not exist)")
        parser.add_argument(
            "directory", help="directory with the candidate parquet files (or its parent with candidates/)"
        )
        parser.add_argument("--decisions", help="decisions.csv: one final accepted/rejected decision per candidate")
        parser.add_argument(
            "--strict", action="store_true", help="treat a candidate with several <v> regions as an error"
        )
        parser.add_argument(
            "--jobs",
            type=int,
            default=1,
            metavar="N",
            help="read and check languages in N worker processes while this one writes (default 1: all in this process)",
        )
        parser.add_argument(
            "--writers",
            type=int,
            default=0,
            metavar="N",
            help="PostgreSQL: N processes read, check and write whole languages, one transaction per language, after "
            "every file is validated; a conflict with stored rows keeps the languages written before it (run again to finish)",
        )

    def handle(self, *args, **opts):
        from tqdm import tqdm

        started = time.perf_counter()
        if opts["jobs"] < 1:
            raise CommandError(f"--jobs {opts['jobs']}: must be at least 1")
        if opts["writers"] < 0 or (opts["writers"] and opts["jobs"] > 1):
            raise CommandError(
                "--writers N: N ≥ 0, and not with --jobs (each writer reads and checks its own languages)"
            )
        bar = tqdm(desc="candidates", unit="cand", disable=opts["verbosity"] == 0)

        def total(n: int) -> None:
            bar.total = n
            bar.refresh()

        def language_done(language: str, candidates: int, problems: int) -> None:
            if opts["verbosity"] >= 2:  # a line per language under the bar
                state = f"{problems} problem(s) so far, nothing more is written" if problems else "written"
                with tqdm.external_write_mode():  # the bar is cleared and redrawn around the line
                    self.stdout.write(f"{language}: {candidates} candidates read and checked, {state}")

        try:
            result = xqmeval_import(
                project_name=opts["project"],
                directory=opts["directory"],
                decisions_path=opts["decisions"],
                strict=opts["strict"],
                progress=bar.update,
                on_total=total,
                on_language=language_done,
                jobs=opts["jobs"],
                writers=opts["writers"],
            )
        except ImportRejected as exc:
            raise CommandError(str(exc)) from None
        except BrokenProcessPool as exc:  # a worker killed (out of memory?): the transaction rolled back
            raise CommandError(
                f"an import worker process died ({exc}); nothing was imported: run again with fewer --jobs"
            ) from None
        finally:
            bar.close()
        elapsed = time.perf_counter() - started
        self._report(result, elapsed=elapsed, writers=opts["writers"])

    def _report(self, result, *, elapsed: float, writers: int) -> None:
        """What the import wrote, how long its passes took, and what its checks found."""
        w = self.stdout.write
        w(
            f"project {result.project}{' (created)' if result.project_created else ''}: "
            f"{result.segments_created} gold segments, {result.candidates_created} candidates "
            f"({result.candidates_unchanged} unchanged), {result.decisions_created} decisions "
            f"({result.decisions_unchanged} unchanged) in {elapsed:.1f} s"
        )
        if result.seconds and result.candidates_created and writers > 1:
            write = result.seconds["write"]
            w(
                f"time: validation pass {result.seconds['read']:.2f} s, writing pass {write:.2f} s "
                f"({result.candidates_created / write if write else 0:,.0f} candidates/s read, checked and written by {writers} writers)"
            )
        elif result.seconds and result.candidates_created:
            write = result.seconds["write"]
            w(
                f"time: read {result.seconds['read']:.2f} s, checks {result.seconds['checks']:.2f} s, database writes {write:.2f} s "
                f"({result.candidates_created / write if write else 0:,.0f} candidates/s with their decisions)"
            )
        if result.per_direction_type:
            for (direction, etype), n in sorted(result.per_direction_type.items()):
                w(f"  {direction} {etype}: {n}")
        if result.flagged:
            w("automatic checks flagged: " + ", ".join(f"{k} {v}" for k, v in sorted(result.flagged.items())))
        if result.status_counts:
            w("candidate status: " + ", ".join(f"{k} {v}" for k, v in sorted(result.status_counts.items())))
        if not result.changed:
            w(self.style.SUCCESS("nothing changed (already imported)"))
