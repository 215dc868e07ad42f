"""Deterministic demo inputs: a BIRD-format text-to-SQL set and a SWE-bench-style instance.

The generators are plain Python (stdlib plus the ``git`` CLI) so they can run from a management
command, a test fixture or a shell without Django being configured. The same ``out_dir`` always
receives the same data, which keeps screenshots, docs and tests stable.
"""

from __future__ import annotations

from pathlib import Path

from exchange.demo import sql_demo, swe_demo

__all__ = ["build_all", "sql_demo", "swe_demo"]


def build_all(out_dir: Path | str) -> dict[str, dict[str, Path]]:
    """Build both demo data sets under ``out_dir/sql`` and ``out_dir/swe``."""
    root = Path(out_dir)
    return {
        "sql": sql_demo.build(root / "sql"),
        "swe": swe_demo.build(root / "swe"),
    }
