"""OpenAI-compatible Chat Completions through the ``openai`` client: OpenAI itself, or vLLM or any
compatible server through a base URL.

Requests run concurrently on an asyncio loop in a helper thread (``concurrency`` in flight at most, starts
spaced by the ``rpm`` budget); each result is handed to the caller's thread as soon as it arrives, so the
caller persists it at once. JSON-schema structured output is asked for where the server supports it; a
server that rejects ``response_format`` is asked again in plain text and the answer parsed robustly
(``injection.postprocess``). The API key comes from OPENAI_API_KEY at the point of use and is never stored
or logged.
"""
from __future__ import annotations

import asyncio
import logging
import os
import queue
import random
import re
import threading
from typing import Callable, Iterable, Iterator

from injection.backends.base import Backend, BackendUnavailable, GenerationRequest, GenerationResult, register_backend
from injection.backends.limits import RateLimiter, RetryPolicy
from injection.domain.prompts import RESPONSE_SCHEMA

logger = logging.getLogger(__name__)

_DONE = object()


def api_key_for(base_url: str) -> str:
    key = os.environ.get("OPENAI_API_KEY", "")
    if key:
        return key
    if base_url:
        return "EMPTY"  # vLLM and most self-hosted servers accept any key
    raise BackendUnavailable("the OpenAI API needs OPENAI_API_KEY in the environment (or give --base-url for a local server)")


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _transient(exc: Exception) -> bool:
    import openai

    if isinstance(exc, (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in (408, 409, 429)
    return isinstance(exc, (openai.APIResponseValidationError, ValueError, TypeError, AttributeError))


_KEY_RE = re.compile(r"\b(sk-|key-|Bearer\s+)[A-Za-z0-9_\-*.]{4,}")


def redact(text: str) -> str:
    """Error texts are stored and shown: servers echo (partly masked) keys in 401 messages; drop them."""
    key = os.environ.get("OPENAI_API_KEY", "")
    if key and len(key) >= 6:
        text = text.replace(key, "[redacted]")
    return _KEY_RE.sub(lambda m: m.group(1) + "[redacted]", text)


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    text = redact(str(exc).replace("\n", " "))[:300]
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {text}"


def _response_format_rejected(exc: Exception) -> bool:
    import openai

    return isinstance(exc, openai.BadRequestError) and any(
        word in str(exc).lower() for word in ("response_format", "json_schema", "structured", "guided")
    )


@register_backend
class OpenAIChatBackend(Backend):
    name = "openai"
    remote = True

    def __init__(self, sampling, *, base_url: str = "", concurrency: int = 8, rpm: float | None = None,
                 timeout: float = 60.0, retry: RetryPolicy | None = None, jitter_seed: int | None = None, **options):
        super().__init__(sampling, **options)
        self.base_url = base_url or ""
        self.concurrency = max(1, int(concurrency))
        self.rpm = rpm
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(jitter_seed)
        self._structured = sampling.structured
        api_key_for(self.base_url)  # fail early, before any work is planned, when no key is set

    # -- one request ---------------------------------------------------------------------------------

    def _body(self, request: GenerationRequest, structured: bool) -> dict:
        body = {
            "model": self.sampling.model,
            "messages": list(request.messages),
            "temperature": self.sampling.temperature,
            "max_tokens": self.sampling.max_tokens,
        }
        if self.sampling.seed is not None:
            body["seed"] = self.sampling.seed
        if structured:
            body["response_format"] = {"type": "json_schema", "json_schema": RESPONSE_SCHEMA}
        return body

    @staticmethod
    def read_completion(custom_id: str, completion, attempts: int) -> GenerationResult:
        """A result from a chat completion object (also used for Batch API output lines)."""
        choice = completion.choices[0]
        message = choice.message
        usage = getattr(completion, "usage", None)
        result = GenerationResult(
            custom_id=custom_id,
            model=getattr(completion, "model", "") or "",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            attempts=attempts,
            detail={"finish_reason": choice.finish_reason},
        )
        refusal = getattr(message, "refusal", None)
        if refusal or choice.finish_reason == "content_filter":
            result.error = f"refused: {refusal or 'content filter'}"
            result.text = message.content
            return result
        if message.content is None or not message.content.strip():
            result.error = "empty response"
            return result
        result.text = message.content
        return result

    async def _complete(self, client, limiter: RateLimiter, request: GenerationRequest) -> GenerationResult:
        from openai.types.chat import ChatCompletion

        attempt = 0
        while True:
            attempt += 1
            await limiter.acquire()
            structured = self._structured
            try:
                # The client's generic POST (documented for endpoints without a typed helper): the body is
                # already plain JSON, and this skips the typed helper's per-request walk over the messages,
                # the largest client-side CPU cost at high concurrency. Errors and parsing are the same.
                completion = await client.post("/chat/completions", cast_to=ChatCompletion, body=self._body(request, structured))
                if not getattr(completion, "choices", None):
                    raise ValueError("malformed response: no choices")
                return self.read_completion(request.custom_id, completion, attempt)
            except Exception as exc:  # noqa: BLE001 — classified below, never swallowed silently
                if structured and _response_format_rejected(exc):
                    if self._structured:
                        logger.info("server rejects response_format; asking in plain text from now on")
                    self._structured = False
                    attempt -= 1
                    continue
                if not _transient(exc):
                    return GenerationResult(request.custom_id, error=_describe(exc), attempts=attempt)
                if attempt >= self.retry.max_attempts:
                    return GenerationResult(request.custom_id, error=_describe(exc), retryable=True, attempts=attempt)
                await asyncio.sleep(self.retry.delay(attempt, self._rng, _retry_after(exc)))

    # -- the run -----------------------------------------------------------------------------------------

    async def _run(self, requests: list[GenerationRequest], out: queue.Queue, stop: threading.Event) -> None:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key=api_key_for(self.base_url), base_url=self.base_url or None, timeout=self.timeout, max_retries=0)
        slots = asyncio.Semaphore(self.concurrency)
        limiter = RateLimiter(self.rpm)
        running: set[asyncio.Task] = set()

        async def one(request: GenerationRequest) -> None:
            try:
                result = await self._complete(client, limiter, request)
            except Exception as exc:  # noqa: BLE001 — an unexpected fault still becomes a visible failure
                result = GenerationResult(request.custom_id, error=_describe(exc), retryable=True)
            finally:
                slots.release()
            out.put(result)

        try:
            for request in requests:
                await slots.acquire()
                if stop.is_set():
                    slots.release()
                    break
                task = asyncio.create_task(one(request))
                running.add(task)
                task.add_done_callback(running.discard)
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        finally:
            await client.close()

    def generate(self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False) -> Iterator[GenerationResult]:
        requests = list(requests)
        out: queue.Queue = queue.Queue()
        stop = threading.Event()
        failure: list[BaseException] = []

        def worker() -> None:
            try:
                asyncio.run(self._run(requests, out, stop))
            except BaseException as exc:  # noqa: BLE001 — re-raised in the caller's thread
                failure.append(exc)
            finally:
                out.put(_DONE)

        thread = threading.Thread(target=worker, name="openai-chat", daemon=True)
        thread.start()
        try:
            while True:
                try:
                    item = out.get(timeout=0.5)
                except queue.Empty:
                    if should_stop():
                        stop.set()
                    continue
                if item is _DONE:
                    break
                yield item
                if should_stop():
                    stop.set()  # no new requests; those in flight still finish and are handed back
        finally:
            stop.set()
            thread.join(timeout=self.timeout + 5)
        if failure:
            raise failure[0]
