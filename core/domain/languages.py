"""Language metadata: script, span unit, writing direction. Pure Python (no Django).

The span unit decides how positions in a target text are counted (SPEC glossary): characters for
scripts written without spaces between words, whitespace tokens otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from core.domain.errors import Invalid

CHAR = "char"
TOKEN = "token"

# Scripts written without spaces between words: positions are counted in characters (SPEC glossary).
CHARACTER_UNIT_LANGUAGES = frozenset({"zh", "ja", "lo", "th", "my", "km", "bo"})


@dataclass(frozen=True)
class LanguageInfo:
    code: str
    name: str
    script: str
    rtl: bool = False
    base: str = ""  # for a replica code: the language it stands for

    @property
    def unit(self) -> str:
        return CHAR if (self.base or self.code) in CHARACTER_UNIT_LANGUAGES else TOKEN


_KNOWN = [
    LanguageInfo("en", "English", "Latn"),
    LanguageInfo("de", "German", "Latn"),
    LanguageInfo("es", "Spanish", "Latn"),
    LanguageInfo("fr", "French", "Latn"),
    LanguageInfo("id", "Indonesian", "Latn"),
    LanguageInfo("vi", "Vietnamese", "Latn"),
    LanguageInfo("it", "Italian", "Latn"),
    LanguageInfo("pt", "Portuguese", "Latn"),
    LanguageInfo("nl", "Dutch", "Latn"),
    LanguageInfo("cs", "Czech", "Latn"),
    LanguageInfo("pl", "Polish", "Latn"),
    LanguageInfo("tr", "Turkish", "Latn"),
    LanguageInfo("sw", "Swahili", "Latn"),
    LanguageInfo("ru", "Russian", "Cyrl"),
    LanguageInfo("uk", "Ukrainian", "Cyrl"),
    LanguageInfo("el", "Greek", "Grek"),
    LanguageInfo("ar", "Arabic", "Arab", rtl=True),
    LanguageInfo("fa", "Persian", "Arab", rtl=True),
    LanguageInfo("ur", "Urdu", "Arab", rtl=True),
    LanguageInfo("he", "Hebrew", "Hebr", rtl=True),
    LanguageInfo("hi", "Hindi", "Deva"),
    LanguageInfo("bn", "Bengali", "Beng"),
    LanguageInfo("ta", "Tamil", "Taml"),
    LanguageInfo("si", "Sinhala", "Sinh"),
    LanguageInfo("ko", "Korean", "Kore"),
    LanguageInfo("zh", "Chinese", "Hans"),
    LanguageInfo("ja", "Japanese", "Jpan"),
    LanguageInfo("lo", "Lao", "Laoo"),
    LanguageInfo("th", "Thai", "Thai"),
    LanguageInfo("my", "Burmese", "Mymr"),
    LanguageInfo("km", "Khmer", "Khmr"),
    LanguageInfo("bo", "Tibetan", "Tibt"),
]
KNOWN_LANGUAGES: dict[str, LanguageInfo] = {lang.code: lang for lang in _KNOWN}


# Replica codes, for synthetic scale workloads (benchmarks/bench_scale.py): ``<base>_<tag>`` with a
# private-use ISO 15924 script tag Qaab…Qabx (Qaaa–Qabx are reserved for private use) names the known
# language ``<base>`` under another name: same script, unit and writing direction, so every rule that
# depends on the language (span units, checks, tokenizers of the scoring workers, which read the part
# before ``_``) applies unchanged. Replica n (1…49) of de is ``de_Qa`` + two letters: de_Qaab, de_Qaac, …
REPLICA_RE = re.compile(r"^(?P<base>[a-z]{2,3})_(?P<tag>Qa[ab][a-z])$")
MAX_REPLICA = 49  # Qabx
# A language code as it may appear in file names and direction codes: a known code or a replica code.
LANGUAGE_CODE_PATTERN = r"[a-z]{2,3}(?:_Qa[ab][a-z])?"


class UnknownDirection(Invalid, ValueError):
    code = "unknown_direction"


def replica_code(base: str, n: int) -> str:
    """The code of replica ``n`` (1…49) of the known language ``base``: ``replica_code("de", 1) == "de_Qaab"``."""
    if base not in KNOWN_LANGUAGES:
        raise UnknownDirection(f"unknown language code {base!r}")
    if not 1 <= n <= MAX_REPLICA:
        raise ValueError(f"replica number {n} is outside 1…{MAX_REPLICA}")
    return f"{base}_Qa{chr(ord('a') + n // 26)}{chr(ord('a') + n % 26)}"


@lru_cache(maxsize=4096)  # a few codes, asked for several times per candidate by the checks (LanguageInfo is frozen)
def _replica(code: str) -> LanguageInfo | None:
    match = REPLICA_RE.match(code)
    if not match or match["base"] not in KNOWN_LANGUAGES or match["tag"] in ("Qaaa",) or match["tag"] > "Qabx":
        return None
    base = KNOWN_LANGUAGES[match["base"]]
    n = (ord(match["tag"][2]) - ord("a")) * 26 + ord(match["tag"][3]) - ord("a")
    return LanguageInfo(code, f"{base.name} (replica {n})", base.script, base.rtl, base=base.code)


def is_known(code: str) -> bool:
    return code in KNOWN_LANGUAGES or _replica(code) is not None


def language_info(code: str) -> LanguageInfo:
    """Metadata of a known language code (or a replica code); unknown codes are an error (no silent defaults)."""
    info = KNOWN_LANGUAGES.get(code) or _replica(code)
    if info is None:
        raise UnknownDirection(f"unknown language code {code!r}")
    return info


def parse_direction(direction_code: str) -> tuple[str, str]:
    """'en-de' -> ('en', 'de'); both codes must be known languages."""
    parts = direction_code.split("-")
    if len(parts) != 2 or not all(parts):
        raise UnknownDirection(f"direction {direction_code!r} is not of the form 'src-tgt' (e.g. en-de)")
    source, target = parts
    for code in (source, target):
        if not is_known(code):
            raise UnknownDirection(f"unknown language code {code!r} in direction {direction_code!r}")
    if source == target:
        raise UnknownDirection(f"direction {direction_code!r} has the same source and target")
    return source, target


def base_language(code: str) -> str:
    """The language a code stands for: ``base_language("zh_Qaab") == "zh"``; other codes as they are.
    Rules keyed by language code go through this, so a replica follows the rules of its base."""
    replica = _replica(code) if "_" in code else None
    return replica.base if replica else code


def unit_of(language_code: str) -> str:
    return CHAR if base_language(language_code) in CHARACTER_UNIT_LANGUAGES else TOKEN
