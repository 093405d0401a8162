"""What the exports commands share: a service's refusal worded as the command's error (its message, exit status
1, no traceback), and the options that choose which rows become items."""

from contextlib import contextmanager

from django.core.management.base import CommandError


@contextmanager
def refused_as_command_error(*errors: type[Exception]):
    """``with refused_as_command_error(SomeError, ValueError):`` around a call whose refusals the user reads."""
    try:
        yield
    except errors as exc:
        raise CommandError(str(exc)) from None


def options_refused(problems) -> CommandError:
    """A refusal that names the options at fault, ``(option, text)`` each: ``--level 9: …; --direction …``."""
    return CommandError("; ".join(f"--{option} {text}" for option, text in problems))


def item_sample(opts) -> dict:
    """Which rows an items command takes: one direction, one level, a seeded sample of ``--limit``."""
    return {"direction_code": opts["direction"], **{name: opts[name] for name in ("level", "limit", "seed")}}
