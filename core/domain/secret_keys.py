"""Which ``SECRET_KEY`` a production start accepts (#48.4). Pure Python; the settings call it before Django
is set up.

Sessions, CSRF tokens, password-reset and invitation links are signed with the key: a key that can be
guessed lets anyone forge them. A production key must be at least ``MIN_LENGTH`` characters, must not be
the development key or made from it (the published key with a space, a suffix or its case changed), and
must be hard to guess by zxcvbn's estimate (the maintained password-strength estimator, Dropbox's
algorithm): at least ``MIN_GUESSES_LOG10`` (10^30 guesses, about 100 bits). A random key of Django's
``get_random_secret_key`` (50 characters) estimates at 10^50; a repeated or sequential one (``xxxx…``,
``0123…``), a word with the development key around it, far below.
"""

from __future__ import annotations

from difflib import SequenceMatcher

MIN_LENGTH = 50  # Django's check --deploy (security.W009) asks for 50 characters and 5 distinct ones
MIN_GUESSES_LOG10 = 30
SHARED_RUN = 16  # characters in a row in common with the development key that make a key "made from it"
_ZXCVBN_MAX = 72  # zxcvbn refuses longer passwords; a longer key is judged by its strongest 72-character part
_PARTS = 8  # of the first 576 characters: a start-up check stays in milliseconds whatever the key's length


class WeakSecretKey(ValueError):
    """The key is refused; the message says why, never what the key is."""


def guesses_log10(key: str) -> float:
    """zxcvbn's estimate of the guesses a key needs (log10): the best of its 72-character parts."""
    from zxcvbn import zxcvbn

    parts = [key[i : i + _ZXCVBN_MAX] for i in range(0, min(len(key), _ZXCVBN_MAX * _PARTS), _ZXCVBN_MAX)] or [""]
    return max(zxcvbn(part)["guesses_log10"] for part in parts)


def derived_from(key: str, development_key: str) -> bool:
    """Whether ``key`` holds ``SHARED_RUN`` characters in a row of the development key (case and
    surrounding spaces ignored): the development key with a space or a suffix, or a part of it."""
    a, b = key.strip().lower(), development_key.lower()
    match = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return match.size >= min(SHARED_RUN, len(b))


def check_production_key(key: str, development_key: str) -> None:
    """``WeakSecretKey`` unless ``key`` may sign a production site's sessions and links."""
    if not key.strip():
        raise WeakSecretKey("SECRET_KEY is blank")
    if derived_from(key, development_key):
        raise WeakSecretKey("SECRET_KEY is the development key or made from it")
    if len(key) < MIN_LENGTH:
        raise WeakSecretKey(f"SECRET_KEY has {len(key)} characters, fewer than the {MIN_LENGTH} required")
    strength = guesses_log10(key)
    if strength < MIN_GUESSES_LOG10:
        raise WeakSecretKey(
            f"SECRET_KEY is too easy to guess (about 10^{strength:.0f} guesses by zxcvbn, 10^{MIN_GUESSES_LOG10} "
            "required): use a random one, e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
