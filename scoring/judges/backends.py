"""Judge backends, one registry entry each. Every backend turns ``llm_client.ChatRequest``s into
``ChatResult``s, yielded as they complete.

- ``openai``: any OpenAI-compatible endpoint (OpenAI, ``vllm serve``, others) through the shared
  ``llm_client`` (concurrency, rpm, retries with backoff and jitter, structured output fallback). The
  judges of one process that reach one endpoint with the same limits share one client session, so one
  in-flight window of ``concurrency`` serves them all: metrics scored side by side keep the endpoint busy
  across each other's stage boundaries, and together never exceed the bound;
- ``vllm``: vLLM's in-process engine, imported only when used. vLLM cannot share an environment with
  unbabel-comet, so this runs on a ``.venv-vllm`` worker consuming the ``judge`` queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from llm_client import ChatClient, ChatRequest, ChatResult, ClientUnavailable, RetryPolicy
from llm_client.endpoints import EndpointError, configured_endpoints, endpoint_for
from llm_client.in_process import EngineSlot, import_vllm, sampling_params
from scoring.registry import MetricError

JUDGE_BACKENDS: dict[str, Callable] = {}


def register_judge_backend(name: str):
    def wrap(factory):
        JUDGE_BACKENDS[name] = factory
        return factory

    return wrap


def get_judge_backend(config):
    try:
        factory = JUDGE_BACKENDS[config.backend]
    except KeyError:
        raise MetricError(
            f"unknown judge backend {config.backend!r}; known: {', '.join(sorted(JUDGE_BACKENDS))}"
        ) from None
    return factory(config)


# endpoint and limits -> [open ChatClient, judges using it]
_SESSIONS: dict[tuple, list] = {}
_SESSIONS_LOCK = threading.Lock()


@register_judge_backend("openai")
class OpenAIJudgeBackend:
    def __init__(self, config):
        try:
            # the worker's operator binds keys to endpoints (LLM_ENDPOINTS): a judge URL configured nowhere is
            # sent no key, so a typed URL cannot collect the worker's OPENAI_API_KEY (#36.1)
            endpoint = endpoint_for(configured_endpoints(), name=config.endpoint, base_url=config.base_url)
            settings = {
                "base_url": endpoint.base_url,
                "key_env": endpoint.key_env,
                "concurrency": config.concurrency,
                "rpm": config.rpm,
                "timeout": config.timeout,
                "retry": RetryPolicy(max_attempts=config.max_attempts, base_delay=config.retry_base_delay),
            }
            self._key = tuple(settings.values())  # judges with the same endpoint and limits share a session
            with _SESSIONS_LOCK:
                entry = _SESSIONS.get(self._key)
                if entry is None:
                    entry = _SESSIONS[self._key] = [ChatClient(**settings).open(), 0]
                entry[1] += 1
                self.client = entry[0]
        except (ClientUnavailable, EndpointError) as exc:
            raise MetricError(f"{exc} (--judge-url)") from None

    def stream(
        self, requests: list[ChatRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[ChatResult]:
        return self.client.stream(requests, should_stop)

    def close(self) -> None:
        """This judge is done with the endpoint; the session ends with its last judge."""
        with _SESSIONS_LOCK:
            entry = _SESSIONS.get(self._key)
            if entry is None or entry[0] is not self.client:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _SESSIONS[self._key]
        self.client.close()


_ENGINE = EngineSlot()  # one loaded engine per worker process (kept for the next task)


def release_engine() -> None:
    """Shut a loaded vLLM engine down (its engine-core process keeps the interpreter alive otherwise).
    The CLI calls this before exiting; a worker keeps its engine for the next task of the same model."""
    _ENGINE.release()


@register_judge_backend("vllm")
class VllmJudgeBackend:
    """vLLM in-process. Decoding per request (SamplingParams per prompt), JSON schema through vLLM's
    structured outputs (guided decoding on older releases)."""

    def __init__(self, config, chunk_size: int = 256):
        try:
            self.vllm = import_vllm()
        except ImportError as exc:
            raise MetricError(
                f"the vllm judge backend needs vLLM (run it in .venv-vllm, on the 'judge' queue): {exc}"
            ) from None
        self.config = config
        self.chunk_size = chunk_size

    def _engine(self):
        import json

        key = (self.config.model, json.dumps(self.config.engine_options, sort_keys=True, default=str))
        # another model or options: the old engine's memory is freed first
        return _ENGINE.get(key, lambda: self.vllm.LLM(model=self.config.model, **self.config.engine_options))

    def _params(self, request: ChatRequest):
        return sampling_params(
            self.vllm,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            seed=request.seed,
            json_schema=request.json_schema,
        )

    def stream(
        self, requests: Iterable[ChatRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[ChatResult]:
        requests = list(requests)
        if not requests:
            return
        engine = self._engine()
        for start in range(0, len(requests), self.chunk_size):
            if should_stop():
                return
            chunk = requests[start : start + self.chunk_size]
            try:
                outputs = engine.chat(
                    [list(r.messages) for r in chunk], [self._params(r) for r in chunk], use_tqdm=False
                )
            except Exception as exc:
                for r in chunk:
                    yield ChatResult(
                        r.custom_id, error=f"vllm refused the request: {exc}"[:1000], model=self.config.model
                    )
                continue
            for r, out in zip(chunk, outputs):
                completion = out.outputs[0]
                text = completion.text
                yield ChatResult(
                    custom_id=r.custom_id,
                    text=text if text.strip() else None,
                    error="" if text.strip() else "empty response",
                    model=self.config.model,
                    prompt_tokens=len(out.prompt_token_ids or []),
                    completion_tokens=len(completion.token_ids or []),
                    finish_reason=completion.finish_reason,
                    structured=bool(r.json_schema),
                )
