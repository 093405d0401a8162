"""The platform's one error vocabulary: every refusal a service, a selector or a domain function raises is an
``AppError`` of one of four kinds, and one place per kind of caller turns it into an answer
(``core.errors``: the DRF exception handler and the HTML views' helper; commands print ``message``).

- ``Invalid``: the request or the input is wrong (400, or a subclass's own status such as 422);
- ``NotFound``: no such thing, or one the caller may not see (404, answered exactly as a missing thing);
- ``Forbidden``: the caller may see the thing but not do this (403); ``hidden=True`` answers as ``NotFound``;
- ``Conflict``: the request is right but the state refuses it now (409: a closed round, a running build).

Each carries ``message``, the ``field`` it is about (a form field, a command option; None: the request as a
whole) and a stable machine-readable ``code`` (the kind's, or a subclass's own). Django-free, so domain
modules raise it too. Subclasses that were ``ValueError`` before keep it as a second base, so the callers that
catch ``ValueError`` still do.
"""

from __future__ import annotations

from typing import ClassVar

SHOWN = 50


class AppError(Exception):
    """A refusal; subclass one of the four kinds below, never this class itself."""

    kind: ClassVar[str] = ""
    code: ClassVar[str] = ""
    status: ClassVar[int] = 400

    def __init__(self, message: str = "", field: str | None = None):
        super().__init__(message)
        self.field = field

    @property
    def message(self) -> str:
        """What the caller is told (a subclass may reword ``args`` after ``__init__``)."""
        return str(self)


class Invalid(AppError):
    kind = code = "invalid"
    status = 400


class NotFound(AppError):
    kind = code = "not_found"
    status = 404


class Forbidden(AppError):
    """``hidden``: the caller may not know the thing exists, so it answers exactly as ``NotFound`` does."""

    kind = code = "forbidden"
    status = 403

    def __init__(self, message: str = "", field: str | None = None, *, hidden: bool = False):
        super().__init__(message, field)
        self.hidden = hidden


class Conflict(AppError):
    kind = code = "conflict"
    status = 409


KINDS: tuple[type[AppError], ...] = (Invalid, NotFound, Forbidden, Conflict)


def kind_of(exc: AppError) -> type[AppError]:
    """The one kind ``exc`` is of."""
    return next(k for k in KINDS if isinstance(exc, k))


def answers_as_missing(exc: AppError) -> bool:
    """Whether ``exc`` must answer exactly as a missing thing (the hardening rule: no answer tells whether a
    thing the caller may not see exists)."""
    return isinstance(exc, NotFound) or (isinstance(exc, Forbidden) and exc.hidden)


class InputErrors(Invalid, ValueError):
    """Input that cannot be used; ``errors`` lists each problem with its location. Nothing was written."""

    code = "input_errors"

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:SHOWN])
        more = f"\n  … and {len(errors) - SHOWN} more" if len(errors) > SHOWN else ""
        prefix = f"{source}: " if source else ""
        super().__init__(f"{prefix}{len(errors)} problem(s), nothing imported:\n{shown}{more}")
