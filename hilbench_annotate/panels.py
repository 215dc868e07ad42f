"""What the task page shows that an app above core owns, by name.

The task page is core's: the task, its specification, environment, blockers and revisions.
Its structural checks belong to the validators and its threads to review, and core may not
read their models (not even through a reverse relation such as ``task.comments``). Each such
app registers a panel from its ``AppConfig.ready``: a template of its own and a function that
gives the template's context for one task. The page includes the panels' templates in
``position`` order, between the blockers and the revisions, with the page's context (``task``,
``can_edit``, ``request``…) and each panel's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

# ``context(task=…, user=…) -> {name: value}``, the names the panel's template reads; its
# queries run when the page is rendered, a fixed number per panel.
PanelContext = Callable[..., dict]


@dataclass(frozen=True)
class TaskPanel:
    name: str
    template: str
    context: PanelContext
    position: int


_PANELS: dict[str, TaskPanel] = {}


def register_task_panel(name: str, *, template: str, context: PanelContext, position: int) -> None:
    """Register (or, on a second ``ready``, replace) the task page's panel ``name``."""
    _PANELS[name] = TaskPanel(name=name, template=template, context=context, position=position)


def task_panels(*, task, user, page: dict) -> dict:
    """The context the panels add to the task page: ``panels``, their templates in order, and
    the names each one's template reads. A name already in the page or given by two panels
    is refused: one would silently hide the other."""
    added: dict = {"panels": []}
    for panel in sorted(_PANELS.values(), key=lambda p: (p.position, p.name)):
        context = panel.context(task=task, user=user)
        clash = (page.keys() | added.keys()) & context.keys()
        if clash:
            raise ImproperlyConfigured(
                f"The task page's panel {panel.name!r} gives {', '.join(sorted(clash))}, "
                "which the page or another panel already has."
            )
        added["panels"].append(panel.template)
        added.update(context)
    return added
