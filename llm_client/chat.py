"""OpenAI-compatible Chat Completions through the ``openai`` client: OpenAI itself, ``vllm serve`` or any
compatible server through a base URL.

Requests run concurrently on an asyncio loop in a helper thread (``concurrency`` in flight at most, starts
spaced by the ``rpm`` budget); each result is handed to the caller's thread as soon as it arrives, so the
caller parses and persists it there while the loop keeps the endpoint busy (no per-result work on the
request loop). JSON-schema structured output is asked for per request; a server that rejects
``response_format`` is asked again in plain text (for the rest of the run) and the result says so. The API
key comes from the variable the endpoint's configuration names (``llm_client.endpoints``), read at the
point of use, never stored or logged; a URL no operator configured gets no key.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llm_client.answers import MAX_ANSWER_BYTES, AnswerTooLarge, NestedTooDeep, loads_bounded, read_capped
from llm_client.endpoints import Endpoint, MissingKey, configured_endpoints
from llm_client.limits import PrioritySlots, RateLimiter, RetryPolicy

logger = logging.getLogger(__name__)

_DONE = object()
# After a cancel, how long requests already in flight may still answer (and be saved) before they are dropped,
# and how often the client looks for the cancel.
CANCEL_GRACE_S = 2.0
STOP_POLL_S = 0.1


class ClientUnavailable(RuntimeError):
    """The client cannot run here (no key, no package); the message says what to do."""


@dataclass(frozen=True)
class ChatRequest:
    custom_id: str
    messages: tuple[dict, ...]
    model: str
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    # {"name": ..., "schema": {...}, "strict": True}: sent as response_format json_schema when given.
    json_schema: dict | None = None
    extra: dict = field(default_factory=dict)  # further body fields (top_p, stop, ...)

    @classmethod
    def decoded(cls, custom_id: str, messages: tuple[dict, ...], model: str, decoding, schema: dict | None):
        """A request decoded as ``decoding`` says (its temperature, max_tokens, seed and structured: an injection
        run's ``Sampling``, a judge's ``Decoding``); ``schema`` is sent where it asks for structured output."""
        return cls(
            custom_id=custom_id,
            messages=messages,
            model=model,
            temperature=decoding.temperature,
            max_tokens=decoding.max_tokens,
            seed=decoding.seed,
            json_schema=schema if decoding.structured else None,
        )

    def body(self, structured: bool = True) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(self.messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if structured and self.json_schema:
            body["response_format"] = {"type": "json_schema", "json_schema": self.json_schema}
        body.update(self.extra)
        return body


class Answered:
    """How an answer ended, for a result with ``text``, ``error`` and ``finish_reason`` (``ChatResult``, the
    judges' cached ``scoring.judges.engine.Answer``)."""

    text: str | None
    error: str
    finish_reason: str | None

    @property
    def ok(self) -> bool:
        return self.text is not None and not self.error

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@dataclass
class ChatResult(Answered):
    custom_id: str
    text: str | None = None  # the raw answer (None on failure)
    error: str = ""  # why it failed; empty on success
    retryable: bool = False  # a transient fault that survived the automatic retries (never cache it)
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    finish_reason: str | None = None
    structured: bool = False  # True when the answer was produced under the JSON schema


def api_key_for(base_url: str, key_env: str = "") -> str:
    """The key for ``base_url``: the value of ``key_env`` (the variable its configured endpoint names), or
    ``EMPTY`` when it names none. A server key never goes to a URL it was not configured for (#36.1)."""
    try:
        return Endpoint(name="", base_url=base_url, key_env=key_env).api_key()
    except MissingKey as exc:
        raise ClientUnavailable(str(exc)) from None


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def transient(exc: Exception) -> bool:
    import openai

    if isinstance(
        exc, (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)
    ):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in (408, 409, 429)
    return isinstance(exc, (openai.APIResponseValidationError, ValueError, TypeError, AttributeError))


_KEY_RE = re.compile(r"\b(sk-|key-|Bearer\s+)[A-Za-z0-9_\-*.]{4,}")


def redact(text: str) -> str:
    """Error texts are stored and shown: servers echo (partly masked) keys in 401 messages; drop them."""
    try:
        variables = {"OPENAI_API_KEY", *(e.key_env for e in configured_endpoints() if e.key_env)}
    except ValueError:
        variables = {"OPENAI_API_KEY"}
    for variable in variables:
        key = os.environ.get(variable, "")
        if key and len(key) >= 6:
            text = text.replace(key, "[redacted]")
    return _KEY_RE.sub(lambda m: m.group(1) + "[redacted]", text)


def describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    text = redact(str(exc).replace("\n", " "))[:300]
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {text}"


def _response_format_rejected(exc: Exception) -> bool:
    import openai

    return isinstance(exc, openai.BadRequestError) and any(
        word in str(exc).lower() for word in ("response_format", "json_schema", "structured", "guided")
    )


def read_completion(custom_id: str, completion, attempts: int, structured: bool = False) -> ChatResult:
    """A result from a chat completion object (also used for Batch API output lines)."""
    choice = completion.choices[0]
    message = choice.message
    usage = getattr(completion, "usage", None)
    result = ChatResult(
        custom_id=custom_id,
        model=getattr(completion, "model", "") or "",
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        attempts=attempts,
        finish_reason=choice.finish_reason,
        structured=structured,
    )
    refusal = getattr(message, "refusal", None)
    if refusal or choice.finish_reason == "content_filter":
        result.error = f"refused: {refusal or 'content filter'}"
        result.text = message.content
        return result
    if message.content is None or not message.content.strip():
        result.error = "empty response"
        return result
    if len(message.content) > MAX_ANSWER_BYTES:  # a Batch API line is not read through ``read_capped``
        result.error = str(AnswerTooLarge(MAX_ANSWER_BYTES, len(message.content.encode())))
        return result
    result.text = message.content
    return result


class ChatClient:
    """Sends ``ChatRequest``s to one OpenAI-compatible endpoint and yields ``ChatResult``s as they arrive."""

    def __init__(
        self,
        *,
        base_url: str = "",
        key_env: str = "",
        concurrency: int = 8,
        rpm: float | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        jitter_seed: int | None = None,
        cancel_grace: float = CANCEL_GRACE_S,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ):
        self.base_url = base_url or ""
        self.max_answer_bytes = max_answer_bytes
        self.cancel_grace = cancel_grace
        self.key_env = key_env  # the variable holding this endpoint's key (its configuration names it); empty: none
        self.concurrency = max(1, int(concurrency))
        self.rpm = rpm
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(jitter_seed)
        self.structured_ok = True  # turned off for the rest of the run when the server rejects response_format
        self.requests_sent = 0  # HTTP requests, retries included (the tests count them)
        self._session: tuple[asyncio.AbstractEventLoop, threading.Thread, tuple] | None = None
        self._session_lock = threading.Lock()
        api_key_for(self.base_url, self.key_env)  # fail early, before any work is planned, when no key is set

    def _http_client(self):
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=api_key_for(self.base_url, self.key_env),
            base_url=self.base_url or None,
            timeout=self.timeout,
            max_retries=0,
        )

    def open(self) -> ChatClient:
        """Keep one event loop, HTTP client and in-flight window for every ``stream`` until ``close``.
        Streams from several threads at once then share the ``concurrency`` bound (and the ``rpm`` budget),
        a freed slot going to the stream with the fewest requests left (``PrioritySlots``): pipelines that
        run side by side keep one endpoint's window full across their stages. Without it, each ``stream``
        has a loop and a window of its own."""
        with self._session_lock:
            if self._session is None:
                loop = asyncio.new_event_loop()
                shared = (self._http_client(), PrioritySlots(self.concurrency), RateLimiter(self.rpm))
                thread = threading.Thread(target=loop.run_forever, name="llm-chat-session", daemon=True)
                thread.start()
                self._session = (loop, thread, shared)
        return self

    def close(self) -> None:
        """End the session ``open`` started (after its streams have ended); nothing without one."""
        with self._session_lock:
            session, self._session = self._session, None
        if session is None:
            return
        loop, thread, (client, _, _) = session
        try:
            asyncio.run_coroutine_threadsafe(client.close(), loop).result(timeout=10)
        except Exception:  # a client that cannot close cleanly still has its loop stopped
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()

    async def _post(self, client, body: dict):
        """One chat completion. The body is read as a stream and dropped past ``max_answer_bytes`` (#48.2):
        the client's own parse would hold any size in memory first."""
        import httpx2
        from openai.types.chat import ChatCompletion

        # The client's generic POST (documented for endpoints without a typed helper): the body is already
        # plain JSON, and this skips the typed helper's per-request walk over the messages, the largest
        # client-side CPU cost at high concurrency. Status errors are raised as the typed helper raises them.
        response = await client.post("/chat/completions", cast_to=httpx2.Response, body=body, stream=True)
        data = await read_capped(response, self.max_answer_bytes)
        value = loads_bounded(data)
        if not isinstance(value, dict):
            raise ValueError("malformed response: not a JSON object")
        return ChatCompletion.construct(**value)

    async def _complete(self, client, limiter: RateLimiter, request: ChatRequest) -> ChatResult:

        attempt = 0
        while True:
            attempt += 1
            await limiter.acquire()
            structured = bool(request.json_schema) and self.structured_ok
            try:
                self.requests_sent += 1
                completion = await self._post(client, request.body(structured))
                if not getattr(completion, "choices", None):
                    raise ValueError("malformed response: no choices")
                return read_completion(request.custom_id, completion, attempt, structured)
            except (AnswerTooLarge, NestedTooDeep) as exc:  # the same question gets the same answer: not retried
                return ChatResult(request.custom_id, error=describe(exc), attempts=attempt)
            except Exception as exc:
                if structured and _response_format_rejected(exc):
                    if self.structured_ok:
                        logger.info("server rejects response_format; asking in plain text from now on")
                    self.structured_ok = False
                    attempt -= 1
                    continue
                if not transient(exc):
                    return ChatResult(request.custom_id, error=describe(exc), attempts=attempt)
                if attempt >= self.retry.max_attempts:
                    return ChatResult(request.custom_id, error=describe(exc), retryable=True, attempts=attempt)
                await asyncio.sleep(self.retry.delay(attempt, self._rng, _retry_after(exc)))

    async def _run(
        self, requests: list[ChatRequest], out: queue.Queue, stop: threading.Event, shared: tuple | None = None
    ) -> None:
        # shared: the open session's (HTTP client, slots, rate limiter); else this stream's own
        if shared is None:
            client, slots, limiter = self._http_client(), PrioritySlots(self.concurrency), RateLimiter(self.rpm)
        else:
            client, slots, limiter = shared
        running: set[asyncio.Task] = set()

        async def abandon_after_stop() -> None:
            # A cancel interrupts requests in flight too (#36.5): after a short grace to answer, they are
            # dropped (retry back-offs included), and their items stay pending for a resume.
            while not stop.is_set():
                await asyncio.sleep(STOP_POLL_S)
            await asyncio.sleep(self.cancel_grace)
            for task in list(running):
                task.cancel()

        watcher = asyncio.create_task(abandon_after_stop())

        async def one(request: ChatRequest) -> None:
            try:
                result = await self._complete(client, limiter, request)
            except Exception as exc:
                result = ChatResult(request.custom_id, error=describe(exc), retryable=True)
            finally:
                slots.release()
            out.put(result)

        try:
            for index, request in enumerate(requests):
                await slots.acquire(len(requests) - index)  # requests this stream has left to send
                if stop.is_set():
                    slots.release()
                    break
                task = asyncio.create_task(one(request))
                running.add(task)
                task.add_done_callback(running.discard)
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        finally:
            watcher.cancel()
            if shared is None:
                await client.close()

    def _start(
        self, requests: list[ChatRequest], out: queue.Queue, stop: threading.Event, failure: list[BaseException]
    ) -> Callable[[], None]:
        """Start sending ``requests``: on the open session's loop, in its shared window, or else on a loop and
        thread of their own. Results go to ``out``, then ``_DONE``; a failure of the run to ``failure``.
        Returns what waits for the run to end."""
        session = self._session
        if session is not None:

            def finished(job) -> None:
                if job.cancelled():
                    failure.append(RuntimeError("the client's session was closed while a stream ran"))
                elif job.exception() is not None:
                    failure.append(job.exception())
                out.put(_DONE)

            job = asyncio.run_coroutine_threadsafe(self._run(requests, out, stop, session[2]), session[0])
            job.add_done_callback(finished)

            def wait() -> None:
                try:
                    job.result(timeout=self.timeout + 5)
                except Exception:
                    pass  # recorded by ``finished``

            return wait

        def worker() -> None:
            try:
                asyncio.run(self._run(requests, out, stop))
            except BaseException as exc:
                failure.append(exc)
            finally:
                out.put(_DONE)

        thread = threading.Thread(target=worker, name="llm-chat", daemon=True)
        thread.start()
        return lambda: thread.join(timeout=self.timeout + 5)

    def stream(
        self, requests: Iterable[ChatRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[ChatResult]:
        """Results in completion order. ``requests`` is consumed on the loop thread: give a list (or an
        iterator that does no I/O)."""
        out: queue.Queue = queue.Queue()
        stop = threading.Event()
        failure: list[BaseException] = []
        wait = self._start(list(requests), out, stop, failure)
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
            wait()
        if failure:
            raise failure[0]
