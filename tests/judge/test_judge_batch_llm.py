"""``judge_batch --judge llm``: the LLM judge measured on the same files as the embedded judge,
end to end against a loopback stand-in for an OpenAI-compatible endpoint.

The stand-in is a real HTTP server that reads the prompt it is sent — the agent's message and
the blockers' ids — and answers by simple rules keyed on this file's questions, the way a
model following the prompt would. Every request it received is then checked: it carries
every criterion of the release's judge, and never a resolution.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judge.base import IRRELEVANT
from judge.llm import (
    MATCH_CRITERIA,
    MIN_CONFIDENCE,
    PROMPT_VERSION,
    REJECTION_CODES,
    REJECTIONS,
    outcome_of,
)
from tests.conftest import FIXTURES

LABELLED = FIXTURES / "judge" / "labelled_questions.jsonl"
REGISTRY = "shared/ask-human-data/blocker_registry.json"
MESSAGE_HEAD = "The agent's message (a JSON string):\n"

# How the stand-in answers the labelled fixture questions: a blocker with a confidence, a
# rejection code, or nothing. Every labelled line is answered as labelled, but for two: a
# positive the stand-in is unsure of (refused by the confidence rule) and a negative it
# matches with confidence (a false match), so the measure has something to count.
UNSURE = "What should happen to an accented character like an e with an acute accent?"
FALSE_MATCH = "Which Python versions must the package support?"
LABELLED_REJECTIONS = {
    "I assume the summer term is July and August, right?": "confirmation",
    "What is the best way to write this query?": "best-practice",
    "The function is in textkit/wrap.py.": "statement",
}

# One message per rejection class on the fixture tasks, each near a blocker's topic; the
# stand-in names the blocker too for some (a rejection still wins).
REJECTED = [
    ("statement", "sql_1", "The heat wave is mentioned in the question.", "heat_wave_dates"),
    ("no-request", "sql_1", "Heat wave dates?", None),
    ("confirmation", "sql_0", "The summer term is June to August, correct?", "summer_term_dates"),
    ("tangential", "sql_1", "Which stations are the lowest in the network?", None),
    ("vague", "swe_0", "Is there anything else I should know?", None),
    ("best-practice", "swe_0", "What is the usual way to slugify text in Python?", None),
    ("no-specific-intent", "swe_1", "Tell me about the ellipsis.", None),
    (
        "multi-topic",
        "swe_1",
        "Does the ellipsis count towards the width, and may the cut fall inside a word?",
        "ellipsis_within_width",
    ),
    ("definition-echo", "sql_1", "What does 'high-altitude' mean?", None),
    (
        "padding",
        "sql_0",
        "I read the schema and the loans table, and the task says more than usual, so what "
        "loan count per term is normal for a member?",
        "usual_number_of_loans",
    ),
]


class StandIn:
    """Answers by rule: ``rules[message] = (rejection, blocker_key, confidence)``; any other
    message is no match. ``status`` other than 200 plays an endpoint that is down."""

    def __init__(self):
        self.rules: dict[str, tuple[str | None, str | None, float]] = {}
        self.requests: list[dict] = []
        self.status = 200

    def reply(self, body: dict) -> dict:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if len(body["messages"]) > 2:  # a correction: answer the original user message
            user = body["messages"][1]["content"]
        line = user.split(MESSAGE_HEAD, 1)[1].split("\n", 1)[0]
        message = json.loads(line)
        listed = {b["id"] for b in json.loads(user.split("\n", 1)[1].split("\n\n", 1)[0])}
        rejection, key, confidence = self.rules.get(message, (None, None, 0))
        assert key is None or key in listed, f"{key} is not in the prompt"
        assert "Step 1, rejections" in system  # a model following this prompt
        content = {
            "reasoning": f"stand-in: {rejection or ('match' if key else 'no match')}",
            "rejection": rejection,
            "blocker_key": key,
            "confidence": confidence,
        }
        return {"choices": [{"message": {"role": "assistant", "content": json.dumps(content)}}]}


@pytest.fixture
def stand_in(settings):
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            state.requests.append({"raw": raw, "body": json.loads(raw)})
            status = state.status
            payload = json.dumps(state.reply(json.loads(raw)) if status == 200 else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    settings.JUDGE_LLM_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.JUDGE_LLM_MODEL = "stand-in"
    settings.JUDGE_LLM_TIMEOUT_S = 5
    yield state
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _resolutions(registries: Path) -> list[str]:
    out = []
    for path in registries.glob("*.json"):
        for blocker in json.loads(path.read_text())["blockers"]:
            out += [blocker["resolution"], *blocker["resolution"].splitlines()]
    return [fragment for fragment in out if fragment.strip()]


def _check_prompts(stand_in: StandIn, registries: Path) -> None:
    """Every request carried every criterion of the release's judge, and no resolution."""
    assert stand_in.requests
    resolutions = _resolutions(registries)
    for request in stand_in.requests:
        body, raw = request["body"], request["raw"]
        assert body["temperature"] == 0 and body["model"] == "stand-in"
        system = body["messages"][0]["content"]
        for code, rule in REJECTIONS:
            assert f"- {code}: {rule}" in system
        for name, criterion in MATCH_CRITERIA:
            assert f"- {name}: {criterion}" in system
        assert f"only a match of {MIN_CONFIDENCE} or more is answered" in system
        decoded = "\n".join(message["content"] for message in body["messages"])
        for fragment in resolutions:
            assert fragment not in decoded
            assert json.dumps(fragment)[1:-1] not in raw


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_labelled_file_is_measured_as_the_embedded_judge_is(
    stand_in, registries, tmp_path, capsys
):
    labelled = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    for line in labelled:
        if line["expected"] is not None:
            confidence = 80 if line["question"] == UNSURE else 98
            stand_in.rules[line["question"]] = (None, line["expected"], confidence)
        elif line["question"] in LABELLED_REJECTIONS:
            stand_in.rules[line["question"]] = (LABELLED_REJECTIONS[line["question"]], None, 0)
    stand_in.rules[FALSE_MATCH] = (None, "letters_without_ascii_form", 96)

    out, report = tmp_path / "judged.jsonl", tmp_path / "report.json"
    call_command(
        "judge_batch",
        registries=str(registries),
        questions=str(LABELLED),
        out=str(out),
        report=str(report),
        judge="llm",
    )
    judged = [json.loads(line) for line in out.read_text().splitlines()]
    assert [{k: j[k] for k in ("task", "question", "expected")} for j in judged] == labelled
    assert len(stand_in.requests) == len(labelled)  # one call a question: no retries
    _check_prompts(stand_in, registries)

    by_question = {j["question"]: j for j in judged}
    assert by_question[UNSURE]["predicted"] is None
    assert by_question[UNSURE]["response"] == IRRELEVANT
    assert by_question[UNSURE]["reason"].startswith("low-confidence (accent_mapping_rule at 80")
    assert by_question[FALSE_MATCH]["predicted"] == "letters_without_ascii_form"
    for question, code in LABELLED_REJECTIONS.items():
        assert by_question[question]["predicted"] is None
        assert outcome_of(by_question[question]["reason"]) == code
    for line in judged:
        if line["predicted"] is not None:
            resolution = {
                b["id"]: b["resolution"]
                for b in json.loads((registries / f"{line['task']}.json").read_text())["blockers"]
            }[line["predicted"]]
            assert line["response"] == resolution
            assert line["reason"].startswith("match (confidence ")
        else:
            assert line["response"] == IRRELEVANT

    # 14 questions target a blocker: 13 found (the unsure one refused); 14 matched, 13 right.
    figures = json.loads(report.read_text())
    assert figures["judge"] == f"{PROMPT_VERSION}:stand-in"
    assert figures["all"] == {
        "precision": round(13 / 14, 4),
        "recall": round(13 / 14, 4),
        "positives": 14,
        "negatives": 5,
        "predicted": 14,
        "correct": 13,
    }
    assert figures["swe"]["correct"] == 6 and figures["swe"]["predicted"] == 7
    assert figures["llm_outcomes"] == {
        "best-practice": 1,
        "confirmation": 1,
        "low-confidence": 1,
        "match": 14,
        "no-match": 1,
        "statement": 1,
    }
    printed = capsys.readouterr().out
    assert f"19 questions judged ({PROMPT_VERSION}:stand-in): 14 matched a blocker" in printed
    assert "all: precision 0.929, recall 0.929 (13 correct of 14 matched" in printed
    assert "sql: precision 1.000, recall 1.000" in printed
    assert "recall per task over 4 tasks" in printed
    assert "LLM judge outcomes: best-practice 1, confirmation 1, low-confidence 1" in printed


def test_each_rejection_reason_round_trips_to_the_output(stand_in, registries, tmp_path, capsys):
    assert {code for code, *_ in REJECTED} == set(REJECTION_CODES)
    for code, _task, question, named in REJECTED:
        stand_in.rules[question] = (code, named, 0)
    lines = [
        {"task": task, "question": question, "expected": None}
        for _code, task, question, _named in REJECTED
    ]
    out = tmp_path / "judged.jsonl"
    call_command(
        "judge_batch",
        registries=str(registries),
        questions=str(_write(tmp_path / "q.jsonl", lines)),
        out=str(out),
        judge="llm",
    )
    judged = [json.loads(line) for line in out.read_text().splitlines()]
    _check_prompts(stand_in, registries)
    for (code, _task, question, named), line in zip(REJECTED, judged, strict=True):
        assert line["question"] == question
        assert line["predicted"] is None and line["response"] == IRRELEVANT
        assert outcome_of(line["reason"]) == code
        refused = f" (it named {named}, refused)" if named else ""
        assert line["reason"] == f"{code}{refused}: stand-in: {code}"
    printed = capsys.readouterr().out
    assert "0 matched a blocker, 10 irrelevant" in printed
    assert "LLM judge outcomes: " + ", ".join(f"{c} 1" for c in sorted(REJECTION_CODES)) in printed
    # Nothing targets a blocker: precision has nothing to count, recall nothing to find.
    assert "all: precision 1.000, recall 0.000 (0 correct of 0 matched, 0 targeting" in printed


def test_an_endpoint_that_fails_stops_the_batch_naming_the_line(stand_in, registries, tmp_path):
    stand_in.status = 503
    lines = [{"task": "sql_0", "question": "Between which two days does the summer term fall?"}]
    out = tmp_path / "judged.jsonl"
    with pytest.raises(CommandError, match=r"line 1: the judge could not decide.*503"):
        call_command(
            "judge_batch",
            registries=str(registries),
            questions=str(_write(tmp_path / "q.jsonl", lines)),
            out=str(out),
            judge="llm",
        )
    assert not out.exists()
    assert len(stand_in.requests) == 3  # the first try and two retries


def test_no_endpoint_configured_is_a_command_error(registries, tmp_path, settings):
    settings.JUDGE_LLM_BASE_URL = ""
    lines = [{"task": "sql_0", "question": "Between which two days does the summer term fall?"}]
    with pytest.raises(CommandError, match="JUDGE_LLM_BASE_URL is not set"):
        call_command(
            "judge_batch",
            registries=str(registries),
            questions=str(_write(tmp_path / "q.jsonl", lines)),
            out=str(tmp_path / "judged.jsonl"),
            judge="llm",
        )
