"""JSON and TOML from outside (uploads, bundles, test output, model replies), read so that no
nesting gets past the handlers written for bad input.

Python's ``json`` and ``tomllib`` recurse once per level: a document of 100,000 ``[`` raises
``RecursionError`` in a millisecond, which no ``except ValueError`` catches — a 500 on a page,
a job ending in ``error``. These raise the parser's own decode error instead, so every caller's
existing handler names the file or record as it does for any other malformed input.
"""

import json
import tomllib
from typing import Any

TOO_DEEP = "it nests deeper than the parser can follow (a few hundred levels)"


def json_loads(data: str | bytes | bytearray, **options: Any) -> Any:
    """``json.loads`` (with its keyword ``options``); ``json.JSONDecodeError`` (a ValueError)
    for a document nested too deep."""
    try:
        return json.loads(data, **options)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, "", 0) from None


def toml_loads(text: str) -> dict[str, Any]:
    """``tomllib.loads``; ``tomllib.TOMLDecodeError`` for a document nested too deep."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(TOO_DEEP) from None
