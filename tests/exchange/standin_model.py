"""A stand-in model for agent runs: a real OpenAI-compatible HTTP server on loopback that
answers Harbor's ``terminus-2`` with scripted turns in its JSON format (analysis, plan,
commands, task_complete). It proves the pipeline — Harbor, the agent loop, the task's tools,
the verifier, the import — not a model.

The script, from the conversation it is sent: it reads the task's instruction (the first user
message) and, per the mode it shows, in ``ask_human`` mode asks one question first
(``ask_human "…"``); in ``full_info`` and ``ask_human`` it submits the gold query of the task
whose question the instruction holds; in ``baseline`` it submits a guess that is wrong. Then
it says the task is complete (twice: terminus-2 asks to confirm).
"""

from __future__ import annotations

import json
import shlex
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _turn(analysis: str, keystrokes: str | None, complete: bool) -> str:
    commands = [{"keystrokes": keystrokes + "\n", "duration": 3.0}] if keystrokes else []
    return json.dumps(
        {"analysis": analysis, "plan": analysis, "commands": commands, "task_complete": complete}
    )


class StandinModel:
    """``tasks``: a list of {"marker": text of the task's question, "gold": its SQL,
    "question": what to ask in ask_human mode}. ``requests`` keeps every request."""

    def __init__(self, tasks: list[dict]):
        self.tasks = tasks
        self.requests: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def reply(self, messages: list[dict]) -> str:
        texts = [m.get("content") for m in messages]
        texts = [t if isinstance(t, str) else json.dumps(t) for t in texts]
        instruction = next((t for m, t in zip(messages, texts, strict=True)
                            if m.get("role") == "user"), "")  # fmt: skip
        task = next((t for t in self.tasks if t["marker"] in instruction), None)
        said = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "assistant"]
        asks = "ask_human" in instruction
        full = "## Additional Context" in instruction  # the resolutions, in full_info
        if task is None:
            return _turn("I do not know this task.", None, True)
        if asks and not any("ask_human" in s for s in said):
            return _turn("One thing is unclear: ask.", f"ask_human {shlex.quote(task['question'])}",
                         False)  # fmt: skip
        if not any("submit_sql" in s for s in said):
            query = task["gold"] if (asks or full) else "SELECT 1"
            return _turn("Submit the query.", f"submit_sql {shlex.quote(query)}", False)
        return _turn("Submitted.", None, True)

    def _handler(self):
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 - the http.server interface
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                model.requests.append(body)
                content = model.reply(body.get("messages") or [])
                payload = {
                    "id": f"standin-{len(model.requests)}",
                    "object": "chat.completion",
                    "created": 1700000000,
                    "model": body.get("model", "standin"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }  # fmt: skip
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
