"""What every local OpenAI-compatible stub server shares: a threaded HTTP server on 127.0.0.1, faults
scripted per prompt, JSON answers, chat-completion bodies. Pure standard library.

Two servers build on it: ``tests.support.stub_openai.StubServer`` (error injection: chat, files, batches)
and ``scoring.judges.stub.JudgeStubServer`` (the deterministic judge of tests, benchmarks and dry runs).
Each brings its own handler and state; the fault vocabulary they share is read by ``scripted_failure``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ScriptState:
    """Per-server state: latency, the scripted behaviours, and the lock that guards both."""

    latency: float = 0.0
    timeout_delay: float = 5.0
    scripts: list[tuple[str, list[str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_behaviour(self, prompt: str) -> str:
        """The next scripted behaviour whose match occurs in ``prompt``, else "ok"."""
        with self.lock:
            for match, plan in self.scripts:
                if match in prompt and plan:
                    return plan.pop(0)
        return "ok"

    def delay_for(self, behaviour: str) -> float:
        return self.timeout_delay if behaviour == "timeout" else self.latency


def prompt_of(body: dict) -> str:
    """The text of a chat request's messages (string contents only), joined by newlines."""
    return "\n".join(m.get("content", "") for m in body.get("messages", []) if isinstance(m.get("content"), str))


def scripted_failure(behaviour: str) -> tuple[int, dict, dict] | None:
    """(status, body, headers) of the HTTP failures both stubs script, like api.openai.com's; None otherwise."""
    if behaviour == "429":
        return 429, {"error": {"message": "rate limit reached", "type": "rate_limit_error"}}, {"retry-after": "0.05"}
    if behaviour in ("500", "503"):
        return int(behaviour), {"error": {"message": "server error", "type": "server_error"}}, {}
    return None


def chat_completion(
    content: str | None,
    *,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    finish: str = "stop",
    refusal: str | None = None,
    completion_id: str = "chatcmpl-stub",
) -> dict:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the second waits for a delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload, headers: dict | None = None, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to deliver


class StubHTTPServer(ThreadingHTTPServer):
    """A stub on 127.0.0.1 (port 0: a free one) serving ``handler_class`` over a ``state_class`` state."""

    daemon_threads = True
    allow_reuse_address = True
    handler_class: type[JsonHandler] = JsonHandler
    state_class: type[ScriptState] = ScriptState
    thread_name = "stub-server"

    def __init__(self, port: int = 0, **state):
        super().__init__(("127.0.0.1", port), self.handler_class)
        self.state = self.state_class(**state)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, match: str, *behaviours: str) -> None:
        """The next requests whose prompt contains ``match`` get these behaviours, in order."""
        with self.state.lock:
            self.state.scripts.append((match, list(behaviours)))

    def start(self):
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
