"""OpenAI-compatible Chat Completions for injection runs: a thin adapter over the shared ``llm_client``
(OpenAI itself, or vLLM or any compatible server through a base URL).

The client runs requests concurrently on its own loop and hands each result over as soon as it arrives;
this adapter only turns injection requests into chat requests (the response schema, the sampling) and
chat results back into generation results. A server that rejects ``response_format`` is asked again in
plain text and the answer parsed robustly (``injection.postprocess``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields

from injection.backends.base import Backend, BackendUnavailable, GenerationRequest, GenerationResult, register_backend
from injection.domain.prompts import RESPONSE_SCHEMA
from llm_client import (
    ChatClient,
    ChatRequest,
    ChatResult,
    ClientUnavailable,
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
    """The chat result's fields of the same names; its finish reason in ``detail``."""
    same = {f.name: getattr(result, f.name) for f in fields(GenerationResult) if f.name != "detail"}
    detail = {"finish_reason": result.finish_reason} if result.finish_reason is not None or not result.error else {}
    return GenerationResult(**same, detail=detail)


@register_backend
class OpenAIChatBackend(Backend):
    name = "openai"
    remote = True
    run_settings = (*Backend.run_settings, "concurrency", "rpm", "max_attempts", "retry_base_delay", "timeout")

    # the options that set up the client, ``ChatClient``'s keyword arguments (its defaults where not given)
    client_settings = ("base_url", "key_env", "concurrency", "rpm", "timeout", "retry", "jitter_seed")

    def __init__(self, sampling, **options):
        settings = {name: options.pop(name) for name in self.client_settings if name in options}
        super().__init__(sampling, **options)
        try:
            self.client = ChatClient(**settings)  # fails early, before any work is planned, when no key is set
        except ClientUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None
        self.base_url = self.client.base_url
        self.timeout = self.client.timeout

    @staticmethod
    def read_completion(custom_id: str, completion, attempts: int) -> GenerationResult:
        """A result from a chat completion object (also used for Batch API output lines)."""
        return to_generation_result(_read_completion(custom_id, completion, attempts))

    def chat_request(self, request: GenerationRequest) -> ChatRequest:
        return ChatRequest.decoded(
            request.custom_id, request.messages, self.sampling.model, self.sampling, RESPONSE_SCHEMA
        )

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        for result in self.client.stream([self.chat_request(r) for r in requests], should_stop):
            yield to_generation_result(result)
