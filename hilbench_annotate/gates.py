"""The automated gates a review layer or an export can require, by name.

A gate gives ``(green, message)`` for a task's current revision: either as
``check_many(tasks) -> {task id: (green, message)}``, for many tasks in a fixed number of
queries (an export reads every gate of thousands of tasks), or as ``check(task)``, asked
once for each task. Each app that
owns a kind of evidence registers its gates in its ``AppConfig.ready`` (``authoring/gates.py``:
lint; ``validators/gates.py``: the structural check groups; ``judge/gates.py``: the judge's
recall; ``evaluation/gates.py``: the pass-rate selection). The review pipeline and the
exporter read them here and import none of those apps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GateCheck = Callable[[object], tuple[bool, str]]
GateCheckMany = Callable[[list], dict[int, tuple[bool, str]]]


@dataclass(frozen=True)
class Gate:
    name: str
    description: str  # one line for the pipeline editor
    check_many: GateCheckMany

    def verdicts(self, tasks: list) -> dict[int, tuple[bool, str]]:
        return self.check_many(tasks)


_GATES: dict[str, Gate] = {}


def register_gate(
    name: str,
    check: GateCheck | None = None,
    *,
    description: str,
    check_many: GateCheckMany | None = None,
) -> None:
    """Register (or, on a second ``ready``, replace) the gate ``name``: ``check_many``, or
    ``check`` asked for each task."""
    if check_many is None:
        if check is None:
            raise ValueError(f"gate {name!r} needs check or check_many")

        def check_many(tasks, check=check):
            return {task.pk: check(task) for task in tasks}

    _GATES[name] = Gate(name=name, description=description, check_many=check_many)


def gate_names() -> list[str]:
    return list(_GATES)


def gate_descriptions() -> dict[str, str]:
    return {name: gate.description for name, gate in _GATES.items()}


def gate_results(task, names: list[str]) -> list[tuple[str, bool, str]]:
    """``(name, green, message)`` for each gate named; an unknown name is red, saying so."""
    return gate_results_many([task], names)[task.pk]


def gate_results_many(tasks: list, names: list[str]) -> dict[int, list[tuple[str, bool, str]]]:
    """``gate_results`` of every task for the same gates, each gate asked once for all."""
    verdicts = {}
    for name in names:
        gate = _GATES.get(name)
        verdicts[name] = (
            gate.verdicts(tasks)
            if gate is not None
            else dict.fromkeys(
                (t.pk for t in tasks), (False, f"no automated check is called {name!r}")
            )
        )
    return {task.pk: [(name, *verdicts[name][task.pk]) for name in names] for task in tasks}
