"""The business-info sidecar: search the task's business documentation.

``get_business_info(database_name, search_string)`` ranks the sentences of
``business_info.json`` by how many of the search's words (and their stems) they share, and
returns the best few. Environment: ``DATA_DIR``, ``PORT``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mcp_server import schema, serve

DATA = Path(os.environ.get("DATA_DIR", "/data"))
TOP = int(os.environ.get("BUSINESS_INFO_TOP", "5"))
_WORD = re.compile(r"[a-z0-9]+")
_STOP = set(
    re.findall(r"\w+", "a an the of to in on for and or is are was be by with what which how")
)


def _stems(text):
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP}


def _sentences():
    document = json.loads((DATA / "business_info.json").read_text(encoding="utf-8"))
    return document.get("business_info", []) if isinstance(document, dict) else document


def get_business_info(database_name, search_string):
    wanted = _stems(search_string)
    scored = sorted(
        ((len(wanted & _stems(s)), i, s) for i, s in enumerate(_sentences())),
        key=lambda item: (-item[0], item[1]),
    )
    hits = [s for score, _, s in scored if score][:TOP]
    return "\n".join(f"- {s}" for s in hits) or "No documentation matches."


TOOLS = {
    "get_business_info": (
        "Search the business documentation of the database.",
        schema(database_name="The database", search_string="What to look for"),
        get_business_info,
    )
}

if __name__ == "__main__":
    serve("business-info", TOOLS)
