"""The OpenAI Batch API for large runs: one JSONL of requests, uploaded, polled, results joined on
``custom_id``. ``vllm run-batch -i requests.jsonl -o results.jsonl --model M`` reads the same JSONL and writes
the same result lines, so ``build_batch_lines`` / ``parse_batch_output`` serve both.

A submitted batch's id is reported through ``on_submitted`` (the service stores it on the run), and a
resumed run passes it back as ``batch_id``: a batch is paid for once, not once per resume.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from injection.backends.base import Backend, GenerationRequest, GenerationResult, Sampling, register_backend
from injection.backends.openai_chat import OpenAIChatBackend, api_key_for
from injection.domain.prompts import RESPONSE_SCHEMA
from llm_client import ChatRequest

ENDPOINT = "/v1/chat/completions"
TERMINAL = {"completed", "failed", "expired", "cancelled"}


def build_batch_lines(requests: Iterable[GenerationRequest], sampling: Sampling) -> list[dict]:
    lines = []
    for request in requests:
        # the body the chat backend posts for the request
        body = ChatRequest.decoded(
            request.custom_id, request.messages, sampling.model, sampling, RESPONSE_SCHEMA
        ).body()
        lines.append({"custom_id": request.custom_id, "method": "POST", "url": ENDPOINT, "body": body})
    return lines


def to_jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def write_batch_file(path: str | Path, requests: Iterable[GenerationRequest], sampling: Sampling) -> int:
    lines = build_batch_lines(requests, sampling)
    Path(path).write_bytes(to_jsonl(lines))
    return len(lines)


class _Obj:
    """Attribute access over the JSON of a chat completion (what the client would have parsed)."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        value = self._data.get(name) if isinstance(self._data, dict) else None
        if isinstance(value, dict):
            return _Obj(value)
        if isinstance(value, list):
            return [_Obj(v) if isinstance(v, dict) else v for v in value]
        return value


def parse_batch_output(text: str, expected: Iterable[str] = ()) -> dict[str, GenerationResult]:
    """Result lines (OpenAI output/error files or vLLM run-batch output) → results by custom_id.

    Every expected custom_id gets a result: one missing from the output is a retryable failure."""
    results: dict[str, GenerationResult] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            custom_id = str(line["custom_id"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"batch output line {number}: not a result line ({exc})") from None
        response, error = line.get("response") or {}, line.get("error")
        status = response.get("status_code")
        body = response.get("body")
        if error or status != 200 or not isinstance(body, dict):
            message = (error or {}).get("message") if isinstance(error, dict) else error
            message = message or (body or {}).get("error", {}).get("message") if isinstance(body, dict) else message
            results[custom_id] = GenerationResult(
                custom_id,
                error=f"batch line failed (HTTP {status}): {message or 'no body'}",
                retryable=status is None or status == 429 or (status or 0) >= 500,
            )
            continue
        try:
            results[custom_id] = OpenAIChatBackend.read_completion(custom_id, _Obj(body), attempts=1)
        except (IndexError, TypeError, AttributeError) as exc:
            results[custom_id] = GenerationResult(custom_id, error=f"malformed batch result: {exc}", retryable=True)
    for custom_id in expected:
        results.setdefault(
            custom_id, GenerationResult(custom_id, error="missing from the batch output", retryable=True)
        )
    return results


@register_backend
class OpenAIBatchBackend(Backend):
    name = "batch"
    remote = True
    run_settings = (*Backend.run_settings, "poll_interval", "timeout")
    discount = 0.5  # the Batch API bills half the synchronous price

    def __init__(
        self,
        sampling,
        *,
        base_url: str = "",
        key_env: str = "",
        poll_interval: float = 30.0,
        timeout: float = 60.0,
        max_wait: float = 26 * 3600,
        batch_id: str = "",
        on_submitted: Callable[[str], None] | None = None,
        **options,
    ):
        super().__init__(sampling, **options)
        self.base_url = base_url or ""
        self.key_env = key_env  # the variable its configured endpoint names; empty: no server key
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.max_wait = max_wait
        self.batch_id = batch_id
        self.on_submitted = on_submitted
        api_key_for(self.base_url, self.key_env)

    def _client(self):
        from openai import OpenAI

        return OpenAI(
            api_key=api_key_for(self.base_url, self.key_env),
            base_url=self.base_url or None,
            timeout=self.timeout,
            max_retries=5,
        )

    def generate(
        self, requests: Iterable[GenerationRequest], should_stop: Callable[[], bool] = lambda: False
    ) -> Iterator[GenerationResult]:
        requests = list(requests)
        if not requests:
            return
        wanted = {r.custom_id for r in requests}
        client = self._client()
        try:
            if not self.batch_id:
                upload = client.files.create(
                    file=("injection.jsonl", io.BytesIO(to_jsonl(build_batch_lines(requests, self.sampling)))),
                    purpose="batch",
                )
                batch = client.batches.create(input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h")
                self.batch_id = batch.id
                if self.on_submitted:
                    self.on_submitted(batch.id)
            deadline = time.monotonic() + self.max_wait
            while True:
                batch = client.batches.retrieve(self.batch_id)
                if batch.status in TERMINAL:
                    break
                if should_stop():
                    client.batches.cancel(self.batch_id)
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"batch {self.batch_id} still {batch.status} after {self.max_wait:.0f} s")
                time.sleep(self.poll_interval)
            text = ""
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    text += client.files.content(file_id).text + "\n"
            results = parse_batch_output(text, expected=wanted)
            if batch.status != "completed":
                for result in results.values():
                    if result.error == "missing from the batch output":
                        result.error = f"batch {self.batch_id} {batch.status}"
            for custom_id in (r.custom_id for r in requests):
                yield results[custom_id]
        finally:
            client.close()
