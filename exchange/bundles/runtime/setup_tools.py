"""Install the task's commands in /usr/local/bin (run once when the agent's image is built).

Each command calls one sidecar tool through /usr/local/bin/mcp; its last argument takes the
rest of the command line, so queries and questions need no quoting beyond the shell's.
Which commands: ``TOOLS`` below, one line per command the mode offers.
"""

from __future__ import annotations

import json
import os
import sys

TEMPLATE = """#!/usr/bin/env python3
import json, subprocess, sys
keys = {keys!r}
args = sys.argv[1:]
params = {{k: (args[i] if i < len(args) else "") for i, k in enumerate(keys[:-1])}}
params[keys[-1]] = " ".join(args[len(keys) - 1:])
sys.exit(subprocess.call(["python3", "/usr/local/bin/mcp", {url!r}, {tool!r}, json.dumps(params)]))
"""

# Filled in when the bundle is written: [command, url, tool, [argument names]].
TOOLS = json.loads(os.environ.get("HILBENCH_TOOLS", "[]") or "[]")

if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/bin"
    for name, url, tool, keys in TOOLS:
        path = os.path.join(target, name)
        with open(path, "w") as handle:
            handle.write(TEMPLATE.format(keys=keys, url=url, tool=tool))
        os.chmod(path, 0o755)  # noqa: S103 - commands for the agent
        print("installed", path)
