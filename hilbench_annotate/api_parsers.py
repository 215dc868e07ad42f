"""The API's request parsers: DRF's, with a JSON body nested past what Python's parser can
follow refused as a parse error (400) instead of a ``RecursionError`` (500)."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body nests too deep.") from None
