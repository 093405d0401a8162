"""Prompts as versioned data: one template per MQM error type (XQ-MEval App. E) and per perturbation
(AskQE's categories, App. A.1; data files in injection/domain/prompt_files/, own wording). Pure Python (no Django).

Every template carries a version string that is stored on each candidate; change the wording and bump the
version, never edit a released version in place. The MQM prompts show the halves as
``<head>…</head> <end>…</end>`` (``core.domain.units.halves_markup``, SPEC §1) and walk the model through the
published steps: select a sub-part of the marked half, select a segment, edit it as the type requires,
substitute it back, output the updated sentence.
"""

from __future__ import annotations

import hashlib
import string
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.domain.edit_types import MQM, PERTURBATION, EditType
from core.domain.errors import Invalid
from core.domain.languages import language_info
from core.domain.units import halves_markup

ANSWER_KEY = "updated_sentence"  # the one field of the JSON-schema answer
ANSWER_PREFIX = "Updated sentence:"

# JSON schema for servers with structured output (OpenAI, vLLM guided decoding).
RESPONSE_SCHEMA = {
    "name": "edited_sentence",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {ANSWER_KEY: {"type": "string"}},
        "required": [ANSWER_KEY],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class PromptTemplate:
    version: str
    system: str
    user: str  # str.format template


@dataclass(frozen=True)
class Prompt:
    version: str
    messages: tuple[dict, ...]


# ---- MQM error injection (XQ-MEval) ------------------------------------------------------------------

_MQM_SYSTEM = (
    "You are a professional {language} linguist. You help build a benchmark for machine translation metrics "
    "by introducing one controlled translation error into a correct {language} translation."
)

_MQM_STEPS = {
    "Addition": (
        "select a word or short phrase in it as the anchor of the addition",
        "add a few {language} words next to the anchor that introduce information not present in the English "
        "source (new facts, not a mere change of degree such as 'very')",
    ),
    "Omission": (
        "select a segment of one or more words that carries meaning",
        "delete that segment so that its meaning is missing from the sentence",
    ),
    "Mistranslation": (
        "select a content word or short phrase",
        "replace it by a different {language} word or phrase that changes the meaning (not a trivial "
        "substitution such as 1 to 2 or good to bad)",
    ),
    "Untranslated": (
        "select a word or short phrase that translates words of the English source (not a name of a person or place)",
        "replace it by the corresponding English words copied from the source, leaving them untranslated",
    ),
}

_MQM_USER = """You will be given a {language} sentence, a correct translation of an English source sentence. \
The sentence is split into two halves, marked <head>...</head> and <end>...</end>.

Task: introduce exactly one {error_type} error of major severity (MQM) into the <{half}> half only. \
{error_type}: {definition}. Everything outside the edited segment must stay exactly as it is.

Follow these steps:
1. Select a sub-part of the <{half}> half.
2. In that sub-part, {select}.
3. Edit the segment: {edit}.
4. Substitute the edited segment back into the sentence without changing anything else.
5. Output the updated sentence, without the <head> and <end> tags.
{source_block}
Sentence: {marked}

Answer with the updated sentence only, on one line, after "{prefix}"."""


def _mqm_template(error_type: str) -> PromptTemplate:
    return PromptTemplate(version=f"xqmeval-{error_type.lower()}-v1", system=_MQM_SYSTEM, user=_MQM_USER)


# ---- perturbations (AskQE's ContraTICO categories, App. A.1) ------------------------------------------
# The perturbation prompts are data files (injection/domain/prompt_files/perturbation-<type>.toml), written in the
# project's own words with its own examples; a run may replace any of them (`inject --prompt-file
# perturbation-<type>=FILE`): the file's text is stored with the run and its hash marks the prompt version.

PROMPT_DIR = Path(__file__).with_name("prompt_files")
PERTURBATION_FIELDS = {"language", "instruction", "examples", "original"}


class PromptFileError(Invalid, ValueError):
    """A prompt file cannot be used; the message names the file and the field."""

    code = "prompt_file_invalid"


@dataclass(frozen=True)
class PerturbationTemplate:
    name: str
    version: str
    error_type: str
    instruction: str
    examples: tuple[tuple[str, str], ...]
    user: str
    sha256: str


def perturbation_prompt_name(error_type: str) -> str:
    return "perturbation-" + error_type.lower().replace(" ", "-").replace("(", "").replace(")", "")


@lru_cache(maxsize=64)
def parse_perturbation_file(
    text: str, where: str = "prompt file", expected_type: str | None = None
) -> PerturbationTemplate:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PromptFileError(f"{where}: not TOML ({exc})") from None
    for key in ("version", "instruction", "user"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise PromptFileError(f"{where}: field {key!r} is missing or not text")
    if len(data["version"]) > 40:
        raise PromptFileError(f"{where}: field 'version' is longer than 40 characters")
    examples = data.get("examples", [])
    if not isinstance(examples, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in examples
    ):
        raise PromptFileError(f"{where}: field 'examples' must be a list of [original, changed] pairs of text")
    fields = {f for _, f, _, _ in string.Formatter().parse(data["user"]) if f}
    unknown = fields - PERTURBATION_FIELDS
    if unknown:
        raise PromptFileError(
            f"{where}: field 'user' uses unknown placeholder(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(PERTURBATION_FIELDS))})"
        )
    error_type = data.get("type") or expected_type or ""
    if expected_type and error_type != expected_type:
        raise PromptFileError(f"{where}: type = {error_type!r}, but it replaces the {expected_type!r} prompt")
    return PerturbationTemplate(
        name=data.get("name") or perturbation_prompt_name(error_type),
        version=data["version"],
        error_type=error_type,
        instruction=data["instruction"],
        examples=tuple((a, b) for a, b in examples),
        user=data["user"],
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _packaged_perturbations() -> dict[str, PerturbationTemplate]:
    out = {}
    for path in sorted(PROMPT_DIR.glob("perturbation-*.toml")):
        template = parse_perturbation_file(path.read_text(encoding="utf-8"), str(path))
        out[template.error_type] = template
    return out


PERTURBATIONS = _packaged_perturbations()


def perturbation_overrides(items: list[str]) -> dict[str, str]:
    """``["perturbation-omission=FILE", ...]`` -> {prompt name: file text}, each file checked."""
    by_name = {perturbation_prompt_name(t): t for t in PERTURBATIONS}
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        name = name.strip()
        if not sep or not path:
            raise PromptFileError(f"--prompt-file {item!r}: expected NAME=PATH")
        if name not in by_name:
            raise PromptFileError(f"--prompt-file {name}: no such prompt (known: {', '.join(sorted(by_name))})")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptFileError(f"--prompt-file {name}={path}: {exc}") from None
        parse_perturbation_file(text, path, by_name[name])
        out[name] = text
    return out


def _perturbation_template(name: str) -> PromptTemplate:
    return PromptTemplate(version=PERTURBATIONS[name].version, system="", user=PERTURBATIONS[name].user)


TEMPLATES: dict[tuple[str, str], PromptTemplate] = {
    **{(MQM, name): _mqm_template(name) for name in _MQM_STEPS},
    **{(PERTURBATION, name): _perturbation_template(name) for name in PERTURBATIONS},
}


def build_prompt(
    edit_type: EditType,
    *,
    reference: str,
    source: str,
    language: str,
    position: str,
    structured: bool = False,
    overrides: dict[str, str] | None = None,
) -> Prompt:
    """The chat messages for one item. ``structured`` adds the JSON answer instruction for servers that
    enforce the response schema (the schema itself goes in ``response_format``). ``overrides``: prompt
    name -> the text of a user's prompt file (a run's ``--prompt-file``)."""
    template = TEMPLATES[(edit_type.kind, edit_type.name)]
    version = template.version
    lang_name = language_info(language).name
    if edit_type.kind == MQM:
        select, edit = _MQM_STEPS[edit_type.name]
        source_block = f"\nEnglish source: {source}\n" if edit_type.needs_source else ""
        user = template.user.format(
            language=lang_name,
            error_type=edit_type.name,
            half=position,
            definition=edit_type.definition,
            select=select.format(language=lang_name),
            edit=edit.format(language=lang_name),
            source_block=source_block,
            marked=halves_markup(reference, language),
            prefix=ANSWER_PREFIX,
        )
    else:
        perturbation = PERTURBATIONS[edit_type.name]
        override = (overrides or {}).get(perturbation_prompt_name(edit_type.name))
        if override is not None:
            perturbation = parse_perturbation_file(override, perturbation_prompt_name(edit_type.name), edit_type.name)
            version = f"{perturbation.version}@{perturbation.sha256[:12]}"  # a user's file: its hash marks the version
        examples = "\n\n".join(f"Sentence: {a}\nChanged sentence: {b}" for a, b in perturbation.examples)
        user = perturbation.user.format(
            language=lang_name, instruction=perturbation.instruction, examples=examples, original=reference
        )
    if structured:
        user += f'\n\nReturn a JSON object {{"{ANSWER_KEY}": "..."}} holding only the sentence.'
    messages: list[dict] = []
    if template.system:
        messages.append({"role": "system", "content": template.system.format(language=lang_name)})
    messages.append({"role": "user", "content": user})
    return Prompt(version=version, messages=tuple(messages))
