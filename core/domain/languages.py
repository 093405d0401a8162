"""Language metadata: script, span unit, writing direction. Pure Python (no Django).

The span unit decides how positions in a target text are counted (SPEC glossary): characters for
scripts written without spaces between words, whitespace tokens otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def unit(self) -> str:
        return CHAR if self.code in CHARACTER_UNIT_LANGUAGES else TOKEN


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


class UnknownDirection(ValueError):
    pass


def language_info(code: str) -> LanguageInfo:
    """Metadata of a known language code; unknown codes are an error (no silent defaults)."""
    try:
        return KNOWN_LANGUAGES[code]
    except KeyError:
        raise UnknownDirection(f"unknown language code {code!r}") from None


def parse_direction(direction: str) -> tuple[str, str]:
    """'en-de' -> ('en', 'de'); both codes must be known languages."""
    parts = direction.split("-")
    if len(parts) != 2 or not all(parts):
        raise UnknownDirection(f"direction {direction!r} is not of the form 'src-tgt' (e.g. en-de)")
    source, target = parts
    for code in (source, target):
        if code not in KNOWN_LANGUAGES:
            raise UnknownDirection(f"unknown language code {code!r} in direction {direction!r}")
    if source == target:
        raise UnknownDirection(f"direction {direction!r} has the same source and target")
    return source, target


def unit_of(language_code: str) -> str:
    return CHAR if language_code in CHARACTER_UNIT_LANGUAGES else TOKEN
