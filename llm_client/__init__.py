"""One Django-free client for OpenAI-compatible LLM endpoints, shared by injection (error generation) and
scoring (LLM-judge metrics): concurrency and rpm limits, retries with backoff and jitter on 429/5xx/
timeouts, JSON-schema structured output with a plain-text fallback, token counts and cost estimates.

Needs only ``openai`` (and its ``httpx``); installs in the web (.venv) and scoring (.venv-scoring)
environments alike.
"""

from llm_client.answers import (
    MAX_ANSWER_BYTES,
    MAX_JSON_NESTING,
    MAX_RAW_OUTPUT_CHARS,
    AnswerTooLarge,
    NestedTooDeep,
    clip_raw,
    loads_bounded,
    nesting_depth,
)
from llm_client.chat import (
    ChatClient,
    ChatRequest,
    ChatResult,
    ClientUnavailable,
    api_key_for,
    describe,
    read_completion,
    redact,
)
from llm_client.endpoints import (
    Endpoint,
    EndpointError,
    MissingKey,
    configured_endpoints,
    custom_urls_allowed,
    endpoint_for,
)
from llm_client.limits import RateLimiter, RetryPolicy
from llm_client.pricing import estimate_cost, prices

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_JSON_NESTING",
    "MAX_RAW_OUTPUT_CHARS",
    "AnswerTooLarge",
    "NestedTooDeep",
    "clip_raw",
    "loads_bounded",
    "nesting_depth",
    "ChatClient",
    "ChatRequest",
    "ChatResult",
    "ClientUnavailable",
    "Endpoint",
    "EndpointError",
    "MissingKey",
    "RateLimiter",
    "RetryPolicy",
    "configured_endpoints",
    "custom_urls_allowed",
    "endpoint_for",
    "api_key_for",
    "describe",
    "estimate_cost",
    "prices",
    "read_completion",
    "redact",
]
