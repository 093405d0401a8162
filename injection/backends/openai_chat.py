"""OpenAI-compatible Chat Completions for injection runs: a thin adapter over the shared ``llm_client``
(OpenAI itself, or vLLM or any compatible server through a base URL).

The client runs requests concurrently on its own loop and hands each result over as soon as it arrives;
this adapter only turns injection requests into chat requests (the response schema, the sampling) and
chat results back into generation results. A server that rejects ``response_format`` is asked again in
plain text and the answer parsed robustly (``injection.postprocess``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from injection.backends.base import Backend, BackendUnavailable, GenerationRequest, GenerationResult, register_backend
from injection.domain.prompts import RESPONSE_SCHEMA
from llm_client import (
    ChatClient,
    ChatRequest,
    ChatResult,
    ClientUnavailable,
    RetryPolicy,
    redact,  # noqa: F401  (injection.services imports it from here)
)
from llm_client import api_key_for as _api_key_for
from llm_client import read_completion as _read_completion


def api_key_for(base_url: str, key_env: str = "") -> str:
    try:
        return _api_key_for(base_url, key_env)
    except ClientUnavailable as exc:
        raise BackendUnavailable(str(exc)) from None


def to_generation_result(result: ChatResult) -> GenerationResult:
    return GenerationResult(
        custom_id=result.custom_id,
        text=result.text,
        error=result.error,
        retryable=result.retryable,
        model=result.model,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        attempts=result.attempts,
        detail={"finish_reason": result.finish_reason} if result.finish_reason is not None or not result.error else {},
    )


@register_backend
class OpenAIChatBackend(Backend):
    name = "openai"
    remote = True
    run_settings = (*Backend.run_settings, "concurrency", "rpm", "max_attempts", "retry_base_delay", "timeout")

    def __init__(
        self,
        sampling,
        *,
        base_url: str = "",
        key_env: str = "",
        concurrency: int = 8,
        rpm: float | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        jitter_seed: int | None = None,
        **options,
    ):
        super().__init__(sampling, **options)
        api_key_for(base_url or "", key_env)  # fail early, before any work is planned, when no key is set
        self.client = ChatClient(
            base_url=base_url,
            key_env=key_env,
            concurrency=concurrency,
            rpm=rpm,
            timeout=timeout,
            retry=retry,
            jitter_seed=jitter_seed,
        )
        self.base_url = self.client.base_url
        self.timeout = timeout

    @staticmethod
    def read_completion(custom_id: str, completion, attempts: int) -> GenerationResult:
        """A result from a chat completion object (also used for Batch API output lines)."""
        return to_generation_result(_read_completion(custom_id, completion, attempts))

    def chat_request(self, request: GenerationRequest) -> ChatRequest:
        s = self.sampling
        return ChatRequest(
            custom_id=request.custom_id,
            messages=request.messages,
            model=s.model,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            seed=s.seed,
            json_schema=RESPONSE_SCHEMA if s.structured else None,
        )

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        for result in self.client.stream([self.chat_request(r) for r in requests], should_stop):
            yield to_generation_result(result)
