"""How the exports commands word a refusal: a service's error becomes the command's error (its message, exit
status 1, no traceback)."""

from contextlib import contextmanager

from django.core.management.base import CommandError


@contextmanager
def refused_as_command_error(*errors: type[Exception]):
    """``with refused_as_command_error(SomeError, ValueError):`` around a call whose refusals the user reads."""
    try:
        yield
    except errors as exc:
        raise CommandError(str(exc)) from None
