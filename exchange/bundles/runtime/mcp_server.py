"""A minimal MCP server over streamable HTTP (JSON-RPC 2.0, one JSON response per POST):
``initialize``, ``tools/list``, ``tools/call``; ``GET /health`` for compose healthchecks.

    serve(name, tools, port)   # tools: {name: (description, input_schema, function)}

A tool returns text; an exception becomes an ``isError`` result naming it.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOCOL_VERSION = "2025-06-18"
MAX_BODY = 1 << 20


def _handler(name, tools):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet: one line per call on stderr is enough
            sys.stderr.write(f"{name} {fmt % args}\n")

        def _send(self, status, payload):
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok", "server": name})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if self.path.rstrip("/") != "/mcp" or length > MAX_BODY:
                self._send(404 if length <= MAX_BODY else 413, {"error": "POST /mcp"})
                return
            try:
                message = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                self._send(400, _error(None, -32700, "parse error"))
                return
            if not isinstance(message, dict):
                self._send(400, _error(None, -32600, "one JSON-RPC request per POST"))
                return
            reply = _dispatch(name, tools, message)
            if reply is None:  # a notification
                self.send_response(202)
                self.end_headers()
            else:
                self._send(200, reply)

    return Handler


def _error(request_id, code, message):
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _dispatch(name, tools, message):
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"},
        }
    elif method == "tools/list":
        result = {
            "tools": [
                {"name": tool, "description": spec[0], "inputSchema": spec[1]}
                for tool, spec in tools.items()
            ]
        }
    elif method == "tools/call":
        params = message.get("params") or {}
        spec = tools.get(params.get("name"))
        if spec is None:
            return _error(request_id, -32602, f"unknown tool {params.get('name')!r}")
        try:
            text = spec[2](**(params.get("arguments") or {}))
            result = {"content": [{"type": "text", "text": str(text)}], "isError": False}
        except Exception as exc:  # noqa: BLE001 - reported to the caller as a tool error
            error = f"{type(exc).__name__}: {exc}"
            result = {"content": [{"type": "text", "text": error}], "isError": True}
    elif method == "ping":
        result = {}
    else:
        return _error(request_id, -32601, f"unknown method {method!r}")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def serve(name, tools, port=None):
    port = int(port or os.environ.get("PORT", "8000"))
    host = os.environ.get("HOST", "0.0.0.0")  # noqa: S104 - a container's own port
    server = ThreadingHTTPServer((host, port), _handler(name, tools))
    sys.stderr.write(f"{name} listening on {host}:{server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever()


def schema(**properties):
    """A JSON schema of required string arguments."""
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
        "required": list(properties),
    }
