"""Request body parsers of the REST API."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JSONParser(JSONParser):
    """DRF's JSON parser, answering 400 (not 500) to a body nested deeper than Python's json can read
    (``[[[[…]]]]`` raises RecursionError in the decoder)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
