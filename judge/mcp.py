"""The ask_human service as an MCP server (JSON-RPC 2.0 over HTTP POST, one JSON response
per request): ``POST /api/mcp`` with the same token as the REST API.

Tools: ``start_ask_human_run {task, label?}`` -> the run id, and ``ask_human {run,
question}`` -> the response text (the blocker's resolution verbatim, or
``irrelevant question``). Both call the same services as ``/api/ask_human``; a judge failure
is a tool error naming it, never a silent "irrelevant question".
"""

from django.db import transaction
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from hilbench_annotate.errors import DomainError, LimitReached, Refused

from .access import access_ask_human_run, task_for_ask_human
from .base import JudgeError
from .limits import harness_session
from .services import ask_human, ask_human_run_start

PROTOCOL_VERSION = "2025-06-18"
RATE_LIMITED = -32029  # JSON-RPC's server-error range; HTTP 429 carries it too
MAX_BATCH = 20  # each message may call the judge
TOOLS = [
    {
        "name": "start_ask_human_run",
        "description": "Start an evaluation run of one task; returns the run id for ask_human.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "task": {"type": "integer", "description": "Task id"},
                "label": {"type": "string", "description": "Model / pass, for your records"},
            },
            "required": ["task"],
        },
    },
    {
        "name": "ask_human",
        "description": "Ask a specific clarifying question about a task blocker.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "run": {"type": "integer", "description": "Run id from start_ask_human_run"},
                "question": {"type": "string", "description": "One specific question"},
            },
            "required": ["run", "question"],
        },
    },
]


def _error(request_id, code: int, message: str, data: dict | None = None) -> dict:
    error = {"code": code, "message": message, **({"data": data} if data else {})}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _result(request_id, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _text(text: str, *, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _int(arguments: dict, name: str) -> int:
    value = arguments.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise DomainError(f"{name} must be an integer")
    return value


def _call(user, session: str, name: str, arguments: dict) -> dict:
    if name == "start_ask_human_run":
        try:
            task = task_for_ask_human(user, _int(arguments, "task"))
        except Http404:
            raise DomainError("No such task.") from None
        with transaction.atomic():
            run = ask_human_run_start(
                task=task, actor=user, label=str(arguments.get("label", ""))[:200], session=session
            )
        return _text(str(run.pk))
    if name == "ask_human":
        try:
            run = access_ask_human_run(user, _int(arguments, "run"))
        except Http404:
            raise DomainError("No such ask_human run.") from None
        question = arguments.get("question")
        if not isinstance(question, str):
            raise DomainError("question must be text")
        return _text(ask_human(run=run, actor=user, question=question).response)
    raise KeyError(name)


def handle(user, message: object, session: str = "") -> dict | None:
    """One JSON-RPC message -> its response (None for a notification). ``session``: the
    caller's harness session (``limits.harness_session``)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, -32600, "Invalid Request: expected a JSON-RPC 2.0 object")
    request_id = message.get("id")
    method = message.get("method")
    if "id" not in message:
        return None  # notifications (notifications/initialized…) need no answer
    if method == "initialize":
        return _result(
            request_id,
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "hilbench-annotate-ask-human", "version": "1"},
            },
        )
    if method == "ping":
        return _result(request_id, {})
    if method == "tools/list":
        return _result(request_id, {"tools": TOOLS})
    if method == "tools/call":
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _error(request_id, -32602, "params must be an object")
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return _error(request_id, -32602, "arguments must be an object")
        try:
            return _result(request_id, _call(user, session, name, arguments))
        except LimitReached as error:
            if error.retry_after is None:  # a cap: the tool refuses, naming it
                return _result(request_id, _text(str(error), error=True))
            data = {"limit": error.limit, "retry_after": error.retry_after}
            return _error(request_id, RATE_LIMITED, str(error), data)
        except KeyError:
            return _error(request_id, -32602, f"Unknown tool {name!r}")
        except JudgeError as error:
            return _result(request_id, _text(f"Judge error: {error}", error=True))
        except Refused as error:
            return _result(request_id, _text(str(error), error=True))
    return _error(request_id, -32601, f"Method not found: {method}")


class McpApi(APIView):
    """MCP (Model Context Protocol) endpoint for the ask_human tool."""

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 202: None, 429: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        payload = request.data
        session = harness_session(request.user, request.auth)
        if isinstance(payload, list):  # a JSON-RPC batch
            if len(payload) > MAX_BATCH:
                return Response(
                    _error(None, -32600, f"A batch holds at most {MAX_BATCH} messages.")
                )
            answers = [a for a in (handle(request.user, m, session) for m in payload) if a]
            if not answers:
                return Response(status=202)
            # Other messages of the batch may have been answered: 200, but say when to retry.
            waits = [_retry_after(a) for a in answers if _retry_after(a)]
            return Response(answers, headers={"Retry-After": str(max(waits))} if waits else None)
        answer = handle(request.user, payload, session)
        if answer is None:
            return Response(status=202)
        wait = _retry_after(answer)
        if wait:
            return Response(answer, status=429, headers={"Retry-After": str(wait)})
        return Response(answer)


def _retry_after(answer: dict) -> int | None:
    error = answer.get("error") or {}
    return error.get("data", {}).get("retry_after") if error.get("code") == RATE_LIMITED else None
