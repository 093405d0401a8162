"""The interface every generation backend implements, and the registry that picks one per run.

Pure Python (no Django). A backend turns ``GenerationRequest``s into ``GenerationResult``s and yields each
result as soon as it is known, so the caller can persist it at once: a worker killed mid-run loses only
the requests still in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

from core.domain.errors import Invalid


class BackendUnavailable(Invalid, RuntimeError):
    """The backend cannot run here (a package or a key is missing); the message says what to do."""

    code = "backend_unavailable"


@dataclass(frozen=True)
class EditTask:
    """What to edit, for backends that work on the text itself (the rule backend)."""

    reference: str
    source: str
    language: str
    kind: str
    error_type: str
    position: str
    item_key: str = ""


@dataclass(frozen=True)
class GenerationRequest:
    custom_id: str  # joins results to work items (the InjectionItem id)
    messages: tuple[dict, ...]
    task: EditTask
    prompt_version: str = ""


@dataclass(frozen=True)
class Sampling:
    model: str = ""
    temperature: float = 0.5  # the published XQ-MEval run: GPT-4o, temperature 0.5, seed 42
    seed: int | None = 42
    max_tokens: int = 1024
    structured: bool = True  # ask for the JSON-schema answer where the server supports it

    def as_dict(self) -> dict:
        """The decoding settings (the model is the run's own field)."""
        return {key: value for key, value in asdict(self).items() if key != "model"}


@dataclass
class GenerationResult:
    custom_id: str
    text: str | None = None  # the raw answer (None on failure)
    error: str = ""  # why it failed; empty on success
    retryable: bool = False  # a transient fault that survived the automatic retries
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    detail: dict = field(default_factory=dict)  # e.g. the rule's note, the finish reason

    @property
    def ok(self) -> bool:
        return self.text is not None and not self.error


class Backend:
    """A generation backend. Subclasses set ``name`` and implement ``generate``."""

    name = ""
    #: True for backends that bill by token through a remote API (the cost estimate applies).
    remote = False
    #: The run parameters this backend reads, in the order the run page shows them (#46: a rule run
    #: showed an LLM's temperature and retry settings it never used).
    run_settings: tuple[str, ...] = ("temperature", "seed", "structured")

    def __init__(self, sampling: Sampling, **options):
        self.sampling = sampling
        self.options = options

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        raise NotImplementedError

    def close(self) -> None:
        pass


BACKENDS: dict[str, type[Backend]] = {}


def register_backend(cls: type[Backend]) -> type[Backend]:
    BACKENDS[cls.name] = cls
    return cls


def get_backend(name: str, sampling: Sampling, **options) -> Backend:
    from injection import backends  # noqa: F401  (registers the built-in backends)

    try:
        cls = BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(f"unknown backend {name!r} (known: {', '.join(sorted(BACKENDS))})") from None
    return cls(sampling, **options)
