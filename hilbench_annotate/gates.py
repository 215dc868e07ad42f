"""The automated gates a review layer or an export can require, by name.

A gate is ``check(task) -> (green, message)`` on the task's current revision. Each app that
owns a kind of evidence registers its gates in its ``AppConfig.ready`` (``authoring/gates.py``:
lint; ``validators/gates.py``: the structural check groups; ``judge/gates.py``: the judge's
recall; ``evaluation/gates.py``: the pass-rate selection). The review pipeline and the
exporter read them here and import none of those apps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GateCheck = Callable[[object], tuple[bool, str]]


@dataclass(frozen=True)
class Gate:
    name: str
    check: GateCheck
    description: str  # one line for the pipeline editor


_GATES: dict[str, Gate] = {}


def register_gate(name: str, check: GateCheck, *, description: str) -> None:
    """Register (or, on a second ``ready``, replace) the gate ``name``."""
    _GATES[name] = Gate(name=name, check=check, description=description)


def gate_names() -> list[str]:
    return list(_GATES)


def gate_descriptions() -> dict[str, str]:
    return {name: gate.description for name, gate in _GATES.items()}


def gate_results(task, names: list[str]) -> list[tuple[str, bool, str]]:
    """``(name, green, message)`` for each gate named; an unknown name is red, saying so."""
    results = []
    for name in names:
        gate = _GATES.get(name)
        if gate is None:
            results.append((name, False, f"no automated check is called {name!r}"))
        else:
            green, message = gate.check(task)
            results.append((name, green, message))
    return results
