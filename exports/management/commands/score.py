"""python manage.py score RELEASE --metrics chrf++,spbleu,comet-22 [--directions en-de,en-zh] [--no-wait]

RELEASE is PROJECT@VERSION or a release id. Sends one task per (metric, direction) to the scoring
workers, then follows them with a progress bar and ingests their files as they finish."""

from __future__ import annotations

import json
import time

from celery import current_app
from django.core.management.base import BaseCommand, CommandError

from core.domain.params import id_param, non_negative_number, positive_int, positive_number
from exports.models import Release, ScoringJob
from exports.scores import services, tasks
from exports.scores.domain import ScoringError


def find_release(text: str) -> Release:
    if text.isdigit():  # (any Unicode digits: id_param takes ASCII ones, the rest name no release)
        release_id = id_param(text)
        release = Release.objects.filter(pk=release_id).first() if release_id else None
    elif "@" in text:
        project, version = text.split("@", 1)
        release = Release.objects.filter(project__name=project, version=version).first()
    else:
        raise CommandError(f"release {text!r}: give PROJECT@VERSION or a release id")
    if release is None:
        raise CommandError(f"release {text!r} not found")
    return release


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("release", help="PROJECT@VERSION or release id")
        parser.add_argument("--metrics", required=True, help="comma-separated metric names (python -m scoring list)")
        parser.add_argument("--directions", help="comma-separated directions (default: all of the release)")
        parser.add_argument("--force", action="store_true", help="queue again even jobs that are done or queued")
        parser.add_argument("--no-wait", action="store_true", help="queue and return; ingest later with a second run")
        parser.add_argument(
            "--timeout", type=non_negative_number, default=0, help="stop waiting after this many seconds (0: no limit)"
        )
        parser.add_argument("--batch-size", type=positive_int, help="per-task batch size")
        parser.add_argument("--spm-model", help="FLORES-200 SentencePiece file as the workers see it")
        parser.add_argument(
            "--option",
            action="append",
            metavar="[METRIC:]KEY=VALUE",
            help="scorer option passed to workers: KEY=VALUE to every metric of the request that takes KEY, "
            "METRIC:KEY=VALUE to that metric alone; a KEY that none takes is refused",
        )
        parser.add_argument(
            "--trust-remote-code",
            action="store_true",
            help="let workers run Python code shipped with a checkpoint (OmniScore's legacy format); only for checkpoints you trust",
        )
        parser.add_argument("--judge-url", help="LLM judges: OpenAI-compatible base URL as the judge workers reach it")
        parser.add_argument("--judge-model", help="LLM judges: the judge model")
        parser.add_argument("--max-usd", type=positive_number, help="LLM judges: stop each task at this estimated cost")
        parser.add_argument(
            "--judge-option",
            action="append",
            metavar="KEY=VALUE",
            help="LLM judges: further judge settings (concurrency, rpm, temperature, structured, backend, …)",
        )
        parser.add_argument("--limit", type=positive_int, help="first N triplets per direction")

    def handle(self, *args, **opts):
        release = find_release(opts["release"])
        metrics = names(opts["metrics"], "--metrics")
        directions = names(opts["directions"], "--directions") if opts["directions"] is not None else None
        try:
            jobs = tasks.start_scoring(
                release=release,
                metrics=metrics,
                directions=directions,
                options=_score_options(opts),
                force=opts["force"],
            )
        except ScoringError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{len(jobs)} job(s) for {release}")
        if opts["no_wait"]:
            return
        states = self._wait(release, {j.pk for j in jobs}, timeout=opts["timeout"], quiet=opts["verbosity"] == 0)
        failed = [s.job for s in states if s.job.status == ScoringJob.Status.FAILED]
        for s in states:
            self.stdout.write(
                f"{s.job.metric:>14} {s.job.direction.code:<8} {s.job.status}"
                + (f": {s.job.error}" if s.job.error else "")
            )
        if failed:
            raise CommandError(f"{len(failed)} job(s) failed")

    def _wait(self, release, ids: set, *, timeout, quiet: bool) -> list:
        """The jobs' states once every one is done or failed, synced each second under a progress bar."""
        from tqdm import tqdm

        started = time.monotonic()
        bar = tqdm(total=len(ids), unit="job", desc=f"scoring {release}", disable=quiet)
        while True:
            states = [s for s in services.jobs_sync(release=release, app=current_app) if s.job.pk in ids]
            finished = [s for s in states if s.job.status in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED)]
            bar.n = len(finished)
            running = [
                f"{s.job.metric}/{s.job.direction.code} {s.percent}%"
                for s in states
                if s.job.status == ScoringJob.Status.RUNNING
            ]
            bar.set_postfix_str(", ".join(running[:3]))
            bar.refresh()
            if len(finished) == len(ids):
                break
            if timeout and time.monotonic() - started > timeout:
                bar.close()
                raise CommandError(f"stopped waiting after {timeout} s; jobs go on (run again to ingest)")
            time.sleep(1.0)
        bar.close()
        return states


def _score_options(opts) -> dict:
    """The scoring options the command's flags give; judge settings for the judge metrics only."""
    options = {}
    if opts["batch_size"]:
        options["batch_size"] = opts["batch_size"]
    if opts["spm_model"]:
        options["spm_model"] = opts["spm_model"]
    if opts["trust_remote_code"]:
        options["trust_remote_code"] = True
    extra = _key_values(opts["option"], "--option")
    if extra:
        options["extra"] = extra
    judge = _key_values(opts["judge_option"], "--judge-option")
    judge.update(
        {
            k: v
            for k, v in (("base_url", opts["judge_url"]), ("model", opts["judge_model"]), ("max_usd", opts["max_usd"]))
            if v
        }
    )
    if judge:
        options["judge"] = judge  # judge metrics only (scoring.runner.ScoreOptions.for_metric)
    if opts["limit"] is not None:
        options["limit"] = opts["limit"]
    return options


def names(text: str, flag: str) -> list[str]:
    """A comma-separated list of names (metrics, directions), blanks dropped; refused when it names none."""
    out = [part.strip() for part in text.split(",") if part.strip()]
    if not out:
        raise CommandError(f"{flag} {text!r}: name at least one, comma-separated")
    return out


def _key_values(items: list[str] | None, flag: str) -> dict:
    """KEY=VALUE options; a VALUE that reads as JSON (numbers, true, lists) is taken as such, else as text."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out
