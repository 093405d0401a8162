"""Generation backends, one registry entry each: rule (offline, the default), openai (Chat Completions on
OpenAI or any compatible server such as vLLM), batch (the OpenAI Batch API; `vllm run-batch` reads the same
JSONL) and vllm (the in-process engine, imported only when used)."""

from injection.backends import batch, openai_chat, rule, vllm_engine  # noqa: F401
from injection.backends.base import (
    BACKENDS,
    Backend,
    BackendUnavailable,
    EditTask,
    GenerationRequest,
    GenerationResult,
    Sampling,
    get_backend,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendUnavailable",
    "EditTask",
    "GenerationRequest",
    "GenerationResult",
    "Sampling",
    "get_backend",
]
