"""A deterministic judge for tests, benchmarks and dry runs: it recognises each packaged prompt (GEMBA-MQM,
AskQE, CEF, DCR), reads the texts out of it and answers in the format asked, by simple word rules. Pure
standard library; ``JudgeStubServer`` serves it as an OpenAI-compatible ``/v1/chat/completions`` on
127.0.0.1, with faults on cue.

Rules (enough to make scores move with the errors in a translation):
- GEMBA-MQM: a translation much shorter than the source is a major omission, much longer a major
  addition; source words left in the translation (4+ letters) are minor untranslated-text errors.
- AskQE: facts are the clauses of the sentence; one question per fact about its longest word; an answer
  is the three words around that word in the text, or "No Answer". Back-translation returns the text.
- CEF: one question per content word ("Does the text mention 'w'?"); YES when the word is in the text,
  NO when a negation precedes it, IDK otherwise (one question per call, or a JSON list for a batch).
- DCR: a candidate sentence is inconsistent when it has words the reference lacks; with the MT
  variant's instructions, reference words the candidate lacks are one more inconsistent entry (the paper's
  instructions let them pass: its blindness to omissions).

Faults: ``server.script(match, "429", "500", "timeout", "truncated", "unparsable", "hang", "ok")``: the
next requests whose prompt contains ``match`` behave so, in order.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
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

_WORD = re.compile(r"\w+", re.U)
_NEG = {"not", "no", "nicht", "kein", "keine", "never", "nie", "不", "没有"}


def _field(prompt: str, label: str) -> str:
    m = re.search(rf"^{re.escape(label)}:? (.*)$", prompt, re.M)
    return m.group(1).strip() if m else ""


def _field_re(prompt: str, pattern: str) -> str:
    m = re.search(pattern, prompt, re.M)
    return m.group(1).strip() if m else ""


def _json_field(prompt: str, label: str) -> list:
    raw = _field(prompt, label)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def _words(text: str) -> list[str]:
    words = _WORD.findall(text.lower())
    if len(words) <= 2 and len(text) > 6:  # unsegmented scripts: characters
        return [c for c in text if c.strip() and _WORD.fullmatch(c) is not None]
    return words


def _content(text: str) -> list[str]:
    return [w for w in _words(text) if len(w) >= 4 or not w.isascii()]


def _arr(items, structured: bool, key: str = "items") -> str:
    return json.dumps({key: items} if structured else items, ensure_ascii=False)


def _gemba(prompt: str, structured: bool) -> str:
    source = _field_re(prompt, r"^Source text \([^)]*\): (.*)$")
    mt = _field_re(prompt, r"^Translation \([^)]*\): (.*)$")
    errors = {"critical": [], "major": [], "minor": []}
    ratio = len(mt) / max(1, len(source))
    if ratio < 0.6:
        errors["major"].append(("accuracy/omission", mt[:20]))
    elif ratio > 1.6:
        errors["major"].append(("accuracy/addition", mt[-20:]))
    mt_words = set(_WORD.findall(mt.lower()))
    for w in _WORD.findall(source):
        if len(w) >= 4 and w.lower() in mt_words and not w[0].isupper():
            errors["minor"].append(("accuracy/untranslated text", w))
    if structured:
        return json.dumps(
            {s: [{"category": c, "span": sp} for c, sp in v] for s, v in errors.items()}, ensure_ascii=False
        )
    lines = []
    for s, items in errors.items():
        lines.append(f"{s.capitalize()}:")
        lines += [f'{c} - "{sp}"' for c, sp in items] or ["no-error"]
    return "\n".join(lines)


def _facts(sentence: str) -> list[str]:
    parts = [p.strip(" .") for p in re.split(r",| and | und |，|、", sentence) if p.strip(" .")]
    return parts or [sentence]


def _key_word(text: str) -> str:
    words = sorted(_content(text), key=lambda w: (-len(w), w))
    return words[0] if words else (text.split() or [""])[0]


def _answer_from(text: str, question: str) -> str:
    m = re.search(r"'([^']+)'", question)
    word = (m.group(1) if m else _key_word(question)).lower()
    tokens = text.split()
    for i, tok in enumerate(tokens):
        if word and word in tok.lower():
            return " ".join(tokens[max(0, i - 1) : i + 2]).strip(".,")
    return "No Answer"


def _cef_answer(text: str, question: str) -> str:
    m = re.search(r"'([^']+)'", question)
    word = (m.group(1) if m else _key_word(question)).lower()
    tokens = [t.lower().strip(".,;:!?") for t in text.split()] if " " in text else list(text)
    for i, tok in enumerate(tokens):
        if word and word in tok:
            return "NO" if any(t in _NEG for t in tokens[max(0, i - 2) : i]) else "YES"
    return "YES" if word and word in text.lower() else "IDK"


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"(?<=[.!?。！？])\s*", text) if p.strip()]
    return parts or [text]


def _dce(prompt: str, mt_variant: bool, structured: bool) -> str:
    reference = _field(prompt, "Reference")
    candidate = _field(prompt, "Candidate")
    ref_words = set(_words(reference))
    entries = []
    for sentence in _sentences(candidate):
        extra = [w for w in _words(sentence) if w not in ref_words]
        if extra:
            entries.append(
                {
                    "sentence": sentence,
                    "reason": f"inconsistent: '{extra[0]}' is not supported by the reference",
                    "consistent": False,
                }
            )
        else:
            entries.append(
                {
                    "sentence": sentence,
                    "reason": "consistent: every statement agrees with the reference",
                    "consistent": True,
                }
            )
    if mt_variant:
        missing = [w for w in _words(reference) if w not in set(_words(candidate))]
        if missing:
            entries.append(
                {
                    "sentence": " ".join(missing[:3]),
                    "reason": f"inconsistent: '{missing[0]}' of the reference is missing",
                    "consistent": False,
                }
            )
    return _arr(entries, structured)


def _amc(prompt: str, structured: bool) -> str:
    reasons = re.findall(r"^\d+\. (.*)$", prompt, re.M)
    marks = [-1 if "inconsistent" in r.lower() or "missing" in r.lower() else 1 for r in reasons]
    return _arr(marks, structured, key="answer")


def answer_for_messages(messages: list[dict], structured: bool = False) -> str:
    """The stub judge's answer to one of the packaged prompts (plain text, or JSON when structured)."""
    # the system message and the question itself: example turns (few-shot prompts) are not the task
    asked = [m for m in messages if m.get("role") == "system"] + [m for m in messages if m.get("role") != "system"][-1:]
    prompt = "\n".join(m.get("content", "") for m in asked if isinstance(m.get("content"), str))
    if "list its errors" in prompt and "Critical:" in prompt:
        return _gemba(prompt, structured)
    if "into atomic facts" in prompt:
        return _arr(_facts(_field(prompt, "Sentence")), structured)
    if "Write questions that check" in prompt:
        facts = _json_field(prompt, "Facts") if "\nFacts:" in prompt else _facts(_field(prompt, "Sentence"))
        return _arr([f"What does the text say about '{_key_word(f)}'?" for f in facts], structured)
    if "Answer each question using only" in prompt:
        text = _field(prompt, "Text")
        return _arr([_answer_from(text, q) for q in _json_field(prompt, "Questions")], structured)
    if prompt.startswith("Translate this") or "\nTranslate this" in prompt:
        return _field_re(prompt, r"^\w+ sentence: (.*)$")
    if "closed questions about the facts" in prompt:
        n = int(_field_re(prompt, r"write (\d+) closed questions") or 10)
        words = list(dict.fromkeys(_content(_field(prompt, "Text"))))[:n]
        return _arr([f"Does the text mention '{w}'?" for w in words], structured)
    if "Answer the question YES when the text" in prompt:
        label = _cef_answer(_field(prompt, "Text"), _field(prompt, "Question"))
        return json.dumps({"answer": label}) if structured else label
    if "answer YES when the text" in prompt:
        text = _field(prompt, "Text")
        return _arr([_cef_answer(text, q) for q in _json_field(prompt, "Questions")], structured)
    if "Check a candidate" in prompt:
        return _dce(prompt, mt_variant="changes, adds or drops" in prompt, structured=structured)
    if "mark it +1" in prompt:
        return _amc(prompt, structured)
    if "Improve a" in prompt and "Judgements" in prompt:
        return _field(prompt, "Reference")
    return "I do not know this task."


# ---- the HTTP server --------------------------------------------------------------------------------------


@dataclass
class Served:
    behaviour: str
    body_key: str  # the request body without volatile fields, as canonical JSON
    prompt: str
    at: float


@dataclass
class StubState(ScriptState):
    served: list[Served] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    cheap: bool = False  # benchmark mode: a fixed short answer, no rules (measures the client, not the stub)


def _completion(content: str, prompt: str, model: str, finish: str = "stop") -> dict:
    return chat_completion(
        content,
        model=model,
        finish=finish,
        completion_id="chatcmpl-judge-stub",
        prompt_tokens=max(1, len(prompt) // 4),
        completion_tokens=max(1, len(content) // 4),
    )


class _Handler(JsonHandler):
    server: JudgeStubServer

    def do_POST(self):
        state = self.server.state
        body = json.loads(self._body() or b"{}")
        if not self.path.split("?")[0].endswith("/chat/completions"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        messages = body.get("messages", [])
        prompt = prompt_of(body)
        model = body.get("model", "stub")
        structured = bool(body.get("response_format"))
        behaviour = state.next_behaviour(prompt)
        key = json.dumps(body, sort_keys=True, ensure_ascii=False)
        if behaviour == "hang":  # blocks until the test releases it (or the client gives up)
            state.released.wait(60)
        elif state.delay_for(behaviour):
            time.sleep(state.delay_for(behaviour))
        with state.lock:
            state.served.append(Served(behaviour, key, prompt, time.monotonic()))
        failure = scripted_failure(behaviour)
        if failure:
            return self._send(*failure)
        if state.cheap:
            return self._send(200, _completion('["ok"]', prompt, model))
        content = answer_for_messages(messages, structured)
        if behaviour == "truncated":
            return self._send(200, _completion(content[: max(1, len(content) // 2)], prompt, model, finish="length"))
        if behaviour == "unparsable":
            content = "I am not sure how to answer this; the translation seems fine overall."
        return self._send(200, _completion(content, prompt, model))


class JudgeStubServer(StubHTTPServer):
    request_queue_size = 512
    handler_class = _Handler
    state_class = StubState
    thread_name = "judge-stub"

    @property
    def served(self) -> list[Served]:
        with self.state.lock:
            return list(self.state.served)

    def stop(self) -> None:
        self.state.released.set()
        super().stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="deterministic OpenAI-compatible judge for tests and benchmarks")
    parser.add_argument("--port", type=int, default=8012)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--cheap", action="store_true", help="a fixed short answer (benchmarks)")
    args = parser.parse_args(argv)
    server = JudgeStubServer(args.port, latency=args.latency, cheap=args.cheap)
    print(f"judge stub on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
