#!/usr/bin/env python3
"""The agent's command-line MCP client: ``mcp URL TOOL '{"arg": "value"}'`` calls one tool of
one sidecar over streamable HTTP and prints its text (the wrappers setup_tools.py installs
call it)."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

# How long to wait for a sidecar that does not listen yet: the agent's container starts
# before the sidecars that share its network namespace.
CONNECT_WAIT_S = 120


def _post(request):
    deadline = time.monotonic() + CONNECT_WAIT_S
    while True:
        try:
            # The sidecar's own http:// address, from the task's configuration.
            with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310
                return response.read()
        except urllib.error.URLError as exc:
            refused = isinstance(exc.reason, ConnectionRefusedError)
            if not refused or time.monotonic() > deadline:
                raise
            time.sleep(1)


def call(url, tool, arguments):
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}}  # fmt: skip
    if not url.startswith(("http://", "https://")):
        raise SystemExit(f"not an http(s) address: {url}")
    request = urllib.request.Request(  # noqa: S310 - http(s) only, checked above
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    reply = json.loads(_post(request))
    if "error" in reply:
        return True, reply["error"].get("message", "error")
    result = reply["result"]
    text = "\n".join(part.get("text", "") for part in result.get("content", []))
    return result.get("isError", False), text


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: mcp URL TOOL JSON-ARGUMENTS")
    failed, text = call(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
    print(text)
    sys.exit(1 if failed else 0)
