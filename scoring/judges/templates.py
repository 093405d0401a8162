"""Prompt templates as versioned data files (``scoring/judges/prompts/<name>.toml``), replaceable per run by
a user's file (``--prompt-file NAME=PATH``). Each file holds ``name``, ``version``, ``system``, ``user`` (a
``str.format`` template) and optionally ``structured_suffix`` (appended when JSON-schema output is on) and
example turns, ``[[shots]]``: each shot gives the user template's fields and the ``answer`` the assistant
gives (``structured_answer`` too, used when JSON-schema output is on); the shots go between the system
message and the real question, as a user turn and an assistant turn each (few-shot prompting as GEMBA-MQM's
authors do it).
The version and the SHA-256 of the file's bytes enter every metric's signature, so an edited prompt never
passes for the packaged one. Change the wording: bump the version.
"""

from __future__ import annotations

import hashlib
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

from scoring.registry import MetricError

PROMPT_DIR = Path(__file__).with_name("prompts")


@dataclass(frozen=True)
class Template:
    name: str
    version: str
    system: str
    user: str
    structured_suffix: str
    sha256: str
    path: str
    overridden: bool = False
    shots: tuple[dict, ...] = ()

    def fields(self) -> set[str]:
        names = set()
        for part in (self.system, self.user):
            names |= {f for _, f, _, _ in string.Formatter().parse(part) if f}
        return names

    def messages(self, structured: bool = False, **fields) -> tuple[dict, ...]:
        try:
            user = self.user.format(**fields)
            system = self.system.format(**fields) if self.system else ""
        except (KeyError, IndexError, ValueError) as exc:
            raise MetricError(
                f"prompt {self.name} ({self.path}): cannot fill the template ({type(exc).__name__}: {exc})"
            ) from None
        if structured and self.structured_suffix:
            user += self.structured_suffix
        out = []
        if system:
            out.append({"role": "system", "content": system})
        for shot in self.shots:
            example = self.user.format(**shot)
            if structured and self.structured_suffix:
                example += self.structured_suffix
            answer = shot.get("structured_answer") if structured and shot.get("structured_answer") else shot["answer"]
            out += [{"role": "user", "content": example}, {"role": "assistant", "content": answer}]
        out.append({"role": "user", "content": user})
        return tuple(out)

    def describe(self) -> dict:
        return {"version": self.version, "sha256": self.sha256, **({"file": self.path} if self.overridden else {})}


def load_template(path: Path, expected_name: str | None = None, overridden: bool = False) -> Template:
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MetricError(f"{path}: not a TOML prompt file ({exc})") from None
    missing = [k for k in ("version", "user") if not isinstance(data.get(k), str) or not data.get(k)]
    if missing:
        raise MetricError(f"{path}: missing text field(s) {', '.join(missing)} (a prompt file needs version and user)")
    name = data.get("name") or expected_name or path.stem
    shots = _shots(path, data.get("shots", []), data["user"])
    if expected_name and name != expected_name:
        raise MetricError(f"{path}: name = {name!r} but it replaces prompt {expected_name!r}")
    template = Template(
        name=name,
        version=data["version"],
        system=data.get("system", "") or "",
        user=data["user"],
        structured_suffix=data.get("structured_suffix", "") or "",
        sha256=hashlib.sha256(raw).hexdigest(),
        path=str(path),
        overridden=overridden,
        shots=shots,
    )
    if expected_name:
        packaged = packaged_template(expected_name)
        extra = template.fields() - packaged.fields()
        if extra:
            raise MetricError(
                f"{path}: unknown field(s) {', '.join(sorted(extra))}; {expected_name} offers {', '.join(sorted(packaged.fields()))}"
            )
    return template


def _shots(path: Path, raw, user: str) -> tuple[dict, ...]:
    """The example turns of a prompt file, checked: each a table with text values for every field of the
    user template and an ``answer``."""
    if not isinstance(raw, list):
        raise MetricError(f"{path}: shots must be an array of tables ([[shots]])")
    needed = {f for _, f, _, _ in string.Formatter().parse(user) if f}
    out = []
    for n, shot in enumerate(raw, 1):
        if not isinstance(shot, dict) or not all(isinstance(v, str) for v in shot.values()):
            raise MetricError(f"{path}: shot {n} must be a table of text values")
        missing = sorted((needed | {"answer"}) - set(shot))
        if missing:
            raise MetricError(f"{path}: shot {n} lacks {', '.join(missing)}")
        try:
            user.format(**shot)
        except (KeyError, IndexError, ValueError) as exc:
            raise MetricError(f"{path}: shot {n} cannot fill the template ({type(exc).__name__}: {exc})") from None
        out.append(dict(shot))
    return tuple(out)


_PACKAGED: dict[str, Template] = {}


def packaged_template(name: str) -> Template:
    if name not in _PACKAGED:
        path = PROMPT_DIR / f"{name}.toml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in PROMPT_DIR.glob("*.toml")))
            raise MetricError(f"no prompt named {name!r}; known: {known}")
        _PACKAGED[name] = load_template(path)
    return _PACKAGED[name]


def parse_prompt_files(items: list[str] | dict | None) -> dict[str, str]:
    """``["NAME=PATH", ...]`` (the CLI) or a mapping -> {name: path}, checked to exist."""
    if not items:
        return {}
    pairs = items.items() if isinstance(items, dict) else [i.split("=", 1) if "=" in i else (i, None) for i in items]
    out = {}
    for name, path in pairs:
        if not path:
            raise MetricError(f"--prompt-file {name!r}: expected NAME=PATH")
        packaged_template(name)  # unknown names fail here, with the list
        if not Path(path).is_file():
            raise MetricError(f"--prompt-file {name}={path}: no such file")
        out[name] = str(path)
    return out


class PromptSet:
    """The templates one metric uses, with the run's overrides applied."""

    def __init__(self, names: list[str], overrides: dict[str, str] | None = None):
        overrides = overrides or {}
        self.templates = {
            n: load_template(Path(overrides[n]), expected_name=n, overridden=True)
            if n in overrides
            else packaged_template(n)
            for n in names
        }

    def __getitem__(self, name: str) -> Template:
        return self.templates[name]

    def describe(self) -> dict:
        return {n: t.describe() for n, t in sorted(self.templates.items())}
