"""Language names for prompts (English names of the codes in release directions). Pure data."""

from __future__ import annotations

NAMES = {
    "en": "English",
    "de": "German",
    "zh": "Chinese",
    "es": "Spanish",
    "fr": "French",
    "hi": "Hindi",
    "tl": "Tagalog",
    "ja": "Japanese",
    "ko": "Korean",
    "ru": "Russian",
    "ar": "Arabic",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
    "cs": "Czech",
    "pl": "Polish",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "he": "Hebrew",
    "is": "Icelandic",
    "et": "Estonian",
    "fi": "Finnish",
    "ro": "Romanian",
    "sw": "Swahili",
    "vi": "Vietnamese",
    "th": "Thai",
    "id": "Indonesian",
    "bn": "Bengali",
    "ta": "Tamil",
    "ur": "Urdu",
    "eng": "English",
    "deu": "German",
    "zho": "Chinese",
    "spa": "Spanish",
    "fra": "French",
    "jpn": "Japanese",
}


def language_name(code: str) -> str:
    base = (code or "").split("_")[0].split("-")[0].lower()
    return NAMES.get(base, code or "the source language")
