"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests, benchmarks and offline demos.

Pure standard library, no Django. It speaks the parts of the API the injection backends use:
``POST /v1/chat/completions``, ``POST /v1/files``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``. The real ``openai`` client talks to it over
HTTP.

By default it answers like a well-behaved model: it reads the prompt, makes one edit of the requested
type in the requested half, and answers in JSON when a response schema was asked for, else in free text
after "Updated sentence:". Faults are scripted per request: ``script(match, "429", "500", "ok")`` makes the
next requests whose prompt contains ``match`` fail with 429, then 500, then succeed. Behaviours: ok, 401, 429,
500, 503, timeout, empty, refuse, truncated (cut at max_tokens), malformed (a body that is not JSON), nochoices, offtarget (a different
sentence), same (the reference unchanged), prose (a chatty answer with markdown around the sentence), verbose
(100,000 characters of reasoning before the sentence), huge (a 3 MB answer), huge-stream (the same without a
Content-Length, written in chunks), deep (a JSON answer nested 100,000 deep).

Run by hand: ``python -m tests.support.stub_openai --port 8011 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import itertools
import json
import re
import time
from dataclasses import dataclass, field

from llm_client.stub_server import (
    JsonHandler,
    ScriptState,
    StubHTTPServer,
    chat_completion,
    prompt_of,
    scripted_failure,
)

_SENTENCE_RE = re.compile(r"Sentence: (<head>.*</end>)")
_HALVES_RE = re.compile(r"<head>(.*)</head>\s?<end>(.*)</end>", re.S)
_TYPE_RE = re.compile(r"introduce exactly one (\w+) error")
_HALF_RE = re.compile(r"into the <(head|end)> half")
_SOURCE_RE = re.compile(r"English source: (.*)")
_ORIGINAL_RE = re.compile(r"\nSentence: (.*)\n\nChanged sentence:")


def _edit_half(half: str, error_type: str, source: str) -> str:
    """One edit inside a half: token edits where the half has spaces, character edits otherwise."""
    english = " ".join(w.strip(".,") for w in source.split()[1:3]) or "untranslated words"
    if " " in half.strip():
        words = half.split(" ")
        i = min(1, len(words) - 1)
        if error_type == "Omission":
            return " ".join(words[:i] + words[i + 1 :]) if len(words) > 1 else ""
        if error_type == "Addition":
            return " ".join(words[: i + 1] + ["zusätzlich", "erfunden"] + words[i + 1 :])
        if error_type == "Untranslated":
            return " ".join(words[:i] + [english] + words[i + 1 :])
        return " ".join(words[:i] + ["Falschwort"] + words[i + 1 :])
    i = min(1, max(0, len(half) - 3))
    if error_type == "Omission":
        return half[:i] + half[i + 2 :]
    if error_type == "Addition":
        return half[: i + 1] + "额外" + half[i + 1 :]
    if error_type == "Untranslated":
        return half[:i] + english + half[i + 2 :]
    return half[:i] + "错误" + half[i + 2 :]


def default_answer(prompt: str) -> tuple[str, str]:
    """(the edited sentence, the reference) for an MQM or a perturbation prompt."""
    marked = _SENTENCE_RE.search(prompt)
    if marked:
        halves = _HALVES_RE.search(marked.group(1))
        head, end = halves.group(1), halves.group(2)
        sep = " " if " " in marked.group(1) and not marked.group(1).count("</head><end>") else ""
        reference = head + sep + end
        error_type = (_TYPE_RE.search(prompt) or [None, "Mistranslation"])[1]
        which = (_HALF_RE.search(prompt) or [None, "head"])[1]
        source = (_SOURCE_RE.search(prompt) or [None, ""])[1]
        if which == "head":
            head = _edit_half(head, error_type, source)
        else:
            end = _edit_half(end, error_type, source)
        return (head + sep + end).strip(), reference
    original = _ORIGINAL_RE.search(prompt)
    reference = original.group(1) if original else prompt.strip().splitlines()[-1]
    words = reference.split(" ")
    if len(words) > 2:
        return " ".join(words[:1] + words[2:]), reference  # drop one word
    return reference[:1] + reference[2:], reference


@dataclass
class Call:
    path: str
    behaviour: str
    prompt: str
    at: float


@dataclass
class StubState(ScriptState):
    reject_response_format: bool = False
    batch_polls_before_done: int = 1
    calls: list[Call] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict] = field(default_factory=dict)
    ids: itertools.count = field(default_factory=itertools.count)

    def new_id(self, prefix: str) -> str:
        with self.lock:
            return f"{prefix}-{next(self.ids)}"


def _completion(
    content: str | None, prompt: str, *, model: str, refusal: str | None = None, finish: str = "stop"
) -> dict:
    return chat_completion(
        content,
        model=model,
        refusal=refusal,
        finish=finish,
        prompt_tokens=len(prompt.split()),
        completion_tokens=len((content or "").split()),
    )


def answer_chat(state: StubState, body: dict, behaviour: str) -> tuple[int, dict | bytes, dict]:
    """(status, JSON body or raw bytes, headers) for one chat completion request."""
    prompt = prompt_of(body)
    model = body.get("model", "stub")
    structured = bool(body.get("response_format"))
    if structured and state.reject_response_format:
        return (
            400,
            {"error": {"message": "response_format is not supported by this server", "type": "invalid_request_error"}},
            {},
        )
    failure = scripted_failure(behaviour)
    if failure:
        return failure
    if behaviour == "401":
        # Like api.openai.com: the message echoes part of the key that was sent.
        return (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided: sk-secr*********-123. You can find your API key at ...",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            {},
        )
    if behaviour == "malformed":
        return 200, b'{"id": "chatcmpl-stub", "choices": [ {"message": ', {}
    if behaviour == "nochoices":
        return (
            200,
            {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model, "choices": []},
            {},
        )
    if behaviour == "empty":
        return 200, _completion("", prompt, model=model), {}
    if behaviour == "refuse":
        return 200, _completion(None, prompt, model=model, refusal="I can't help with introducing errors."), {}
    if behaviour in ("huge", "huge-stream"):
        return 200, _completion("Updated sentence: " + "sehr " * 600_000, prompt, model=model), {}
    if behaviour == "deep":
        content = '{"updated_sentence": ' + "[" * 100_000 + "]" * 100_000 + "}"
        return 200, _completion(content, prompt, model=model), {}
    edited, reference = default_answer(prompt)
    if behaviour == "truncated":  # the answer stopped at max_tokens, mid-sentence
        cut = (
            json.dumps({"updated_sentence": edited}, ensure_ascii=False)
            if structured
            else f"Updated sentence: {edited}"
        )
        return 200, _completion(cut[: len(cut) // 2], prompt, model=model, finish="length"), {}
    if behaviour == "offtarget":
        edited = "The weather in Paris was lovely yesterday and nobody mentioned the topic at all."
    elif behaviour == "same":
        edited = reference
    if behaviour == "verbose":
        content = "Reasoning: " + "ich denke nach " * 6_700 + f"\nUpdated sentence: {edited}"
    elif structured:
        content = json.dumps({"updated_sentence": edited}, ensure_ascii=False)
    elif behaviour == "prose":
        content = f"Sure! Here is the result.\n\n1. I selected a segment.\n2. I edited it.\n\n**Updated sentence:** {edited}\n\nLet me know if you need more."
    else:
        content = f"Step 1: selected a sub-part.\nStep 2: edited it.\nUpdated sentence: {edited}"
    return 200, _completion(content, prompt, model=model), {}


class _Handler(JsonHandler):
    server: StubServer

    def do_POST(self):
        state = self.server.state
        raw = self._body()
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            body = json.loads(raw or b"{}")
            prompt = prompt_of(body)
            # A server without structured output refuses before any scripted behaviour is used up.
            behaviour = (
                "no-json-mode"
                if body.get("response_format") and state.reject_response_format
                else state.next_behaviour(prompt)
            )
            with state.lock:
                state.calls.append(Call(path, behaviour, prompt, time.monotonic()))
            if state.delay_for(behaviour):
                time.sleep(state.delay_for(behaviour))
            status, payload, headers = answer_chat(state, body, behaviour)
            if behaviour == "huge-stream":
                return self._send_unsized(payload)
            return self._send(status, payload, headers)
        if path.endswith("/files"):
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
            )
            data, purpose, filename = b"", "", "upload.jsonl"
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name == "file":
                    data = part.get_payload(decode=True)
                    filename = part.get_filename() or filename
                elif name == "purpose":
                    purpose = part.get_content().strip()
            file_id = state.new_id("file")
            state.files[file_id] = data
            with state.lock:
                state.calls.append(Call(path, "upload", "", time.monotonic()))
            return self._send(
                200,
                {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(data),
                    "created_at": int(time.time()),
                    "filename": filename,
                    "purpose": purpose,
                    "status": "processed",
                },
            )
        if path.endswith("/batches"):
            body = json.loads(raw or b"{}")
            batch_id = state.new_id("batch")
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body.get("endpoint"),
                "input_file_id": body.get("input_file_id"),
                "completion_window": body.get("completion_window"),
                "status": "validating",
                "created_at": int(time.time()),
                "output_file_id": None,
                "error_file_id": None,
                "_polls": 0,
            }
            state.batches[batch_id] = batch
            with state.lock:
                state.calls.append(Call(path, "batch", "", time.monotonic()))
            return self._send(200, {k: v for k, v in batch.items() if not k.startswith("_")})
        match = re.match(r".*/batches/([^/]+)/cancel$", path)
        if match and match.group(1) in state.batches:
            batch = state.batches[match.group(1)]
            batch["status"] = "cancelled"
            return self._send(200, {k: v for k, v in batch.items() if not k.startswith("_")})
        return self._send(404, {"error": {"message": f"no route {path}"}})

    def _send_unsized(self, payload: dict) -> None:
        """A body without a Content-Length, in 64 KiB writes, ended by closing the connection: only a
        client that counts what it reads can stop it early."""
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            for start in range(0, len(data), 65536):
                self.wfile.write(data[start : start + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading

    def do_GET(self):
        state = self.server.state
        path = self.path.split("?")[0]
        match = re.match(r".*/files/([^/]+)/content$", path)
        if match and match.group(1) in state.files:
            return self._send(200, state.files[match.group(1)], content_type="application/octet-stream")
        match = re.match(r".*/batches/([^/]+)$", path)
        if match and match.group(1) in state.batches:
            batch = state.batches[match.group(1)]
            batch["_polls"] += 1
            if batch["status"] in ("validating", "in_progress"):
                batch["status"] = "in_progress"
                if batch["_polls"] > state.batch_polls_before_done:
                    self._complete_batch(batch)
            return self._send(200, {k: v for k, v in batch.items() if not k.startswith("_")})
        return self._send(404, {"error": {"message": f"no route {path}"}})

    def _complete_batch(self, batch: dict) -> None:
        state = self.server.state
        out, errors = [], []
        for line in state.files[batch["input_file_id"]].decode().splitlines():
            if not line.strip():
                continue
            request = json.loads(line)
            prompt = "\n".join(m.get("content", "") for m in request["body"]["messages"])
            behaviour = state.next_behaviour(prompt)
            with state.lock:
                state.calls.append(Call("batch-line", behaviour, prompt, time.monotonic()))
            status, payload, _ = answer_chat(state, request["body"], "ok" if behaviour == "timeout" else behaviour)
            if status != 200 or isinstance(payload, bytes):
                errors.append(
                    {
                        "id": "req",
                        "custom_id": request["custom_id"],
                        "response": {"status_code": status, "body": payload if isinstance(payload, dict) else None},
                        "error": {"code": str(status), "message": "scripted failure"},
                    }
                )
            else:
                out.append(
                    {
                        "id": "req",
                        "custom_id": request["custom_id"],
                        "response": {"status_code": 200, "body": payload},
                        "error": None,
                    }
                )
        output_id, error_id = state.new_id("file"), state.new_id("file")
        state.files[output_id] = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in out).encode()
        state.files[error_id] = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in errors).encode()
        batch.update(status="completed", output_file_id=output_id, error_file_id=error_id if errors else None)


class StubServer(StubHTTPServer):
    request_queue_size = 256
    handler_class = _Handler
    state_class = StubState
    thread_name = "openai-stub"

    def calls_matching(self, match: str) -> list[Call]:
        with self.state.lock:
            return [c for c in self.state.calls if match in c.prompt]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each chat answer")
    parser.add_argument(
        "--no-json-mode", action="store_true", help="reject response_format like a server without structured output"
    )
    args = parser.parse_args()
    server = StubServer(args.port, latency=args.latency, reject_response_format=args.no_json_mode)
    print(f"stub OpenAI-compatible server on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()


if __name__ == "__main__":
    main()
