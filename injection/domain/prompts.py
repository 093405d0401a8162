"""Prompts as versioned data: one template per MQM error type (XQ-MEval App. E) and per perturbation
(AskQE App. A.1). Pure Python (no Django).

Every template carries a version string that is stored on each candidate; change the wording and bump the
version, never edit a released version in place. The MQM prompts show the halves as
``<head>…</head> <end>…</end>`` (``core.domain.units.halves_markup``, SPEC §1) and walk the model through the
published steps: select a sub-part of the marked half, select a segment, edit it as the type requires,
substitute it back, output the updated sentence.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.domain.languages import language_info
from core.domain.units import halves_markup
from injection.domain.edit_types import MQM, PERTURBATION, EditType

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


# ---- perturbations (AskQE ContraTICO, App. A.1; the paper's EN-ES two-shot examples) ------------------

_PERTURBATION_TASKS = {
    "Synonym": (
        "replacing one or two words (noun, verb, adjective or adverb) to its synonym. Please make sure it does not "
        "changes the meaning in a significant way.",
        [
            ("Puede tratarse de un miembro de la secretaría o del personal clínico, según el protocolo de cada consultorio.",
             "Puede tratarse de un miembro de la secretaría o del personal médico, según el protocolo de cada consultorio."),
            ("Además, reclutaremos nuevos consultorios de monitoreo.",
             "Asimismo, contrataremos nuevos consultorios de seguimiento."),
        ],
    ),
    "Word Order": (
        "changing the word order. Please make sure it does not changes the meaning in a significant way.",
        [
            ("Puede tratarse de un miembro de la secretaría o del personal clínico, según el protocolo de cada consultorio.",
             "Puede tratarse de un miembro del personal clínico o de la secretaría, según el protocolo de cada consultorio."),
        ],
    ),
    "Spelling": (
        "misspelling one or two words. The misspelled words should be important in the sentence.",
        [
            ("Puede tratarse de un miembro de la secretaría o del personal clínico, según el protocolo de cada consultorio.",
             "Puede tratarse de un miembro de la secretaría o del persnal clínico, según el protoco de cada consultorio."),
            ("Además, reclutaremos nuevos consultorios de monitoreo.", "Ademá, reclutaremos nuevos cosultorios de monitoreo."),
        ],
    ),
    "Intensifier": (
        "adding one or two words that changes the intensity of the existing word. Please make sure that the added "
        "word does not disturb the grammaticality of the sentence.",
        [
            ("Los síntomas comunes incluyen fiebre, tos seca y fatiga.", "Los síntomas comunes incluyen fiebre alta, tos seca y fatiga."),
        ],
    ),
    "Expansion (Impact)": (
        "adding words in the sentence. Please make sure that the added word does not disturb the grammaticality of "
        "the sentence but should change the meaning in a significant way.",
        [
            ("Los síntomas comunes incluyen fiebre, tos seca y fatiga.",
             "Los síntomas comunes incluyen fiebre y dolores musculares, tos seca y fatiga."),
        ],
    ),
    "Expansion (No Impact)": (
        "adding one or two words in the sentence. Please make sure that the added word does not disturb the "
        "grammaticality of the sentence and does not changes the meaning in a significant way. The added words would "
        "add more context that was already obvious from the sentence.",
        [
            ("si crees que tus síntomas o problemas justifican un examen más detallado.",
             "si crees que tus síntomas o problemas justifican un examen médico más detallado."),
        ],
    ),
    "Omission": (
        "removing information from the sentence. Remove only one or two words from the sentence. Please make sure "
        "that the removed information does not disturb the grammaticality of the sentence but should change the "
        "meaning in a significant way.",
        [
            ("Se están realizando investigaciones sobre una vacuna o un tratamiento antiviral específico.",
             "Se están realizando investigaciones sobre un tratamiento antiviral específico."),
        ],
    ),
    "Alteration": (
        "changing the affirmative sentence into negation (vice versa) or changing one word (noun, verb, adjective or "
        "adverb) to its antonym. Please make sure that the perturbation does not disturb the grammaticality of the "
        "sentence but should change the meaning in a significant way.",
        [
            ("No logró aliviar el dolor con medicamentos que la competencia prohíbe a los participantes.",
             "No logró aliviar el placer con medicamentos que la competencia prohíbe a los participantes."),
            ("El mes pasado, un comité presidencial recomendó la renuncia del antiguo CEP como parte de medidas para llevar al país a nuevas elecciones.",
             "El mes pasado, un comité presidencial no recomendó la renuncia del antiguo CEP como parte de medidas para llevar al país a nuevas elecciones."),
        ],
    ),
}

_PERTURBATION_USER = """Task: You will be given a {language} sentence. Your goal is to perturb the sentence by {task} \
Output only the perturbed {language} sentence without giving any additional explanation.

*** Example Starts *** (Spanish examples; apply the same kind of change to the {language} sentence)
{examples}
*** Example Ends ***

Original: {original}

Perturbed:"""


def _perturbation_template(name: str) -> PromptTemplate:
    slug = name.lower().replace(" ", "-").replace("(", "").replace(")", "")
    return PromptTemplate(version=f"askqe-{slug}-v1", system="", user=_PERTURBATION_USER)


TEMPLATES: dict[tuple[str, str], PromptTemplate] = {
    **{(MQM, name): _mqm_template(name) for name in _MQM_STEPS},
    **{(PERTURBATION, name): _perturbation_template(name) for name in _PERTURBATION_TASKS},
}


def build_prompt(edit_type: EditType, *, reference: str, source: str, language: str, position: str, structured: bool = False) -> Prompt:
    """The chat messages for one item. ``structured`` adds the JSON answer instruction for servers that
    enforce the response schema (the schema itself goes in ``response_format``)."""
    template = TEMPLATES[(edit_type.kind, edit_type.name)]
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
        task, shots = _PERTURBATION_TASKS[edit_type.name]
        examples = "\n\n".join(f"Original: {a}\nPerturbed: {b}" for a, b in shots)
        user = template.user.format(language=lang_name, task=task, examples=examples, original=reference)
    if structured:
        user += f'\n\nReturn a JSON object {{"{ANSWER_KEY}": "..."}} holding only the sentence.'
    messages: list[dict] = []
    if template.system:
        messages.append({"role": "system", "content": template.system.format(language=lang_name)})
    messages.append({"role": "user", "content": user})
    return Prompt(version=template.version, messages=tuple(messages))
