"""The judge layer every LLM metric uses: one backend (an OpenAI-compatible endpoint through the shared
``llm_client``, or vLLM in-process), a persistent cache of raw judgements, token and cost accounting, a
budget, and a dry run.

A metric hands the judge a list of ``Call``s (one pipeline stage for a whole chunk of segments) and gets
the ``Answer``s back in the same order. Calls whose cache key is stored are answered from the cache (no
request); identical calls in one stage are sent once. Each answer is written to the cache the moment it
arrives (in the caller's thread, while the client keeps the endpoint busy), so a run killed mid-way and
resumed never sends an answered request again. Transport failures (retries exhausted, budget stop) are
never cached.

The cache key is the SHA-256 of (model, messages, decoding, JSON schema, prompt version and file hash):
anything that can change the answer changes the key. The store is ``diskcache`` (SQLite underneath), one
directory per run output by default; raw answers stay inspectable (``python -m scoring judge-cache DIR``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llm_client import ChatRequest, ChatResult, estimate_cost
from llm_client.chat import Answered
from llm_client.pricing import prices
from scoring.judges.templates import Template
from scoring.registry import MetricError

CACHE_FORMAT = 1


class BudgetExceeded(MetricError):
    """--max-usd reached: the run stops; answers received so far are cached, a rerun resumes for free."""


@dataclass(frozen=True)
class Decoding:
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    structured: bool = False  # ask for JSON-schema output where the metric offers a schema

    def as_dict(self) -> dict:
        return asdict(self)  # in the cache key and the signature: the fields' order is theirs

    def replace(self, **kw) -> Decoding:
        return Decoding(**{**self.as_dict(), **kw})


JUDGE_BACKENDS = ("openai", "vllm")


def _number(value, name: str, *, low: float, above: bool = False) -> float:
    """A finite number at least ``low`` (more than ``low`` with ``above``), from a number or its text."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < low or (above and number == low):
        raise MetricError(f"judge option {name}={value!r}: a number {'more than' if above else 'at least'} {low:g}")
    return number


def _whole(value, name: str, *, low: int = 1) -> int:
    number = _number(value, name, low=low)
    if number != int(number):
        raise MetricError(f"judge option {name}={value!r}: a whole number of at least {low}")
    return int(number)


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    raise MetricError(f"judge option {name}={value!r}: true or false")


@dataclass(frozen=True)
class JudgeConfig:
    model: str = ""
    endpoint: str = ""  # an endpoint the worker's LLM_ENDPOINTS names (its key with it); empty: the one at base_url
    base_url: str = ""  # a URL no endpoint names is sent no key
    backend: str = "openai"  # openai (any OpenAI-compatible endpoint) | vllm (in-process engine)
    concurrency: int = 32
    rpm: float | None = None
    timeout: float = 120.0
    max_attempts: int = 6
    retry_base_delay: float = 0.5
    cache_dir: str | None = None
    max_usd: float | None = None
    dry_run: bool = False
    decoding: Decoding = field(default_factory=Decoding)
    engine_options: dict = field(default_factory=dict)  # vllm.LLM keyword arguments

    @classmethod
    def from_options(cls, options: dict | None) -> JudgeConfig:
        """The judge settings of a run; a value out of its range is an error naming the option (checked where
        the run is asked for, so that it is not a failed task on a worker later)."""
        o = dict(options or {})
        known = {f for f in cls.__dataclass_fields__ if f != "decoding"}
        unknown = set(o) - known - set(Decoding().as_dict())
        if unknown:
            raise MetricError(
                f"unknown judge option(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known | set(Decoding().as_dict())))}"
            )
        seed = o.pop("seed", None)
        decoding = Decoding(
            temperature=_number(o.pop("temperature", 0.0), "temperature", low=0.0),
            max_tokens=_whole(o.pop("max_tokens", 1024), "max_tokens"),
            seed=None if seed is None else _whole(seed, "seed", low=0),
            structured=_flag(o.pop("structured", False), "structured"),
        )
        if o.get("backend", "openai") not in JUDGE_BACKENDS:
            raise MetricError(f"judge option backend={o['backend']!r}: one of {', '.join(JUDGE_BACKENDS)}")
        base_url = o.get("base_url") or ""
        if not isinstance(base_url, str) or (base_url and not base_url.startswith(("http://", "https://"))):
            raise MetricError(
                f"judge option base_url={base_url!r}: an http:// or https:// URL (e.g. http://host:8000/v1)"
            )
        if not isinstance(o.get("endpoint", ""), str):
            raise MetricError(f"judge option endpoint={o['endpoint']!r}: the name of an endpoint in LLM_ENDPOINTS")
        for name, low in (("concurrency", 1), ("max_attempts", 1)):
            if name in o:
                o[name] = _whole(o[name], name, low=low)
        for name, low, above in (("timeout", 0.0, True), ("retry_base_delay", 0.0, False)):
            if name in o:
                o[name] = _number(o[name], name, low=low, above=above)
        for name in ("rpm", "max_usd"):
            if o.get(name) is not None:
                o[name] = _number(o[name], name, low=0.0, above=True)
        if "dry_run" in o:
            o["dry_run"] = _flag(o["dry_run"], "dry_run")
        return cls(decoding=decoding, **o)

    @property
    def endpoint_kind(self) -> str:
        return {"openai": "openai-compatible", "vllm": "vllm-in-process"}.get(self.backend, self.backend)

    def describe(self) -> dict:
        """What enters a metric's signature (what can change the scores)."""
        return {"model": self.model, "endpoint_kind": self.endpoint_kind, "decoding": self.decoding.as_dict()}


@dataclass
class Call:
    template: Template
    messages: tuple[dict, ...]
    decoding: Decoding
    schema: dict | None = None  # {"name", "schema", "strict"}; sent only when decoding.structured
    owners: tuple[int, ...] = ()  # segment indices (within the chunk) that share this call's cost

    def key(self, model: str) -> str:
        payload = {
            "format": CACHE_FORMAT,
            "model": model,
            "messages": list(self.messages),
            "decoding": self.decoding.as_dict(),
            "schema": self.schema if self.decoding.structured else None,
            "prompt": [self.template.name, self.template.version, self.template.sha256],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class Answer(Answered):
    text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    structured: bool = False
    error: str = ""
    retryable: bool = False  # a transport fault or a budget stop: the segment is redone by the next run
    dry: bool = False


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)  # a dry run's estimate: about four characters per token


@dataclass
class Stats:
    calls: int = 0  # answers used (cache hits included)
    cached: int = 0
    sent: int = 0  # requests sent this run (one per distinct uncached call)
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # estimated cost of all answers used (cached ones at their original price)
    spent_usd: float = 0.0  # estimated cost of the requests sent this run
    dry_calls: int = 0
    dry_prompt_tokens: int = 0
    dry_completion_tokens_max: int = 0
    dry_completion_tokens: int = 0
    dry_cost_usd_max: float = 0.0
    dry_cost_usd: float = 0.0  # with the stub judge's answer lengths as the completion estimate
    by_stage: dict = field(default_factory=dict)

    def merge(self, other: Stats, stage_prefix: str = "") -> None:
        """Add another judge's accounting (CEF's reliability judges) to this one."""
        for name in (
            "calls",
            "cached",
            "sent",
            "failed",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "spent_usd",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for stage, counts in other.by_stage.items():
            mine = self.by_stage.setdefault(f"{stage_prefix}{stage}", {"calls": 0, "cached": 0})
            mine["calls"] += counts["calls"]
            mine["cached"] += counts["cached"]

    def as_dict(self) -> dict:
        out = {
            k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items() if not k.startswith("dry")
        }
        if self.dry_calls:
            out["dry_run"] = {
                k[4:]: (round(v, 6) if isinstance(v, float) else v)
                for k, v in self.__dict__.items()
                if k.startswith("dry")
            }
        return out


def default_cache_dir() -> str:
    return os.environ.get("XQMEVAL_JUDGE_CACHE") or str(Path.home() / ".cache" / "xqmeval" / "judge")


class Judge:
    """One judge model behind one backend, with its cache and accounting."""

    def __init__(self, config: JudgeConfig):
        if not config.model:
            raise MetricError(
                "an LLM-judge metric needs a judge model: give --judge-model (and --judge-url for a server)"
            )
        self.config = config
        self.stats = Stats()
        self._backend = None
        self._cache = None
        self._lock = threading.Lock()
        # called after each answer received (a worker reports calls and cost so far; it throttles itself)
        self.on_answer = None

    # -- resources, opened on first use (building a scorer for its signature costs nothing) ---------------

    @property
    def cache(self):
        if self._cache is None:
            import diskcache

            directory = self.config.cache_dir or default_cache_dir()
            Path(directory).mkdir(parents=True, exist_ok=True)
            self._cache = diskcache.Cache(directory, eviction_policy="none", size_limit=2**40)
        return self._cache

    @property
    def backend(self):
        if self._backend is None:
            from scoring.judges.backends import get_judge_backend

            self._backend = get_judge_backend(self.config)
        return self._backend

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._backend is not None and hasattr(self._backend, "close"):
            self._backend.close()  # its endpoint session is shared; reopened on the next use
            self._backend = None

    def _lookup(self, key: str):
        if self.config.dry_run and self._cache is None:
            directory = Path(self.config.cache_dir or default_cache_dir())
            if not (directory / "cache.db").exists():
                return None  # a dry run writes nothing, not even an empty cache
        return self.cache.get(key)

    # -- one stage ------------------------------------------------------------------------------------------

    def run(self, calls: list[Call], stage: str = "") -> list[Answer]:
        model = self.config.model
        answers: list[Answer | None] = [None] * len(calls)
        pending: dict[str, list[int]] = {}
        for i, call in enumerate(calls):
            key = call.key(model)
            hit = self._lookup(key)
            if hit is not None:
                answers[i] = Answer(
                    **{
                        k: hit[k]
                        for k in (
                            "text",
                            "finish_reason",
                            "prompt_tokens",
                            "completion_tokens",
                            "cost_usd",
                            "structured",
                        )
                    },
                    cached=True,
                )
            else:
                pending.setdefault(key, []).append(i)
        if pending:
            if self.config.dry_run:
                self._dry(calls, pending, answers)
            else:
                self._send(calls, pending, answers)
        self._account(stage, answers)
        return answers  # type: ignore[return-value]

    def _send(self, calls: list[Call], pending: dict[str, list[int]], answers: list) -> None:
        cap = self.config.max_usd
        if cap is not None and self.stats.spent_usd >= cap:
            raise BudgetExceeded(
                f"budget of ${cap:g} reached (spent ${self.stats.spent_usd:.4f}); answers so far are cached, rerun with a higher --max-usd to go on"
            )
        requests = []
        for key, indices in pending.items():
            call = calls[indices[0]]
            requests.append(ChatRequest.decoded(key, call.messages, self.config.model, call.decoding, call.schema))
        # With a budget, requests go out in waves sized by what is left of it at the mean cost per request
        # so far (the first wave: one round of the concurrency), so a run stops close to the budget whatever
        # the thread scheduling; without one, in a single stream.
        queue_ = list(requests)
        while queue_:
            if cap is None:
                wave, queue_ = queue_, []
            else:
                left = cap - self.stats.spent_usd
                if left <= 0:
                    break
                mean = self.stats.spent_usd / self.stats.sent if self.stats.sent else None
                if mean is None:
                    size = self.config.concurrency  # the first wave measures the cost per request
                elif mean == 0:
                    size = len(queue_)  # a model without a price: the budget cannot be reached
                else:
                    size = max(1, int(left / mean))
                wave, queue_ = queue_[:size], queue_[size:]
            for result in self.backend.stream(wave):
                answer = self._store(
                    result, calls[pending[result.custom_id][0]] if result.custom_id in pending else None
                )
                if self.on_answer is not None:
                    self.on_answer(self.stats)
                for i in pending.pop(result.custom_id, []):
                    answers[i] = answer
        for indices in pending.values():  # not sent: the budget stopped the run
            for i in indices:
                answers[i] = Answer(error=f"not sent: budget of ${cap:g} reached", retryable=True)
        if pending:
            raise BudgetExceeded(
                f"budget of ${cap:g} reached (spent ${self.stats.spent_usd:.4f}); answers so far are cached, rerun with a higher --max-usd to go on"
            )

    def _store(self, result: ChatResult, call: Call | None = None) -> Answer:
        self.stats.sent += 1
        cost = float(estimate_cost(self.config.model, result.prompt_tokens, result.completion_tokens))
        self.stats.spent_usd += cost
        if not result.ok:
            # refusals and empty answers are the model's answer too, but they are cheap to ask again and
            # often transient: nothing that failed is cached.
            return Answer(
                error=result.error,
                retryable=True,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost_usd=cost,
            )
        record = {
            "text": result.text,
            "finish_reason": result.finish_reason,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost_usd": cost,
            "structured": result.structured,
            "model": result.model or self.config.model,
            # the request, so that the store explains itself (python -m scoring judge-cache DIR)
            "request": None
            if call is None
            else {
                "model": self.config.model,
                "decoding": call.decoding.as_dict(),
                "messages": list(call.messages),
                "prompt": {
                    "name": call.template.name,
                    "version": call.template.version,
                    "sha256": call.template.sha256,
                },
                "schema": call.schema["name"] if call.schema and call.decoding.structured else None,
            },
            "stored_at": time.time(),
        }
        self.cache.set(result.custom_id, record)  # durable before the next result is handled
        return Answer(
            **{
                k: record[k]
                for k in ("text", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd", "structured")
            }
        )

    def _dry(self, calls: list[Call], pending: dict[str, list[int]], answers: list) -> None:
        from scoring.judges.stub import answer_for_messages

        price = prices().get(self.config.model)
        for _key, indices in pending.items():
            call = calls[indices[0]]
            text = answer_for_messages(list(call.messages), structured=call.decoding.structured)
            p_tok = sum(_estimate_tokens(m["content"]) for m in call.messages) + 4 * len(call.messages)
            c_tok = _estimate_tokens(text)
            s = self.stats
            s.dry_calls += 1
            s.dry_prompt_tokens += p_tok
            s.dry_completion_tokens += c_tok
            s.dry_completion_tokens_max += call.decoding.max_tokens
            if price:
                s.dry_cost_usd_max += (p_tok * price[0] + call.decoding.max_tokens * price[1]) / 1e6
                s.dry_cost_usd += (p_tok * price[0] + c_tok * price[1]) / 1e6
            for i in indices:
                answers[i] = Answer(
                    text=text, finish_reason="stop", prompt_tokens=p_tok, completion_tokens=c_tok, dry=True
                )

    def _account(self, stage: str, answers: list[Answer]) -> None:
        s = self.stats
        st = s.by_stage.setdefault(stage or "judge", {"calls": 0, "cached": 0})
        for a in answers:
            s.calls += 1
            st["calls"] += 1
            if a.cached:
                s.cached += 1
                st["cached"] += 1
            if a.error:
                s.failed += 1
            if not a.dry:
                s.prompt_tokens += a.prompt_tokens
                s.completion_tokens += a.completion_tokens
                s.cost_usd += a.cost_usd


def dump_cache(directory: str | Path, limit: int | None = None):
    """The stored judgements of a cache directory, oldest first (for ``python -m scoring judge-cache``)."""
    import diskcache

    if not (Path(directory) / "cache.db").exists():
        raise MetricError(f"{directory}: no judge cache here (expected cache.db)")
    with diskcache.Cache(str(directory)) as cache:
        keys = list(cache.iterkeys())
        records = [(k, cache.get(k)) for k in keys]
    records.sort(key=lambda kv: (kv[1] or {}).get("stored_at", 0))
    for key, record in records[:limit] if limit else records:
        yield {"key": key, **(record or {})}


class Ledger:
    """Per-segment accounting for one chunk: every answer's tokens and cost, split evenly among the
    segments that share the call (a source-side AskQE stage serves all triplets of its source)."""

    def __init__(self, n: int):
        self.calls = [0.0] * n
        self.cached = [0.0] * n
        self.prompt_tokens = [0.0] * n
        self.completion_tokens = [0.0] * n
        self.cost = [0.0] * n
        self.errors: list[list[str]] = [[] for _ in range(n)]
        self.retryable = [False] * n

    def add(self, calls: Iterable[Call], answers: Iterable[Answer]) -> None:
        for call, answer in zip(calls, answers):
            owners = call.owners
            if not owners:
                continue
            share = 1.0 / len(owners)
            for i in owners:
                self.calls[i] += share
                self.cached[i] += share if answer.cached else 0.0
                self.prompt_tokens[i] += answer.prompt_tokens * share
                self.completion_tokens[i] += answer.completion_tokens * share
                self.cost[i] += answer.cost_usd * share
                if answer.error:
                    self.errors[i].append(answer.error)
                    self.retryable[i] = self.retryable[i] or answer.retryable

    def extras(self) -> dict[str, list[Any]]:
        r = lambda xs, nd=3: [round(x, nd) for x in xs]  # noqa: E731
        return {
            "judge_calls": r(self.calls),
            "judge_cached_calls": r(self.cached),
            "prompt_tokens": r(self.prompt_tokens, 1),
            "completion_tokens": r(self.completion_tokens, 1),
            "cost_usd": r(self.cost, 8),
            "error": ["; ".join(dict.fromkeys(e)) for e in self.errors],
            "retryable": list(self.retryable),
        }
