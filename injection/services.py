"""Write operations of injection runs: plan, execute (resumable, exactly once), cancel, retry failed.

Exactly once: a run's work is its InjectionItem rows, unique per (run, segment, kind, type, position) and
created before anything is generated. Executing a run only takes items still pending; each result is
saved in one transaction together with its item's new status, under a row lock, and the Candidate is
unique on the same key. So a retried or resumed run never creates a second candidate, and a worker
killed mid-run loses at most the requests that were in flight (their items are still pending).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from core import bulk
from core.domain.edit_types import KINDS, MQM, NONE, PERTURBATION, edit_type, resolve_types
from core.domain.errors import Conflict, Invalid
from core.domain.records import fields_of
from core.domain.units import DiffTooLarge
from core.models import GoldSegment, Project
from core.selectors import active_directions
from core.task_retry import retry_note
from injection.backends import BackendUnavailable, EditTask, GenerationRequest, GenerationResult, Sampling, get_backend
from injection.backends.base import BACKENDS
from injection.backends.openai_chat import redact
from injection.domain.checks import run_checks
from injection.domain.postprocess import OutputRejected, candidate_fields, process_output
from injection.domain.prompts import PromptFileError, build_prompt, perturbation_overrides
from injection.models import Candidate, InjectionItem, InjectionRun
from llm_client.answers import clip_raw
from llm_client.endpoints import Endpoint, EndpointError, MissingKey, endpoint_for
from llm_client.limits import RetryPolicy
from llm_client.pricing import estimate_cost

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 1.0  # how often counters are written back and cancellation is looked up
COMMIT_EVERY_N = 32  # results saved per transaction at most …
COMMIT_EVERY_S = 0.25  # … and held at most this long before their commit


class RunRejected(Invalid, ValueError):
    """The run specification is invalid; nothing was written. ``problems`` pairs each problem with the
    option it is about (the command's flag name, e.g. ``directions``; empty: the run as a whole), so the
    command says ``--directions: …`` and the form puts it under its Directions field."""

    code = "run_rejected"

    def __init__(self, message: str | list[tuple[str, str]]):
        self.problems = [("", message)] if isinstance(message, str) else list(message)
        super().__init__(
            "; ".join(f"--{flag}: {text}" if flag else text for flag, text in self.problems),
            self.problems[0][0] or None,
        )


REMOTE_BACKENDS = ("openai", "batch")  # the backends that send requests to an endpoint with a key


@dataclass
class RunSpec:
    project: Project
    kind: str
    backend: str = "rule"
    directions: list[str] = field(default_factory=list)  # empty: all of the project's directions
    error_types: list[str] = field(
        default_factory=list
    )  # empty: the project's types of the kind (all when it names none)
    positions: list[str] = field(default_factory=list)  # empty: each type's positions
    name: str = ""
    model: str = ""
    endpoint: str = (
        ""  # a configured endpoint's name (settings.LLM_ENDPOINTS); empty: the one at base_url, or the first
    )
    base_url: str = ""  # another URL: sent no server key, and from a form only if LLM_ALLOW_CUSTOM_URL is on
    custom_url_allowed: bool = True  # the command line is the operator's; forms pass settings.LLM_ALLOW_CUSTOM_URL
    concurrency: int = 8
    rpm: float | None = None
    seed: int | None = 42
    temperature: float = 0.5
    structured: bool = True
    max_attempts: int = 6
    retry_base_delay: float = 0.5  # seconds; backoff doubles per attempt, with full jitter
    timeout: float = 60.0  # seconds per request
    poll_interval: float = 30.0  # Batch API status polls
    engine_options: dict = field(default_factory=dict)  # keyword arguments of vllm.LLM (vllm backend only)
    prompt_files: list[str] = field(default_factory=list)  # NAME=PATH: a user's perturbation prompt files
    created_by: object = None
    submission: str = ""  # the start form's one-time key: the same form sent twice (a double click) plans one run


def run_ensure(*, project: Project, name: str, defaults: dict) -> InjectionRun:
    """The run named ``name`` that holds candidates made outside an injection run (planted gold items, the
    XQ-MEval import), made once with ``defaults``."""
    run, _ = InjectionRun.objects.get_or_create(project=project, name=name, defaults=defaults)
    return run


def run_totals_set(*, run: InjectionRun) -> InjectionRun:
    """Such a run's counters: every candidate it holds is done."""
    run.total = run.done = run.candidates.count()
    run.save(update_fields=["total", "done"])
    return run


def candidate_objects_create(*, candidates: list[Candidate]) -> None:
    """Store whole candidate rows made outside an injection run (planted gold items)."""
    Candidate.objects.bulk_create(candidates)


def candidate_rows_create(*, rows: list[dict]) -> list[int] | None:
    """Store candidate rows given as column dicts in bulk (``core.bulk``: COPY on PostgreSQL); their ids in
    order, or None where the backend cannot reserve them (the caller reads them back)."""
    return bulk.insert_dicts_with_ids(Candidate, rows)


def run_find_submitted(*, project: Project, submission: str) -> InjectionRun | None:
    """The run a start form with this key already planned, if any. Call it inside the transaction that plans
    the run: it locks the project's row, so a second request with the same key waits and then finds the run."""
    if not submission:
        return None
    Project.objects.select_for_update().filter(pk=project.pk).first()
    return InjectionRun.objects.filter(project=project, parameters__submission=submission).first()


def _project_types(project: Project, kind: str) -> list[str]:
    """The types a project was created with for ``kind`` (empty: every registered type of the kind)."""
    if kind == MQM:
        return list(project.error_types or [])
    return list((project.options or {}).get("perturbations", []))


def _endpoint_of(spec: RunSpec, problems: list[tuple[str, str]]) -> Endpoint | None:
    """The endpoint a remote run will call, checked before anything is written: it is configured (or a typed
    URL where that is allowed) and its key is in the environment (#36.1, #37.6)."""
    from django.conf import settings

    try:
        if spec.endpoint or spec.base_url:
            endpoint = endpoint_for(settings.LLM_ENDPOINTS, name=spec.endpoint, base_url=spec.base_url)
        elif settings.LLM_ENDPOINTS:
            endpoint = settings.LLM_ENDPOINTS[0]
        else:
            raise EndpointError("no LLM endpoint is configured (LLM_ENDPOINTS)")
    except EndpointError as exc:
        problems.append(("endpoint", str(exc)))
        return None
    if not endpoint.name and not spec.custom_url_allowed:
        problems.append(
            (
                "base-url",
                f"{endpoint.base_url} is not a configured endpoint, and typed URLs are off (LLM_ALLOW_CUSTOM_URL)",
            )
        )
        return None
    try:
        endpoint.api_key()
    except MissingKey as exc:
        problems.append(("endpoint", str(exc)))
        return None
    return endpoint


def _endpoint_of_run(run: InjectionRun) -> Endpoint:
    """The endpoint a planned run calls now: its configured endpoint only while that still lives at the
    run's URL (else the URL without a key, so a changed configuration never moves a key to an old URL)."""
    from django.conf import settings

    name = (run.parameters or {}).get("endpoint", "")
    try:
        endpoint = endpoint_for(settings.LLM_ENDPOINTS, name=name, base_url=run.base_url)
    except EndpointError:
        return Endpoint(name="", base_url=run.base_url)
    return (
        endpoint
        if endpoint.base_url.rstrip("/") == run.base_url.rstrip("/")
        else Endpoint(name="", base_url=run.base_url)
    )


def run_plan(*, spec: RunSpec) -> InjectionRun:
    """Validate a run and create it with all its work items (pending)."""
    from django.conf import settings

    problems = []
    if spec.kind not in KINDS:
        problems.append(("kind", f"{spec.kind!r} is not one of {', '.join(KINDS)}"))
    if spec.backend not in BACKENDS:
        problems.append(("backend", f"{spec.backend!r} is not one of {', '.join(sorted(BACKENDS))}"))
    types = []
    if not problems:
        try:
            types = resolve_types(spec.kind, spec.error_types or _project_types(spec.project, spec.kind))
        except ValueError as exc:
            problems.append(("types", str(exc)))
    project_directions = {d.code: d for d in active_directions(spec.project)}  # a retired one takes no new work
    codes = spec.directions or sorted(project_directions)
    known = ", ".join(sorted(project_directions)) or "none"
    problems += [
        ("directions", f"{code} is not a direction of project {spec.project.name} ({known})")
        for code in codes
        if code not in project_directions
    ]
    problems += _bounds_problems(spec)
    prompt_files = _prompt_files(spec, problems)
    endpoint = _endpoint_of(spec, problems) if spec.backend in REMOTE_BACKENDS else None
    if problems:
        raise RunRejected(problems)
    model = spec.model or (
        "rule" if spec.backend == "rule" else endpoint.models[0] if endpoint and endpoint.models else settings.LLM_MODEL
    )
    if endpoint is not None and not endpoint.allows(model):
        raise RunRejected(
            [("model", f"{model!r} is not a model of endpoint {endpoint.name} ({', '.join(endpoint.models)})")]
        )
    base_url = endpoint.base_url if endpoint is not None else spec.base_url if spec.backend == "vllm" else ""
    name = spec.name or f"{spec.backend}-{spec.kind}-{timezone.now():%Y%m%d-%H%M%S-%f}"
    with transaction.atomic():
        if InjectionRun.objects.filter(project=spec.project, name=name).exists():
            raise RunRejected([("name", f"a run {name!r} already exists in project {spec.project.name}")])
        run = InjectionRun.objects.create(
            project=spec.project,
            name=name,
            backend=spec.backend,
            model=model,
            base_url=base_url,
            kind=spec.kind,
            directions=codes,
            error_types=[t.name for t in types],
            positions=list(spec.positions),
            parameters=_run_parameters(spec, prompt_files, endpoint),
            created_by=spec.created_by,
        )
        _items_create(run, spec, codes, types)
        run.total = run.items.count()
        run.save(update_fields=["total"])
    return run


def _bounds_problems(spec: RunSpec) -> list[tuple[str, str]]:
    """The run's positions and its settings out of their bounds, each named by its field."""
    problems = []
    allowed_positions = ("head", "end") if spec.kind == MQM else (NONE,)
    for position in spec.positions:
        if position not in allowed_positions:
            problems.append(("positions", f"{position!r} is not one of {', '.join(allowed_positions)} for {spec.kind}"))
    if spec.concurrency < 1:
        problems.append(("concurrency", "must be at least 1"))
    if spec.max_attempts < 1:
        problems.append(("max-attempts", "must be at least 1"))
    if spec.timeout <= 0:
        problems.append(("timeout", "must be positive"))
    # the run form's bounds (injection.forms.RunForm), for the command too
    if spec.rpm is not None and not spec.rpm >= 1:
        problems.append(("rpm", "must be at least 1 (leave it out for no budget)"))
    if not 0 <= spec.temperature <= 2:
        problems.append(("temperature", "must be from 0 to 2"))
    if spec.seed is not None and not -(2**63) <= spec.seed < 2**63:
        problems.append(("seed", "must fit 64 bits (from -2**63 to 2**63-1)"))
    if spec.engine_options and spec.backend != "vllm":
        problems.append(("engine-option", f"only the vllm backend takes engine options, not {spec.backend}"))
    return problems


def _prompt_files(spec: RunSpec, problems: list[tuple[str, str]]) -> dict[str, str]:
    """The perturbation prompts the run replaces (``--prompt-file``); their problems into ``problems``."""
    prompt_files: dict[str, str] = {}
    if spec.prompt_files:
        try:
            prompt_files = perturbation_overrides(spec.prompt_files)
        except PromptFileError as exc:
            problems.append(("", str(exc)))  # its message names the --prompt-file item already
        if spec.kind != PERTURBATION:
            problems.append(("prompt-file", "only perturbation prompts can be replaced (use --kind perturbation)"))
    return prompt_files


def _run_parameters(spec: RunSpec, prompt_files: dict[str, str], endpoint) -> dict:
    """What the run keeps of its settings: the sampling, the client's limits and what it was given besides."""
    return {
        "temperature": spec.temperature,
        "seed": spec.seed,
        "concurrency": spec.concurrency,
        "rpm": spec.rpm,
        "structured": spec.structured,
        "max_attempts": spec.max_attempts,
        "retry_base_delay": spec.retry_base_delay,
        "timeout": spec.timeout,
        "poll_interval": spec.poll_interval,
        **({"engine_options": spec.engine_options} if spec.engine_options else {}),
        **({"prompt_files": prompt_files} if prompt_files else {}),
        **({"submission": spec.submission} if spec.submission else {}),
        **({"endpoint": endpoint.name} if endpoint is not None and endpoint.name else {}),
    }


def _items_create(run: InjectionRun, spec: RunSpec, codes: list[str], types) -> None:
    """The run's work items, pending: each gold segment of its directions, for each type and its positions."""
    segments = GoldSegment.objects.filter(project=spec.project, direction__code__in=codes).only("id")
    items = [
        InjectionItem(run=run, segment_id=segment.id, kind=spec.kind, error_type=t.name, position=position)
        for segment in segments
        for t in types
        for position in (spec.positions or t.positions)
        if position in t.positions
    ]
    InjectionItem.objects.bulk_create(items, batch_size=2000, ignore_conflicts=True)


class RunInProgress(Conflict):
    """A run of the project is already pending or running: a second one is not started beside it."""

    code = "run_in_progress"

    def __init__(self, run: InjectionRun):
        super().__init__(f"run {run.name} of {run.project.name} is already {run.status}; no second run was started")
        self.run = run


def _live_run(project: Project, *, besides: InjectionRun | None = None) -> InjectionRun | None:
    """The project's run that is pending or running, unless its process died (``selectors.stalled_since``: a
    running run whose lease lapsed), which its page shows as such and offers to resume."""
    live = (
        InjectionRun.objects.select_related("project")
        .filter(project=project, status__in=[InjectionRun.Status.PENDING, InjectionRun.Status.RUNNING])
        .exclude(status=InjectionRun.Status.RUNNING, lease_expires_at__lte=timezone.now())
        .order_by("created_at", "pk")
    )
    if besides is not None:
        live = live.exclude(pk=besides.pk)
    return live.first()


def runs_lock(*, project: Project, besides: InjectionRun | None = None) -> None:
    """Inside a transaction: hold the project's row (on SQLite, the write lock an IMMEDIATE transaction
    takes), so that concurrent starts go one after the other, and raise ``RunInProgress`` when a live run
    (other than ``besides``) exists. The lock, not a unique constraint: the command line plans several
    runs of a project before executing them."""
    Project.objects.select_for_update().filter(pk=project.pk).exists()
    live = _live_run(project, besides=besides)
    if live is not None:
        raise RunInProgress(live)


def run_start(*, spec: RunSpec) -> InjectionRun:
    """Plan a run from the browser, one per project at a time (#36.6): ``RunInProgress`` names the live one."""
    with transaction.atomic():
        runs_lock(project=spec.project)
        return run_plan(spec=spec)


# ---- execution ---------------------------------------------------------------------------------------


def _sampling(run: InjectionRun) -> Sampling:
    p = run.parameters
    return Sampling(
        model=run.model, temperature=p.get("temperature", 0.5), seed=p.get("seed"), structured=p.get("structured", True)
    )


def _backend_for(run: InjectionRun):
    p = run.parameters
    options: dict = {}
    if run.backend == "rule":
        donors: dict[str, list[str]] = {}
        for reference, language in GoldSegment.objects.filter(
            project=run.project, direction__code__in=run.directions
        ).values_list("reference", "direction__target__code"):
            donors.setdefault(language, []).append(reference)
        options["donors"] = donors
    elif run.backend == "openai":
        options.update(
            base_url=run.base_url,
            key_env=_endpoint_of_run(run).key_env,
            concurrency=p.get("concurrency", 8),
            rpm=p.get("rpm"),
            retry=RetryPolicy(max_attempts=p.get("max_attempts", 6), base_delay=p.get("retry_base_delay", 0.5)),
            timeout=p.get("timeout", 60.0),
        )
    elif run.backend == "vllm":
        options["engine_options"] = p.get("engine_options") or {}
    elif run.backend == "batch":

        def remember(batch_id: str) -> None:
            InjectionRun.objects.filter(pk=run.pk).update(parameters={**run.parameters, "batch_id": batch_id})
            run.parameters["batch_id"] = batch_id

        options.update(
            base_url=run.base_url,
            key_env=_endpoint_of_run(run).key_env,
            batch_id=p.get("batch_id", ""),
            on_submitted=remember,
            poll_interval=p.get("poll_interval", 30.0),
            timeout=p.get("timeout", 60.0),
        )
    return get_backend(run.backend, _sampling(run), **options)


def _request(item: InjectionItem, sampling: Sampling, prompt_files: dict | None = None) -> GenerationRequest:
    segment = item.segment
    language = segment.direction.target.code
    prompt = build_prompt(
        edit_type(item.kind, item.error_type),
        reference=segment.reference,
        source=segment.source,
        language=language,
        position=item.position,
        structured=sampling.structured,
        overrides=prompt_files,
    )
    return GenerationRequest(
        custom_id=str(item.pk), messages=prompt.messages, task=_edit_task(item), prompt_version=prompt.version
    )


def _edit_task(item: InjectionItem) -> EditTask:
    """What ``item`` asks for: an edit of its segment's reference (with the source), in the target language."""
    segment = item.segment
    return EditTask(
        reference=segment.reference,
        source=segment.source,
        language=segment.direction.target.code,
        item_key=f"{segment.direction.code}#{segment.external_id}",
        **fields_of(item, "kind", "error_type", "position"),
    )


def result_record(
    *,
    run: InjectionRun,
    item_id: int,
    result: GenerationResult,
    request: GenerationRequest,
    discount: float = 0.0,
    remote: bool = True,
) -> InjectionItem:
    """Persist one result: a candidate (with checks) and the item done, or the item failed with its reason.
    Idempotent: an item already done is left as it is."""
    cost = (
        estimate_cost(result.model or run.model, result.prompt_tokens, result.completion_tokens, discount)
        if remote
        else 0
    )
    with transaction.atomic():
        item = InjectionItem.objects.select_for_update().select_related("segment__direction__target").get(pk=item_id)
        if item.status == InjectionItem.Status.DONE:
            return item
        item.attempts += result.attempts
        item.prompt_tokens += result.prompt_tokens
        item.completion_tokens += result.completion_tokens
        item.cost_usd += cost
        item.prompt_version = request.prompt_version
        processed, checks, flags, error = _checked_answer(result, item)
        if processed is None:
            item.status = InjectionItem.Status.FAILED
            item.error = error or "no answer"
            item.retryable = result.retryable
            item.raw_output = clip_raw(result.text)
            item.save()
            return item
        item.status = InjectionItem.Status.DONE
        item.candidate = _candidate_record(run, item, result, request, processed, checks, flags, cost)
        item.error = ""
        item.retryable = False
        item.raw_output = ""
        item.save()
        return item


def _checked_answer(result: GenerationResult, item: InjectionItem) -> tuple:
    """(the processed answer, its checks, its flags, the error): the answer None, with the reason, when there
    is none or it cannot be used."""
    segment = item.segment
    if result.ok and result.detail.get("finish_reason") == "length":
        # A cut-off answer is not a shorter sentence: its text (or its JSON) simply stops.
        return None, None, None, "answer cut off at the token limit (finish_reason length)"
    if not result.ok:
        return None, None, None, result.error
    try:
        processed = process_output(result.text, segment.reference, segment.direction.target.code)
        checks, flags = run_checks(
            candidate_text=processed.text,
            edit=processed.edit,
            regions=processed.regions,
            **fields_of(_edit_task(item), "reference", "source", "language", "kind", "error_type", "position"),
        )
    except OutputRejected as exc:
        return None, None, None, f"unusable answer: {exc}"
    except DiffTooLarge as exc:  # the diff's budget: the item fails with the reason, never spins (#36.5)
        return None, None, None, f"not checked: {exc}"
    return processed, checks, flags, result.error


def _candidate_record(run, item, result, request, processed, checks, flags, cost) -> Candidate:
    """The item's candidate from its checked answer (the one stored before, if any: a result recorded twice)."""
    sampling = _sampling(run).as_dict()
    sampling.update({k: v for k, v in result.detail.items() if v is not None})
    candidate, _ = Candidate.objects.get_or_create(
        run=run,
        segment=item.segment,
        kind=item.kind,
        error_type=item.error_type,
        position=item.position,
        defaults=dict(
            severity=edit_type(item.kind, item.error_type).severity,
            **candidate_fields(processed, item.segment.direction.target.code),
            backend=run.backend,
            model=result.model or run.model,
            prompt_version=request.prompt_version,
            sampling=sampling,
            raw_output=clip_raw(result.text),
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=cost,
            checks=checks,
            flags=flags,
        ),
    )
    return candidate


def _refresh_counters(run: InjectionRun) -> InjectionRun:
    """Recount progress from the items (authoritative; survives killed workers)."""
    totals = run.items.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=InjectionItem.Status.DONE)),
        failed=Count("id", filter=Q(status=InjectionItem.Status.FAILED)),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost=Sum("cost_usd"),
    )
    fields = dict(
        total=totals["total"],
        done=totals["done"],
        failed=totals["failed"],
        prompt_tokens=totals["prompt_tokens"] or 0,
        completion_tokens=totals["completion_tokens"] or 0,
        cost_usd=totals["cost"] or 0,
    )
    InjectionRun.objects.filter(pk=run.pk).update(**fields)
    for key, value in fields.items():
        setattr(run, key, value)
    return run


ProgressCallback = Callable[[InjectionRun], None]


class LeaseLost(Conflict):
    """Another worker (or a person's resume) took the run over; this worker stops without finishing it."""

    code = "lease_lost"


LEASE_SECONDS = 600.0  # a live worker renews far more often; a dead one's lease lapses after this
RENEW_EVERY_S = 30.0


def _lease_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _lease_seconds(run: InjectionRun) -> float:
    # The Batch API backend looks at the lease once per poll: the lease must outlast several polls.
    return max(LEASE_SECONDS, 4 * float(run.parameters.get("poll_interval") or 0))


class RunLease:
    """This worker's hold on a run: taken at most once while no live lease exists, renewed while the worker
    works, and looked at (with the run's cancel flag) no more often than every ``check_every_s``."""

    def __init__(self, run: InjectionRun, owner: str, seconds: float, *, check_every_s: float) -> None:
        self.run, self.owner, self.seconds, self.check_every_s = run, owner, seconds, check_every_s
        self.cancelled = False
        self.restart_clock()

    @classmethod
    def acquire(cls, run: InjectionRun, *, check_every_s: float) -> RunLease | None:
        """Take the run (status running, lease recorded), or None when it is cancelled or another worker's
        lease is live. Conditional, so that a cancel arriving meanwhile is not overwritten."""
        owner, seconds = _lease_owner(), _lease_seconds(run)
        now = timezone.now()
        taken = (
            InjectionRun.objects.filter(pk=run.pk)
            .exclude(status=InjectionRun.Status.CANCELLED)
            .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
            .update(
                status=InjectionRun.Status.RUNNING,
                started_at=run.started_at or now,
                error="",
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=seconds),
            )
        )
        return cls(run, owner, seconds, check_every_s=check_every_s) if taken else None

    def restart_clock(self) -> None:
        self.looked_at = self.renewed_at = time.monotonic()

    def should_stop(self) -> bool:
        """True once the run is cancelled; raises LeaseLost when another worker (or a resume) took it over."""
        now = time.monotonic()
        if now - self.looked_at >= self.check_every_s:
            self.looked_at = now
            row = InjectionRun.objects.filter(pk=self.run.pk).values("status", "lease_owner").first()
            if row is None or row["lease_owner"] != self.owner:
                raise LeaseLost(f"run {self.run.pk} was taken over by {row and row['lease_owner'] or 'nobody'}")
            self.cancelled = row["status"] == InjectionRun.Status.CANCELLED
            if now - self.renewed_at >= min(RENEW_EVERY_S, self.seconds / 4):
                self.renewed_at = now
                renewed = InjectionRun.objects.filter(pk=self.run.pk, lease_owner=self.owner).update(
                    lease_expires_at=timezone.now() + timedelta(seconds=self.seconds)
                )
                if not renewed:
                    raise LeaseLost(f"run {self.run.pk} was taken over")
        return self.cancelled


class ResultBuffer:
    """Results held until one transaction records them: at most ``COMMIT_EVERY_N`` results or
    ``COMMIT_EVERY_S`` seconds. A commit costs far more than a row (an fsync), and a worker killed before the
    commit only loses answers that are re-asked on resume, exactly like requests still in flight."""

    def __init__(
        self,
        run: InjectionRun,
        requests: dict[str, GenerationRequest],
        *,
        discount: float,
        remote: bool,
        progress: ProgressCallback | None,
    ) -> None:
        self.run, self.requests, self.discount, self.remote, self.progress = run, requests, discount, remote, progress
        self.results: list[GenerationResult] = []
        self.oldest_at = 0.0

    def add(self, result: GenerationResult) -> None:
        if not self.results:
            self.oldest_at = time.monotonic()
        self.results.append(result)
        if len(self.results) >= COMMIT_EVERY_N or time.monotonic() - self.oldest_at >= COMMIT_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if not self.results:
            return
        run = self.run
        with transaction.atomic():
            for result in self.results:
                item = result_record(
                    run=run,
                    item_id=int(result.custom_id),
                    result=result,
                    request=self.requests[result.custom_id],
                    discount=self.discount,
                    remote=self.remote,
                )
                # In-memory counts between the periodic recounts, so a progress bar moves with every result.
                if item.status == InjectionItem.Status.DONE:
                    run.done += 1
                elif item.status == InjectionItem.Status.FAILED:
                    run.failed += 1
                run.prompt_tokens += result.prompt_tokens
                run.completion_tokens += result.completion_tokens
        self.results.clear()
        if self.progress:
            self.progress(run)


def run_execute(
    *, run_id: int, progress: ProgressCallback | None = None, check_every_s: float = PROGRESS_EVERY_S
) -> InjectionRun:
    """Generate every pending item of a run. Safe to call again after a crash or a cancel-and-resume; a
    second worker given the same run while the first still holds its lease does nothing."""
    run = InjectionRun.objects.select_related("project").get(pk=run_id)
    lease = RunLease.acquire(run, check_every_s=check_every_s)
    if lease is None:
        run.refresh_from_db()
        if run.status != InjectionRun.Status.CANCELLED:
            logger.info(
                "run %s is being executed by %s (lease until %s): not executed twice",
                run.pk,
                run.lease_owner,
                run.lease_expires_at,
            )
        return run
    run.status = InjectionRun.Status.RUNNING
    items = list(
        run.items.filter(status=InjectionItem.Status.PENDING)
        .select_related("segment__direction__target")
        .order_by("id")
    )
    _refresh_counters(run)
    if progress:
        progress(run)
    buffer: ResultBuffer | None = None
    try:
        backend = _backend_for(run)
        sampling = _sampling(run)
        requests = {str(item.pk): _request(item, sampling, run.parameters.get("prompt_files")) for item in items}
        buffer = ResultBuffer(
            run, requests, discount=getattr(backend, "discount", 0.0), remote=backend.remote, progress=progress
        )
        _generate(run, backend, requests, buffer, lease, progress)
    except LeaseLost as exc:
        # What this worker already holds is kept (recording is exactly-once); the run is the new owner's.
        if buffer is not None:
            buffer.flush()
        logger.warning("run %s: %s; this worker stops", run.pk, exc)
        run.refresh_from_db()
        return run
    except BackendUnavailable as exc:
        _finish(run, InjectionRun.Status.FAILED, str(exc))
        raise
    except Exception as exc:
        _finish(run, InjectionRun.Status.FAILED, redact(f"{type(exc).__name__}: {exc}")[:2000])
        raise
    if InjectionRun.objects.filter(pk=run.pk, status=InjectionRun.Status.CANCELLED).exists():
        pending = run.items.filter(status=InjectionItem.Status.PENDING).count()
        # Requests in flight were given a short grace, then dropped (llm_client.chat.CANCEL_GRACE_S): say so.
        _finish(run, InjectionRun.Status.CANCELLED, f"cancelled with {pending} item(s) pending" if pending else "")
    else:
        _finish(run, InjectionRun.Status.DONE, "")
    if progress:
        progress(run)
    return run


def _generate(run: InjectionRun, backend, requests: dict, buffer: ResultBuffer, lease: RunLease, progress) -> None:
    """The backend's answers to ``requests``, recorded as they come: flushed, with the run's counters and
    ``progress``, every PROGRESS_EVERY_S, and once at the end."""
    lease.restart_clock()
    since = time.monotonic()
    for result in backend.generate(list(requests.values()), lease.should_stop):
        if result.custom_id not in requests:
            logger.warning("run %s: result for unknown custom_id %r ignored", run.pk, result.custom_id)
            continue
        buffer.add(result)
        if time.monotonic() - since >= PROGRESS_EVERY_S:
            since = time.monotonic()
            buffer.flush()
            _refresh_counters(run)
            if progress:
                progress(run)
    buffer.flush()
    backend.close()


def retry_record(*, run_id: int, exc: Exception, attempt: int, of: int, countdown: float) -> None:
    """A run that failed on a transient fault goes back to pending (the page keeps following it) with the
    reason and when it is tried again; a cancel that came meanwhile stands."""
    reason = redact(f"{type(exc).__name__}: {exc}")[:1800]
    InjectionRun.objects.filter(pk=run_id, status=InjectionRun.Status.FAILED).update(
        status=InjectionRun.Status.PENDING, error=retry_note(reason, attempt=attempt, of=of, countdown=countdown)
    )


def _finish(run: InjectionRun, status: str, error: str) -> None:
    _refresh_counters(run)
    pending = run.items.filter(status=InjectionItem.Status.PENDING).count()
    if status == InjectionRun.Status.DONE and pending:
        status = InjectionRun.Status.FAILED
        error = error or f"{pending} item(s) still pending"
    InjectionRun.objects.filter(pk=run.pk).update(
        status=status, error=error, finished_at=timezone.now(), lease_owner="", lease_expires_at=None
    )
    run.status, run.error = status, error


# ---- control ------------------------------------------------------------------------------------------


def run_cancel(*, run: InjectionRun) -> bool:
    """Ask a run to stop: no new requests start; those in flight are still saved. Returns False when the
    run had already finished."""
    updated = InjectionRun.objects.filter(
        pk=run.pk, status__in=[InjectionRun.Status.PENDING, InjectionRun.Status.RUNNING]
    ).update(status=InjectionRun.Status.CANCELLED, finished_at=timezone.now())
    return bool(updated)


def run_reset_failed(*, run: InjectionRun, item_ids: list[int] | None = None) -> int:
    """Put failed items (all, or the given ones) back to pending so that the next execution retries them."""
    with transaction.atomic():
        items = run.items.filter(status=InjectionItem.Status.FAILED)
        if item_ids is not None:
            items = items.filter(pk__in=item_ids)
        count = items.update(status=InjectionItem.Status.PENDING, error="", retryable=False)
        # A finished batch holds the old answers: the retried items go into a new batch.
        run.parameters.pop("batch_id", None)
        InjectionRun.objects.filter(pk=run.pk).update(
            status=InjectionRun.Status.PENDING, finished_at=None, parameters=run.parameters
        )
    _refresh_counters(run)
    return count


def run_check_generates(*, run: InjectionRun) -> None:
    """Refuse to resume or retry a run that no backend generates (the record of an XQ-MEval import):
    executing it would only mark it failed."""
    if run.backend not in BACKENDS:
        raise RunRejected(
            f"run {run.pk} ({run.name}) was recorded by an import (backend {run.backend!r}): it has nothing to generate"
        )


def run_resume(*, run: InjectionRun) -> None:
    """Allow a cancelled, failed or interrupted run to be executed again (pending items only). A person
    resuming takes the run over: the lease is cleared, and a worker that is in fact still running notices
    at its next look and stops."""
    InjectionRun.objects.filter(pk=run.pk).update(lease_owner="", lease_expires_at=None)
    InjectionRun.objects.filter(pk=run.pk).exclude(status=InjectionRun.Status.RUNNING).update(
        status=InjectionRun.Status.PENDING
    )


# ---- offline batch files (`vllm run-batch`, or an OpenAI batch run by hand) -----------------------------


def batch_file_export(*, run: InjectionRun, path) -> int:
    """Write the run's pending items as a Batch API JSONL (custom_id = item id). `vllm run-batch -i FILE -o OUT
    --model M` reads it as it is; ``batch_output_import`` brings the answers back. Returns the line count."""
    from injection.backends.batch import write_batch_file

    sampling = _sampling(run)
    items = (
        run.items.filter(status=InjectionItem.Status.PENDING)
        .select_related("segment__direction__target")
        .order_by("id")
    )
    return write_batch_file(
        path, [_request(item, sampling, run.parameters.get("prompt_files")) for item in items], sampling
    )


def batch_output_import(*, run: InjectionRun, text: str) -> InjectionRun:
    """Record the answers of a batch output file (OpenAI output/error files or `vllm run-batch` output) for
    the run's pending items; lines of other runs or of items already done are ignored, a pending item
    without a line stays pending. Idempotent like every other path into result_record."""
    from injection.backends.batch import parse_batch_output

    sampling = _sampling(run)
    pending = {
        str(item.pk): item
        for item in run.items.filter(status=InjectionItem.Status.PENDING).select_related("segment__direction__target")
    }
    results = parse_batch_output(text)  # raises ValueError naming the bad line: nothing recorded
    with transaction.atomic():
        for custom_id, result in results.items():
            item = pending.get(custom_id)
            if item is not None:
                result_record(
                    run=run,
                    item_id=item.pk,
                    result=result,
                    request=_request(item, sampling, run.parameters.get("prompt_files")),
                    remote=False,
                )
    _refresh_counters(run)
    status = (
        InjectionRun.Status.DONE
        if not run.items.filter(status=InjectionItem.Status.PENDING).exists()
        else InjectionRun.Status.PENDING
    )
    InjectionRun.objects.filter(pk=run.pk).update(status=status)
    run.status = status
    return run
