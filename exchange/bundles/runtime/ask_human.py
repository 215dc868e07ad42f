"""The ask-human sidecar: answers from the task's blocker registry with the app's embedded
judge, shipped beside it (``judge/``) — no call back to the app, no internet.

``ask_human(question)`` returns the matched blocker's resolution verbatim, or exactly
``irrelevant question``; at most ``ASK_HUMAN_MAX_ANSWERS`` (3, the release's cap) questions
are answered per session. Every question is logged in ``OUTPUT_DIR/ask_human_metrics.json``
in the release's format (the harness reads Ask-F1 from it). Environment:
``BLOCKER_REGISTRY_PATH``, ``JUDGE_CONFIG`` (thresholds, and the task's own text the judge
reads to decide relevance), ``OUTPUT_DIR``, ``PORT``. The registry's index is built when the
server starts, not on the first question.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from mcp_server import schema, serve

from judge.base import IRRELEVANT, respond
from judge.embedded import EmbeddedJudge, registry_from_json

REGISTRY = Path(os.environ.get("BLOCKER_REGISTRY_PATH", "/ask-human-data/blocker_registry.json"))
CONFIG = Path(os.environ.get("JUDGE_CONFIG", str(Path(__file__).with_name("judge.json"))))
OUTPUT = Path(os.environ.get("OUTPUT_DIR", "/app"))
MAX_ANSWERS = int(os.environ.get("ASK_HUMAN_MAX_ANSWERS", "3"))

_lock = threading.Lock()
_document = json.loads(REGISTRY.read_text(encoding="utf-8"))
_registry = registry_from_json(_document)
_settings = json.loads(CONFIG.read_text()) if CONFIG.is_file() else {}
_context = str(_settings.pop("context", "") or "")
_judge = EmbeddedJudge(**_settings)
_judge.prepare(_registry, context=_context)
_questions = []


def _save():
    resolved = sorted({q["blocker_name"] for q in _questions if q["blocker_name"]})
    asked, found = len(_questions), len(resolved)
    precision = found / asked if asked else 0.0
    recall = found / len(_registry) if _registry else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "ask_human_metrics.json").write_text(json.dumps({
        "total_questions": asked, "blockers_resolved": found, "n_blockers": len(_registry),
        "blockers_resolved_list": resolved, "precision": precision, "recall": recall,
        "f1": f1, "questions": _questions,
    }, indent=2))  # fmt: skip


def ask_human(question):
    with _lock:
        answered = sum(1 for q in _questions if q["blocker_name"])
        blocker, response = None, IRRELEVANT
        if answered < MAX_ANSWERS and question and question.strip():
            verdict = _judge.judge(question.strip(), _registry, context=_context)
            blocker, response = verdict.blocker_id, respond(verdict, _registry)
        _questions.append({"question": question, "response": response, "blocker_name": blocker})
        _save()
        return response


TOOLS = {
    "ask_human": (
        "Ask one specific clarifying question about the task. Returns the answer for a known "
        "gap, or 'irrelevant question'.",
        schema(question="One specific question"),
        ask_human,
    )
}

if __name__ == "__main__":
    serve("ask-human", TOOLS)
