"""python manage.py inject PROJECT --directions en-de,en-zh --kind mqm --backend rule [...]

Plans a run (one work item per segment × type × position) and executes it here with a progress bar, or
on the `llm` Celery queue with --queue. --resume RUN continues a run (only pending items are generated);
--retry-failed RUN puts its failed items back to pending first.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core.domain.params import positive_int
from core.models import Project
from injection import services
from injection.backends import BackendUnavailable
from injection.models import InjectionRun


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()] if value else []


class Command(BaseCommand):
    help = "Inject MQM errors or perturbations into a project's references (one candidate per item)."

    def add_arguments(self, parser):
        parser.add_argument("project", nargs="?", help="project name (not needed with --resume/--retry-failed)")
        self._plan_arguments(parser)
        self._backend_arguments(parser)
        self._given_run_arguments(parser)

    def _plan_arguments(self, parser):
        """What to inject, and where."""
        parser.add_argument(
            "--directions", default="", help="comma-separated, e.g. en-de,en-zh (default: all of the project's)"
        )
        parser.add_argument("--kind", choices=["mqm", "perturbation"], default="mqm")
        parser.add_argument("--types", default="", help="comma-separated type names (default: all of the kind)")
        parser.add_argument("--positions", default="", help="head,end for mqm (default: both)")

    def _backend_arguments(self, parser):
        """Who generates, and how fast."""
        parser.add_argument(
            "--backend", default=None, help="rule, openai, batch or vllm (default: INJECTION_BACKEND or rule)"
        )
        parser.add_argument("--model", default="")
        parser.add_argument(
            "--endpoint", default="", help="a configured endpoint's name (LLM_ENDPOINTS; default: the first)"
        )
        parser.add_argument(
            "--base-url",
            default="",
            help="OpenAI-compatible endpoint, e.g. a vLLM server's http://host:8000/v1; "
            "sent no server key unless an endpoint in LLM_ENDPOINTS has this URL",
        )
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--rpm", type=float, default=None, help="requests-per-minute budget")
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
        parser.add_argument("--max-attempts", type=int, default=6, help="tries per item on 429, 5xx and timeouts")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--temperature", type=float, default=0.5)
        parser.add_argument(
            "--engine-option",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="vllm backend: an argument of vllm.LLM, e.g. gpu_memory_utilization=0.5 or "
            "max_model_len=4096 (repeatable; values read as JSON where they parse)",
        )
        parser.add_argument("--no-structured", action="store_true", help="do not ask for JSON-schema output")
        parser.add_argument(
            "--prompt-file",
            action="append",
            default=[],
            metavar="NAME=PATH",
            help="replace a packaged perturbation prompt, e.g. perturbation-omission=my.toml "
            "(its text is stored with the run; its hash marks the candidates' prompt version)",
        )

    def _given_run_arguments(self, parser):
        """The run's name and where it runs; a run given instead of planned; the Batch API files."""
        parser.add_argument("--name", default="", help="run name (unique in the project)")
        parser.add_argument("--queue", action="store_true", help="run on the llm Celery queue instead of here")
        given_run = parser.add_mutually_exclusive_group()
        given_run.add_argument(
            "--resume", type=positive_int, metavar="RUN", help="continue run RUN (its pending items)"
        )
        given_run.add_argument(
            "--retry-failed", type=positive_int, metavar="RUN", help="retry the failed items of run RUN"
        )
        parser.add_argument(
            "--write-batch",
            metavar="FILE",
            help="plan the run (or take --resume RUN) and write its pending items as Batch API JSONL "
            "for `vllm run-batch -i FILE -o OUT --model M`, instead of running it",
        )
        given_run.add_argument(
            "--read-batch-output",
            nargs=2,
            metavar=("RUN", "FILE"),
            help="record the answers of a batch output file (vllm run-batch or OpenAI) for run RUN",
        )

    def handle(self, *args, **opts):
        _check_options(opts)
        if opts["read_batch_output"]:
            self._read_batch_output(*opts["read_batch_output"])
            return
        if opts["resume"] or opts["retry_failed"]:
            run = self._given_run(opts)
        else:
            run = self._planned_run(opts)
        if opts["write_batch"]:
            self._write_batch(run, opts["write_batch"])
            return
        if opts["queue"]:
            from injection.tasks import execute_run_task

            execute_run_task.delay(run.pk)
            self.stdout.write(f"run {run.pk} queued on 'llm'; watch it at /injection/runs/{run.pk}/")
            return
        self._execute(run, quiet=opts.get("verbosity", 1) == 0)

    def _read_batch_output(self, run_id: str, path: str) -> None:
        run = InjectionRun.objects.filter(pk=int(run_id) if run_id.isdigit() else -1).first()
        if run is None:
            raise CommandError(f"no injection run {run_id}")
        try:
            with open(path, encoding="utf-8") as handle:
                run = services.batch_output_import(run=run, text=handle.read())
        except (OSError, ValueError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        self.stdout.write(f"run {run.pk} {run.status}: {run.done} done, {run.failed} failed of {run.total}")

    def _given_run(self, opts) -> InjectionRun:
        """The run of --resume or --retry-failed (its failed items put back to pending), resumed."""
        run_id = opts["resume"] or opts["retry_failed"]
        run = InjectionRun.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"no injection run {run_id}")
        try:
            services.run_check_generates(run=run)
        except services.RunRejected as exc:
            raise CommandError(str(exc)) from None
        if opts["retry_failed"]:
            count = services.run_reset_failed(run=run)
            self.stdout.write(f"{count} failed item(s) of run {run.pk} put back to pending")
        services.run_resume(run=run)
        return run

    def _planned_run(self, opts) -> InjectionRun:
        if not opts["project"]:
            raise CommandError("give a PROJECT (or --resume RUN)")
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project {opts['project']!r}")
        try:
            run = services.run_plan(spec=_run_spec(project, opts))
        except services.RunRejected as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"run {run.pk} ({run.name}): {run.total} item(s), backend {run.backend}, model {run.model}")
        return run

    def _write_batch(self, run: InjectionRun, target: str) -> None:
        try:
            lines = services.batch_file_export(run=run, path=target)
        except OSError as exc:
            raise CommandError(
                f"--write-batch {target}: {exc.strerror}; run {run.pk} is planned, write it with --resume {run.pk} --write-batch FILE"
            ) from None
        self.stdout.write(
            f"{lines} request(s) of run {run.pk} written to {target}; after "
            f"`vllm run-batch -i {target} -o OUT --model {run.model}` run "
            f"`inject --read-batch-output {run.pk} OUT`"
        )

    def _execute(self, run: InjectionRun, *, quiet: bool) -> None:
        """Run it here, with a progress bar, and say how it went."""
        bar = tqdm(total=run.total, unit="item", desc=f"run {run.pk}", disable=quiet)

        def progress(current: InjectionRun) -> None:
            bar.total = current.total
            bar.set_postfix(
                failed=current.failed, tokens=current.prompt_tokens + current.completion_tokens, refresh=False
            )
            bar.update(current.done + current.failed - bar.n)  # tqdm throttles redraws itself

        try:
            run = services.run_execute(run_id=run.pk, progress=progress)
        except BackendUnavailable as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(
            f"run {run.pk} {run.status}: {run.done} done, {run.failed} failed of {run.total}; "
            f"{run.prompt_tokens}+{run.completion_tokens} tokens, est. ${run.cost_usd}"
        )
        if run.failed:
            self.stdout.write(
                f"failed items are listed at /injection/runs/{run.pk}/ ; retry with --retry-failed {run.pk}"
            )


def _check_options(opts) -> None:
    """Options that exclude each other, and a --write-batch file that cannot be written."""
    if opts["queue"] and opts["write_batch"]:
        raise CommandError(
            "--queue and --write-batch exclude each other: a batch file is run by `vllm run-batch`, not by the llm queue"
        )
    if opts["write_batch"]:
        target = Path(opts["write_batch"])
        if target.is_dir():
            raise CommandError(f"--write-batch {target}: is a directory; give a file name")
        if not target.parent.is_dir():
            raise CommandError(f"--write-batch {target}: the directory {target.parent} does not exist")
    if opts["project"] and (opts["resume"] or opts["retry_failed"] or opts["read_batch_output"]):
        raise CommandError(
            "a run given by --resume, --retry-failed or --read-batch-output is of its own project: leave PROJECT out"
        )


def _run_spec(project: Project, opts) -> services.RunSpec:
    from django.conf import settings

    from injection.backends.vllm_engine import parse_engine_options

    try:
        engine_options = parse_engine_options(opts["engine_option"])
    except ValueError as exc:
        raise CommandError(f"--engine-option: {exc}") from None
    return services.RunSpec(
        project=project,
        kind=opts["kind"],
        backend=opts["backend"] or settings.INJECTION_DEFAULT_BACKEND,
        directions=_csv(opts["directions"]),
        error_types=_csv(opts["types"]),
        positions=_csv(opts["positions"]),
        name=opts["name"],
        model=opts["model"],
        endpoint=opts["endpoint"],
        base_url=opts["base_url"],
        concurrency=opts["concurrency"],
        rpm=opts["rpm"],
        seed=opts["seed"],
        temperature=opts["temperature"],
        structured=not opts["no_structured"],
        timeout=opts["timeout"],
        max_attempts=opts["max_attempts"],
        engine_options=engine_options,
        prompt_files=opts["prompt_file"],
    )
