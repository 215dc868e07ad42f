"""The house plan of docs/architecture.md holds: apps depend downward only, no import hides a
cycle inside a function, modules and functions stay readable, and the cross-cutting pieces
(permissions, jobs, gates) each have one home."""

import ast
import logging
import re
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.db import models
from importlinter.cli import lint_imports

from hilbench_annotate.jobs import Job

ROOT = Path(__file__).resolve().parent.parent
APPS = ("hilbench_annotate", "authoring", "review", "validators", "judge", "evaluation", "exchange")
# Generated demo inputs (tables of made-up rows and files) are data, not logic.
DATA_MODULES = {"exchange/demo/sql_demo.py", "exchange/demo/swe_demo.py"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


@contextmanager
def _loggers_kept():
    """import-linter's command configures logging (``dictConfig``), which disables every
    logger that exists: on this test's worker, the app's warnings would go unseen by every
    test after it (``test_a_failing_refresh_is_logged_not_raised`` failed so in CI)."""
    loggers = [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    disabled = {logger: logger.disabled for logger in loggers}
    try:
        yield
    finally:
        for logger, was in disabled.items():
            logger.disabled = was


def test_the_layer_contracts_of_pyproject_hold(capsys, monkeypatch):
    """import-linter's contracts ([tool.importlinter] in pyproject.toml): the layers
    exchange → review | evaluation → judge → validators → authoring → core, review beside
    the judge and the validators rather than on them, and a leaf toolkit."""
    monkeypatch.chdir(ROOT)
    app_logger = logging.getLogger("hilbench_annotate.services.bulk")
    with _loggers_kept():
        exit_code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    assert not app_logger.disabled  # the app's loggers still log after it
    report = capsys.readouterr().out
    assert exit_code == 0, report
    assert "3 kept, 0 broken" in report, report


def test_the_contracts_draw_the_diagram_of_architecture_md():
    """The layers alone would let review import the judge and the validators (they are below
    it); the diagram draws review → authoring only, so a contract forbids the rest."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    forbidden = {
        source: set(contract["forbidden_modules"])
        for contract in contracts["contracts"]
        if contract["type"] == "forbidden"
        for source in contract["source_modules"]
    }
    assert {"judge", "validators"} <= forbidden.get("review", set())


def test_no_function_imports_a_project_module_except_app_ready():
    """Project imports live at module level. ``AppConfig.ready`` is the one exception: models
    are not loaded yet when an app module is imported (Django's rule)."""
    found = []
    for name, source in _sources():
        tree = ast.parse(source)
        for function in _functions(tree):
            if function.name == "ready" and name.endswith("/apps.py"):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    project = node.level or (node.module or "").split(".")[0] in APPS
                elif isinstance(node, ast.Import):
                    project = any(alias.name.split(".")[0] in APPS for alias in node.names)
                else:
                    continue
                if project:
                    found.append(f"{name}:{node.lineno} in {function.name}")
    assert not found, found


def test_modules_and_functions_stay_within_the_split_points():
    too_long = []
    for name, source in _sources():
        if name in DATA_MODULES:
            continue
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{name}: {lines} lines")
        for function in _functions(ast.parse(source)):
            length = function.end_lineno - function.lineno + 1
            if length > MAX_FUNCTION_LINES:
                too_long.append(f"{name}:{function.lineno} {function.name}: {length} lines")
    assert not too_long, too_long


def _definitions(kind, name):
    """Where ``name`` is defined (a function, or a module-level assignment) in the apps."""
    places = []
    for module, source in _sources():
        for node in ast.parse(source).body if kind == "assign" else ast.walk(ast.parse(source)):
            if kind == "assign" and isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    places.append(module)
            elif kind == "def" and isinstance(node, ast.FunctionDef) and node.name == name:
                places.append(module)
    return places


@pytest.mark.parametrize(
    "kind,name,home",
    [
        ("assign", "READER_ROLES", "hilbench_annotate/vocabulary.py"),
        ("def", "process_exception", "hilbench_annotate/access.py"),
        ("def", "on_failure", "hilbench_annotate/jobs.py"),
        ("def", "job_claim", "hilbench_annotate/jobs.py"),
        ("def", "job_fail", "hilbench_annotate/jobs.py"),
        ("def", "jobs_reap", "hilbench_annotate/jobs.py"),
        ("def", "register_gate", "hilbench_annotate/gates.py"),
        ("def", "require_role", "hilbench_annotate/access.py"),
    ],
)
def test_each_cross_cutting_piece_has_one_definition(kind, name, home):
    assert _definitions(kind, name) == [home]


FEATURE_APPS = tuple(app for app in APPS if app != "hilbench_annotate")
CORE_TEMPLATES = (
    *sorted((ROOT / "templates" / "tasks").glob("*.html")),
    ROOT / "templates/base.html",
)
# ORM calls whose string arguments and keyword names are lookup paths.
LOOKUP_CALLS = {
    "filter", "exclude", "get", "annotate", "aggregate", "order_by", "values", "values_list",
    "only", "defer", "select_related", "prefetch_related", "Prefetch", "Count", "Sum", "Min",
    "Max", "Avg", "F", "Q", "OuterRef",
}  # fmt: skip
TEMPLATE_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def _upward_relations() -> tuple[dict[str, str], dict[str, str]]:
    """The names a core object would reach a higher app's rows by: for each relation from a
    feature app's model to a core model (or the user model), its reverse accessor
    (``task.comments``) and its query name (``filter(comments__…)``), each → the field."""
    core = {*django_apps.get_app_config("hilbench_annotate").get_models(), get_user_model()}
    accessors, query_names = {}, {}
    for label in FEATURE_APPS:
        for model in django_apps.get_app_config(label).get_models():
            for field in model._meta.get_fields():
                if not isinstance(field, models.ForeignKey | models.ManyToManyField):
                    continue
                if field.related_model not in core or field.remote_field.hidden:
                    continue
                where = f"{model._meta.label}.{field.name}"
                accessors[field.remote_field.get_accessor_name()] = where
                query_names[field.related_query_name()] = where
    return accessors, query_names


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def reverse_relations_read(source: str, accessors, query_names) -> list[str]:
    """``line: name`` for each reverse relation a Python module reads: an attribute
    (``task.validation_runs``) or the first step of an ORM lookup path."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in accessors:
            found.add(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and _call_name(node) in LOOKUP_CALLS:
            paths = [k.arg for k in node.keywords if k.arg]
            paths += [a.value for a in node.args if isinstance(a, ast.Constant)]
            for path in paths:
                if isinstance(path, str) and path.lstrip("-").split("__")[0] in query_names:
                    found.add(f"{node.lineno}: {path}")
    return sorted(found)


def template_reverse_relations_read(text: str, accessors) -> list[str]:
    found = []
    for code in TEMPLATE_CODE.finditer(text):
        line = text.count("\n", 0, code.start()) + 1
        found += [f"{line}: .{n}" for n in re.findall(r"\.(\w+)", code.group()) if n in accessors]
    return found


@pytest.mark.parametrize(
    "source,caught",
    [
        ("task.comments.filter(parent=None)", True),
        ("task.validation_runs.first()", True),
        ("Task.objects.filter(validation_runs__status='passed')", True),
        ("Task.objects.prefetch_related('comments__author')", True),
        ("Task.objects.order_by('-assignments__created_at')", True),
        ("user.notifications.count()", True),
        ("task.revisions.first()", False),
        ("Task.objects.prefetch_related('blockers', 'tags')", False),
        ("run.results.all()", False),  # a feature model's own relation, not core's
    ],
)
def test_the_reverse_relation_rule_knows_core_from_feature_relations(source, caught):
    accessors, query_names = _upward_relations()
    assert bool(reverse_relations_read(source, accessors, query_names)) is caught


def test_the_reverse_relation_rule_reads_template_code_not_prose():
    accessors, _query_names = _upward_relations()
    text = (
        "<p>See the comments.</p>\n{% for c in task.comments.all %}{{ c.author.review_decisions }}"
    )
    assert template_reverse_relations_read(text, accessors) == [
        "2: .comments",
        "2: .review_decisions",
    ]


def test_core_reads_no_reverse_relation_of_a_higher_app():
    """import-linter sees imports, not ``task.comments``: the ORM's reverse relations let core
    reach review's or the validators' rows without importing them. Core's modules and its
    templates (the task pages, the base) use none; what the task page shows of the apps
    above comes from the panels they register (``hilbench_annotate/panels.py``)."""
    accessors, query_names = _upward_relations()
    assert {"comments", "validation_runs", "assignments", "notifications"} <= accessors.keys()
    reads = [
        f"{module}:{place}"
        for module, source in _sources()
        if module.startswith("hilbench_annotate/")
        for place in reverse_relations_read(source, accessors, query_names)
    ]
    for template in CORE_TEMPLATES:
        text = template.read_text(encoding="utf-8")
        name = template.relative_to(ROOT).as_posix()
        reads += [f"{name}:{place}" for place in template_reverse_relations_read(text, accessors)]
    assert not reads, reads


# The job kit's own writes: ``job_claim`` (running, attempts, worker, started_at),
# ``job_heartbeat`` (heartbeat_at), ``job_finish`` and ``job_fail`` (a finished or crashed
# status, finished_at). Only jobs have these fields, and only jobs run, so these are the kit's
# whatever the receiver. An app may still move its job through states of its own (an export
# chunk queued again, a finished export's file expired) and create a job that never runs
# (imported scores are a finished study).
KIT_FIELDS = {"attempts", "worker", "started_at", "heartbeat_at", "finished_at"}
CLAIM_FIELDS = {"attempts", "worker", "started_at", "heartbeat_at"}
KIT_ONLY_STATUSES = {"RUNNING", "CRASHED"}
# Finished statuses are the kit's on a job; other models have "failed" states of their own.
JOB_FINISHED_STATUSES = {"SUCCEEDED", "PASSED", "FAILED", "ERROR"}
WRITES = {"update", "create", "update_or_create", "get_or_create"}


def _job_models() -> set[str]:
    return {model.__name__ for model in django_apps.get_models() if issubclass(model, Job)}


def _names(node) -> set[str]:
    """``X.Status.RUNNING`` → RUNNING, ``model.CRASHED`` → CRASHED, "running" → RUNNING."""
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value.upper()}
    return {n for child in ast.iter_child_nodes(node) for n in _names(child)}


def _model_of(call: ast.Call) -> str | None:
    """``Model`` of ``Model.objects.….update(…)``; None when the receiver is a variable."""
    node = call.func.value
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            return node.value.id if isinstance(node.value, ast.Name) else None
        node = node.func if isinstance(node, ast.Call) else node.value
    return None


def _writes_like_the_kit(node, job_models: set[str]) -> bool:
    if isinstance(node, ast.Assign):
        sets_status = any(isinstance(t, ast.Attribute) and t.attr == "status" for t in node.targets)
        return sets_status and "RUNNING" in _names(node.value)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr not in WRITES:
        return False
    values = {k.arg: k.value for k in node.keywords if k.arg}
    status = _names(values["status"]) if "status" in values else set()
    if node.func.attr != "update":  # a job created running, or as if a worker held it
        return "RUNNING" in status or bool(CLAIM_FIELDS & values.keys())
    if KIT_FIELDS & values.keys() or KIT_ONLY_STATUSES & status:
        return True
    return _model_of(node) in job_models and bool(JOB_FINISHED_STATUSES & status)


def job_writes_by_hand(source: str, job_models: set[str]) -> list[int]:
    """Lines that claim, heartbeat, finish or fail a job without the kit: an ``update`` of a
    job model setting the kit's fields or statuses; anywhere, a write or an assignment that
    makes something running, or a create that starts a job as claimed."""
    return sorted(
        {n.lineno for n in ast.walk(ast.parse(source)) if _writes_like_the_kit(n, job_models)}
    )


@pytest.mark.parametrize(
    "source,caught",
    [
        ("Run.objects.filter(pk=1, status='queued').update(status=Run.Status.RUNNING)", True),
        ("ExportJob.objects.filter(pk=1).update(status=ExportJob.Status.FAILED, error=e)", True),
        ("Run.objects.filter(pk=1).update(status=Run.CRASHED)", True),
        ("Run.objects.filter(pk=1).update(done=F('done') + 1, heartbeat_at=now)", True),
        ("Run.objects.filter(pk=1).update(attempts=F('attempts') + 1)", True),
        ("rows.update(status='running')", True),
        ("model.objects.filter(pk=pk).update(status=model.CRASHED, error=e)", True),
        ("rows.exclude(status__in=FINISHED).update(status=s, finished_at=now)", True),
        ("run.status = Run.Status.RUNNING", True),
        ("Run.objects.create(status=Run.Status.QUEUED, worker=host, attempts=1)", True),
        ("Run.objects.filter(pk=1).update(done=3)", False),
        ("ExportJob.objects.filter(pk=1).update(status=ExportJob.Status.EXPIRED)", False),
        ("Run.objects.filter(pk=1, status=Run.Status.RUNNING).update(phase=p)", False),
        ("Study.objects.create(status=Study.Status.SUCCEEDED, finished_at=now)", False),
        ("Assignment.objects.filter(pk=1).update(status=Assignment.Status.EXPIRED)", False),
        ("Task.objects.filter(pk=1).update(status=Task.Status.FAILED)", False),
    ],
)
def test_the_job_write_rule_tells_the_kit_from_app_states(source, caught):
    assert bool(job_writes_by_hand(source, {"Run", "ExportJob", "Study"})) is caught


def test_no_job_is_claimed_heartbeaten_finished_or_failed_outside_the_kit():
    """The one claim / heartbeat / fail path is ``hilbench_annotate/jobs.py``'s, and not by
    name only: no other module writes what it writes to a job (subclasses of ``jobs.Job``)."""
    job_models = _job_models()
    assert {"ValidationRun", "ExportJob", "ImportJob", "EvaluationRun"} <= job_models
    by_hand = [
        f"{module}:{line}"
        for module, source in _sources()
        if module != "hilbench_annotate/jobs.py"
        for line in job_writes_by_hand(source, job_models)
    ]
    assert not by_hand, by_hand


# The permission family: core's access.py, the row filters it reads (``visible_to``), and each
# app's access.py building its ``access_<entity>`` on them.
ACCESS_MODULES = {"hilbench_annotate/access.py", "hilbench_annotate/querysets.py"} | {
    f"{app}/access.py" for app in APPS
}
LOOKUPS = {"filter", "exclude", "get"}
ROLE_KEY = re.compile(r"^(memberships__)?role(__in)?$")
# A key naming one user: with a role key beside it, the query asks "has this user that role".
ONE_USER_KEY = re.compile(
    r"^(memberships__)?(user|user_id|user__pk|user__username)$|^(pk|id|username)$"
)


def _lookup_keys(call: ast.Call) -> set[str]:
    """The keyword names of a chain of ``filter`` / ``exclude`` / ``get`` calls
    (``….filter(user=u).filter(role=r)`` gives both), read from its outermost call."""
    keys: set[str] = set()
    node = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in LOOKUPS:
            keys |= {k.arg for k in node.keywords if k.arg}
        node = node.func.value
    return keys


def inline_permission_checks(source: str) -> list[int]:
    """Lines that decide a permission by hand: reading ``.is_superuser`` (only the access
    modules know that a site admin may do everything), or a lookup asking whether one user
    holds a role (``Membership.objects.filter(user=…, role=…)``). Listing a project's members
    by role (a dashboard, assignment candidates) names no user and is not a check."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "is_superuser":
            found.add(node.lineno)
        elif isinstance(node, ast.Call):
            keys = _lookup_keys(node)
            if any(ROLE_KEY.match(k) for k in keys) and any(ONE_USER_KEY.match(k) for k in keys):
                found.add(node.lineno)
    return sorted(found)


@pytest.mark.parametrize(
    "source,caught",
    [
        ("if not user.is_superuser and not lead: pass", True),
        ("if run.created_by_id != user.pk and not user.is_superuser: pass", True),
        ("Membership.objects.filter(project=p, user=u, role=Role.LEAD).exists()", True),
        ("Membership.objects.filter(user=u).filter(role__in=roles).exists()", True),
        ("User.objects.filter(username=n, memberships__role=Role.LEAD).first()", True),
        ("Membership.objects.filter(project=p, role__in=REVIEWING)", False),
        ("User.objects.filter(memberships__project=p, memberships__role=r)", False),
        ("Membership.objects.get_or_create(project=p, user=u, role=r)", False),
        ("if not has_role(user, project.pk, Role.LEAD): pass", False),
    ],
)
def test_the_inline_permission_rule_tells_checks_from_listings(source, caught):
    assert bool(inline_permission_checks(source)) is caught


def test_no_permission_check_is_written_inline():
    """Role checks go through ``has_role`` / ``require_role`` / ``ProjectRoles`` and the apps'
    ``access_*`` helpers: no other module reads ``is_superuser`` or asks the memberships
    whether a user holds a role."""
    inline = [
        f"{module}:{line}"
        for module, source in _sources()
        if module not in ACCESS_MODULES
        for line in inline_permission_checks(source)
    ]
    assert not inline, inline


# --- views parse, call one service, render --------------------------------------------------


def _is_view_module(module: str) -> bool:
    """``<app>/views*`` and ``<app>/api*``, modules or packages."""
    parts = module.split("/")
    return len(parts) > 1 and parts[1].startswith(("views", "api"))


def access_denied_catches(source: str) -> list[int]:
    """Lines of ``except`` clauses that name ``AccessDenied`` or its base ``Refused`` (alone
    or in a tuple)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ExceptHandler)
        and node.type is not None
        and {"AccessDenied", "Refused"} & {_name_of(n) for n in ast.walk(node.type)}
    ]


def _name_of(node) -> str:
    return node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")


@pytest.mark.parametrize(
    "source,caught",
    [
        ("try:\n    f()\nexcept AccessDenied:\n    raise", True),
        ("try:\n    f()\nexcept (DomainError, errors.AccessDenied):\n    pass", True),
        ("try:\n    f()\nexcept DomainError as exc:\n    show(exc)", False),
        ("try:\n    f()\nexcept errors.Refused:\n    pass", True),
    ],
)
def test_the_access_denied_rule_reads_except_clauses(source, caught):
    assert bool(access_denied_catches(source)) is caught


def test_no_view_catches_access_denied():
    """``AccessDenied`` is not a ``DomainError``: a view catches domain errors to show them,
    and a refusal goes by itself to the middleware (a 403 page) or the API's handler."""
    assert _is_view_module("review/views.py") and _is_view_module("evaluation/views/runs.py")
    assert _is_view_module("judge/api.py") and not _is_view_module("review/services/api_x.py")
    caught = [
        f"{module}:{line}"
        for module, source in _sources()
        if _is_view_module(module)
        for line in access_denied_catches(source)
    ]
    assert not caught, caught


def unit_of_work_by_hand(source: str) -> list[int]:
    """Lines where a module opens a transaction (``transaction.atomic``, called or as a
    decorator), calls ``select_for_update`` or passes ``for_update=True``."""
    return sorted(
        {
            node.lineno
            for node in ast.walk(ast.parse(source))
            if (isinstance(node, ast.Attribute) and node.attr in ("atomic", "select_for_update"))
            or (
                isinstance(node, ast.keyword)
                and node.arg == "for_update"
                and isinstance(node.value, ast.Constant)
                and node.value.value is True
            )
        }
    )


@pytest.mark.parametrize(
    "source,caught",
    [
        ("with transaction.atomic():\n    pass", True),
        ("@transaction.atomic\ndef f(): pass", True),
        ("Task.objects.select_for_update().get(pk=1)", True),
        ("access_task(user, 1, for_update=True)", True),
        ("access_task(user, 1, for_update=False)", False),
        ("task_submit(actor=user, task_id=1, expected_version=3)", False),
    ],
)
def test_the_unit_of_work_rule_finds_transactions_and_locks(source, caught):
    assert bool(unit_of_work_by_hand(source)) is caught


def test_views_leave_the_transaction_and_the_lock_to_services():
    """A view or API parses, calls one service and renders: the service checks access, locks,
    opens the transaction and records the event (docs/architecture.md, "The unit of work")."""
    by_hand = {
        module: lines
        for module, source in _sources()
        if _is_view_module(module) and (lines := unit_of_work_by_hand(source))
    }
    assert not by_hand, by_hand


# --- reads have a home: views and APIs render selectors' reads ----------------------------------

# Queryset methods no other class of the codebase has: called on anything, they query.
QUERYSET_METHODS = {
    "filter", "exclude", "order_by", "values_list", "select_related", "prefetch_related",
    "only", "defer", "get_or_create",
}  # fmt: skip
# Queryset methods other classes have too (the bundles' ``documents.annotate(task, snapshot)``,
# ``str.count``, ``Path.exists``): a query when called on a relation (``task.revisions.first()``)
# or on a query; ``all`` … ``last`` also only without arguments, as a queryset's take none.
SHARED_QUERYSET_METHODS = {"annotate", "aggregate"}
BARE_QUERYSET_METHODS = {"all", "exists", "count", "first", "last"}
MANAGERS = {"objects", "all_objects"}


def _spine(node) -> list:
    """``node`` and what it is called, read or indexed on, outside in:
    ``a.b.filter(x)[:9]`` → the slice, the call, ``a.b.filter``, ``a.b``, ``a``."""
    spine = []
    while node is not None:
        spine.append(node)
        node = node.func if isinstance(node, ast.Call) else getattr(node, "value", None)
        if not isinstance(node, ast.Call | ast.Attribute | ast.Subscript | ast.Name):
            node = None
    return spine


def _is_query(node) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in MANAGERS
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    method, receiver = node.func.attr, node.func.value
    if method in QUERYSET_METHODS:
        return True
    bare = method in BARE_QUERYSET_METHODS and not node.args and not node.keywords
    if not (bare or method in SHARED_QUERYSET_METHODS):
        return False
    return isinstance(receiver, ast.Attribute) or any(map(_is_query, _spine(receiver)))


def queryset_calls(source: str) -> list[str]:
    """``line: expression`` for each query a module makes itself, one per chain: a chain
    through a model manager (``Task.objects…``, ``X.all_objects…``, the manager alone too, as
    in ``get_object_or_404(Task.objects, …)``), or a queryset method called on a relation or
    a queryset — ``filter``, ``exclude``, ``order_by``, ``values_list``, ``select_related``,
    ``prefetch_related``, ``only``, ``defer``, ``get_or_create`` on anything (no other class
    here has them); ``annotate`` and ``aggregate`` (the bundles' ``documents.annotate`` is
    not a query), and without arguments ``all``, ``exists``, ``count``, ``first``, ``last``
    (``str.count(…)``, ``path.exists()`` are not), only on an attribute (a relation:
    ``task.revisions.first()``) or a query. Not seen: a relation's ``get`` or ``values``
    (``request.GET.get``, ``dict.values()`` look the same), and a bare method of a selector's
    result (``selectors.task_list(…).exists()``)."""
    tree = ast.parse(source)
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            inner.add(id(node.func))
        elif isinstance(node, ast.Attribute | ast.Subscript):
            inner.add(id(node.value))
    tops = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call | ast.Attribute | ast.Subscript)
        and id(node) not in inner
        and any(map(_is_query, _spine(node)))
    ]
    tops.sort(key=lambda node: (node.lineno, node.col_offset))
    return [f"{node.lineno}: {ast.unparse(node)}" for node in tops]


@pytest.mark.parametrize(
    "source,caught",
    [
        ("Task.objects.filter(project=project)", True),
        ("ReviewDecision.all_objects.filter(task=task)", True),
        ("Project.objects.visible_to(user)", True),
        ("get_object_or_404(Task.objects, pk=1)", True),
        ("LabellingRun.objects.filter(project=project)[:10]", True),
        ("task.revisions.select_related('author').first()", True),
        ("task.revisions.exists()", True),
        ("question.labels.all()", True),
        ("run.task_passes.filter(resolved=True).count()", True),
        ("tasks.prefetch_related(None).values_list('pk', flat=True)", True),
        ("failed.order_by('run__model_name', 'index')", True),
        ("task.blockers.annotate(n=Count('trigger_questions'))", True),
        ("list(task.revisions.order_by('-number'))[0].number", True),
        ("selectors.task_list(user=user, filters=filters)", False),
        ("revision_history(task=task)", False),
        ("documents.annotate(task, snapshot)", False),
        ("path.exists()", False),
        ("Path(root).exists()", False),
        ("self.text.count('\\n')", False),
        ("all(check.ok for check in checks)", False),
        ("request.GET.get('page')", False),
        ("payload.values()", False),
        ("ReviewAssignment.Status.ACTIVE", False),
    ],
)
def test_the_queryset_rule_finds_queries_not_selector_calls(source, caught):
    assert bool(queryset_calls(source)) is caught


def test_the_queryset_rule_counts_a_chain_once():
    source = (
        "passes = (\n"
        "    run.task_passes.only('pk')\n"
        "    .annotate(seen=Exists(Trajectory.objects.filter(task_pass=OuterRef('pk'))))\n"
        ")[:50]\n"
        "x = text.count('a')\n"
    )
    assert queryset_calls(source) == [
        "1: run.task_passes.only('pk').annotate("
        "seen=Exists(Trajectory.objects.filter(task_pass=OuterRef('pk'))))[:50]",
        "3: Trajectory.objects.filter(task_pass=OuterRef('pk'))",
    ]


def test_views_and_apis_call_no_queryset():
    """Issue 47, item 2: every read a page or the API renders is a selector
    (``<app>/selectors.py``, keyword-only, ``user=`` first when it depends on who asks) or a
    queryset method, so that a read a page and the API share is written once; a view or API
    module makes no query itself (docs/architecture.md, "One shape")."""
    found = {
        module: queries
        for module, source in _sources()
        if _is_view_module(module) and (queries := queryset_calls(source))
    }
    assert not found, found


SELECTOR_MODULE = re.compile(r"^[a-z_]+/selectors[a-z_]*\.py$")


def positional_selector_parameters(source: str) -> list[str]:
    """``line: name: why`` for each public module-level function of a selectors module that
    takes a parameter positionally (``def f(project)``, ``def f(project, /)``, ``*args``), or
    whose ``user`` parameter is not its first. ``**kwargs`` is keyword-only and allowed;
    private helpers (``_name``), nested functions and methods are not selectors."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name[0] == "_":
            continue
        params = node.args
        positional = [a.arg for a in params.posonlyargs + params.args]
        keywords = [a.arg for a in params.kwonlyargs]
        if positional:
            found.append(f"{node.lineno}: {node.name}: positional {', '.join(positional)}")
        if params.vararg:
            found.append(f"{node.lineno}: {node.name}: *{params.vararg.arg}")
        names = positional + keywords
        if "user" in names and names[0] != "user":
            found.append(f"{node.lineno}: {node.name}: user is not the first parameter")
    return found


@pytest.mark.parametrize(
    "source, caught",
    [
        ("def policy_for(project): ...", True),
        ("def leaderboard(project, *, domain=None): ...", True),
        ("def task_rows(ids, /): ...", True),
        ("def tasks(*ids): ...", True),
        ("def tasks(*ids, user): ...", True),
        ("async def policy_for(project): ...", True),
        ("def eligible_tasks(*, layer, user): ...", True),
        ("def uploaded_verifier(task, user): ...", True),
        ("def policy_for(*, project): ...", False),
        ("def review_queue(*, user, project=None, position=None): ...", False),
        ("def task_list(*, user, **filters): ...", False),
        ("def counts(): ...", False),
        ("def _grouped(rows, *keys): ...", False),
        ("class Row:\n    def label(self, mode): ...", False),
        ("def rows(*, project):\n    def key(row): ...", False),
        ("sort_key = lambda row: row.pk", False),
    ],
)
def test_the_selector_signature_rule_finds_positional_parameters(source, caught):
    assert bool(positional_selector_parameters(source)) is caught


def test_selectors_take_keywords_only_user_first():
    """Issue 47: every read a page or the API renders is a selector (``<app>/selectors*.py``),
    keyword-only, ``user=`` first when it depends on who asks: a call names what it passes
    (``policy_for(project=…)``), so a parameter added, renamed or reordered cannot silently
    bind to the wrong argument, and who asks is read first. No exceptions."""
    modules = {m: s for m, s in _sources() if SELECTOR_MODULE.match(m)}
    assert "review/selectors.py" in modules and "evaluation/selectors_pages.py" in modules
    found = {
        module: problems
        for module, source in modules.items()
        if (problems := positional_selector_parameters(source))
    }
    assert not found, found


def posted_field_reads(source: str) -> list[str]:
    """``line: expression`` for each field a module reads from a form or a body itself:
    ``request.POST`` / ``request.data`` (or ``self.request``'s) subscripted, asked ``in``, or
    called for a method (``.get``, ``.getlist``, ``.items``, ``.dict``, ``.copy``…). Passing
    it whole — to ``form_input(Schema, request.POST)``, a form, a serializer, or an app's
    ``forms.py`` gatherer — is the one way in."""

    def posted(node) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr in ("POST", "data")
            and ast.unparse(node.value) in ("request", "self.request")
        )

    def reads(node) -> bool:
        if isinstance(node, ast.Subscript | ast.Attribute):
            return posted(node.value)
        return isinstance(node, ast.Compare) and any(posted(c) for c in node.comparators)

    return [
        f"{node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(source)) if reads(node)
    ]


@pytest.mark.parametrize(
    "source, caught",
    [
        ("request.POST.get('note', '')", True),
        ("request.POST.getlist('ids')", True),
        ("request.POST['revoke']", True),
        ("'console_sql' in request.POST", True),
        ("self.request.data.get('x')", True),
        ("request.data['task']", True),
        ("form_input(AssignIn, request.POST)", False),
        ("ImportForm(request.POST or None, request.FILES or None)", False),
        ("pipeline_typed(request.POST)", False),
        ("Serializer(data=request.data)", False),
        ("request.GET.get('page')", False),
        ("request.method == 'POST'", False),
        ("post.get('note')", False),
    ],
)
def test_the_posted_field_rule_finds_reads_not_whole_passes(source, caught):
    assert bool(posted_field_reads(source)) is caught


def test_views_and_apis_read_input_through_a_schema():
    """Issue 47, item 2: one input schema per action, shared by the page and the API. A view
    or API module hands a form's or a body's data whole to the schema that reads it (through
    ``hilbench_annotate.forminput.form_input`` on a page), never a field at a time: a field
    read by hand is checked by nobody else, and the page and the API drift apart."""
    found = {
        module: reads
        for module, source in _sources()
        if _is_view_module(module) and (reads := posted_field_reads(source))
    }
    assert not found, found


# The edit recipe's steps, which only ``hilbench_annotate.services.edits.task_edit`` combines.
EDIT_RECIPE_STEPS = ("task_bump_version", "environment_update", "registry_replace")


def test_only_core_writes_a_tasks_content():
    """An app edits a task's content through ``task_edit`` (or the blocker services): no
    module outside core's services claims a version, writes the environment or replaces the
    registry itself."""
    outside = [
        f"{module}: {name}"
        for module, source in _sources()
        if not module.startswith("hilbench_annotate/services/")
        for name in EDIT_RECIPE_STEPS
        if re.search(rf"\b{name}\b", source)
    ]
    assert not outside, outside


# --- one way to read JSON from outside ----------------------------------------------------------

# Modules the bundles carry into a container without the app (exchange/bundles/sidecars.py,
# JUDGE_MODULES and grade_swe's logparsers), which cannot import the toolkit: each catches
# RecursionError itself where it reads what a task wrote.
STANDALONE = {"validators/logparsers.py", "judge/base.py", "judge/embedded.py"}


def bare_json_loads(source: str) -> list[int]:
    """Lines calling ``json.loads`` / ``json.load`` rather than ``toolkit.jsontext``'s."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("loads", "load")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "json"
    ]


@pytest.mark.parametrize(
    "source,caught",
    [
        ("json.loads(text)", True),
        ("json.load(handle)", True),
        ("json_loads(text)", False),
        ("tomllib.loads(text)", False),
        ("json.dumps(value)", False),
    ],
)
def test_the_json_rule_finds_bare_loads(source, caught):
    assert bool(bare_json_loads(source)) is caught


def test_json_is_read_through_one_function():
    """Issue 47, item 3: every JSON document is parsed by ``toolkit.jsontext.json_loads``,
    which turns a nesting too deep for the parser into its decode error (a ValueError every
    caller handles) instead of a RecursionError no handler expects."""
    bare = [
        f"{module}:{line}"
        for module, source in _sources()
        if module not in STANDALONE
        and module != "hilbench_annotate/toolkit/jsontext.py"
        and "/runtime/" not in module
        for line in bare_json_loads(source)
    ]
    assert not bare, bare


# --- every write checks who acts ----------------------------------------------------------------

# The permission family (hilbench_annotate/access.py and the apps' access.py): a call of one of
# these decides whether the actor may act.
PERMISSION_PREFIXES = ("access_", "require_", "can_")
PERMISSION_CALLS = {"has_role", "editable_tasks", "ProjectRoles", "visible_to"}

# Public functions of services modules that must check and need not, each with why. Nothing
# here is a write a page, the API, a bulk action or a command asks for on its own.
NEEDS_NO_CHECK = {
    # They record the write of the service that called them (which checked), naming its actor.
    "event_record": "the event of a checked service's write",
    "task_event": "the event of a checked service's write",
    "task_events": "the events of a checked service's writes (the tag bulk actions)",
    "revision_create": "the revision of a checked edit, or revision 1 of a task being made",
    "revision_write": "revision_create's row",
    "task_transition": "the transition of task_submit, review_decide or review_withdraw",
    "task_enter_review": "the transition of task_submit",
    "task_create": "the row an import makes, the import started by a checked import_start",
    "task_create_many": "task_create for many records of one import",
    "imported_pass_store": "the rows of a results import, by its job",
    "verdict_store": "the judge's cache of its own answers",
    # What every project has, made with it (the project's post_save hook).
    "pipeline_ensure": "the review pipeline made with a project",
    "taxonomy_ensure": "the failure taxonomy made with a project",
    # Reads a page shows: they write nothing.
    "task_snapshot": "a read",
    "open_findings": "a read",
    "get_judge": "a read",
    "taxonomy": "a read",
    "rubric": "a read",
    # A user's own rows, chosen by ``user`` itself: nobody else's can be named.
    "api_token_create": "the user's own token",
    "api_token_revoke": "the user's own token, looked up among theirs",
    "notifications_mark_read": "the user's own notifications",
    "review_take_next": "checks has_role, but names its actor user (review's queue)",
}


# ``<entity>_execute``: the body of a job (docs/architecture.md, "Where a request goes").
JOB_BODY = "_execute"


def _is_services_module(module: str) -> bool:
    """``<app>/services.py`` and the modules of ``<app>/services/``."""
    parts = module.split("/")
    return parts[-1] == "services.py" or "services" in parts[1:-1]


def _module_functions(source: str) -> list[ast.FunctionDef]:
    return [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _calls_of(function) -> set[str]:
    return {_call_name(node) for node in ast.walk(function) if isinstance(node, ast.Call)}


def checking_functions(source: str, checked_elsewhere=frozenset()) -> set[str]:
    """The module-level functions of ``source`` that check who acts: they call the permission
    family, or a function that does (of this module, or named in ``checked_elsewhere``, the
    public services of every module that do), followed to a fixed point."""
    calls = {function.name: _calls_of(function) for function in _module_functions(source)}
    checked: set[str] = set()
    while True:
        known = checked | set(checked_elsewhere)
        found = {
            name
            for name, called in calls.items()
            if any(
                c.startswith(PERMISSION_PREFIXES) or c in PERMISSION_CALLS or c in known
                for c in called
            )
        }
        if found <= checked:
            return checked
        checked |= found


def services_without_a_check(
    source: str, checked_elsewhere=frozenset(), called_by_pages=frozenset()
) -> list[str]:
    """The public functions of a services module that must check who acts and do not. A
    function must when it opens a transaction (a write's unit of work), takes an ``actor``
    (it acts for someone) or is called by a view or API module (``called_by_pages``); it
    checks when it takes ``actor`` as a keyword and is among ``checking_functions``."""
    checked = checking_functions(source, checked_elsewhere)
    missing = []
    for function in _module_functions(source):
        if function.name.startswith("_"):
            continue
        arguments = function.args
        keyword_actor = "actor" in {a.arg for a in arguments.kwonlyargs}
        any_actor = keyword_actor or "actor" in {a.arg for a in arguments.args}
        opens_transaction = any(
            isinstance(node, ast.Attribute) and node.attr == "atomic" for node in ast.walk(function)
        )
        if not (opens_transaction or any_actor or function.name in called_by_pages):
            continue
        if function.name.endswith(JOB_BODY):
            continue  # a job's body runs, by the row's id, what its checked ``_start`` wrote
        if not (keyword_actor and function.name in checked):
            missing.append(function.name)
    return missing


CHECKED_SERVICE = "def task_thing(*, actor, task_id):\n    access_task(actor, task_id, edit=True)\n"


@pytest.mark.parametrize(
    "source,caught",
    [
        (CHECKED_SERVICE, False),
        ("def task_tag(*, actor, task):\n    require_task_editor(actor, task)", False),
        ("def task_tag_many(*, actor, tasks):\n    editable_tasks(actor, tasks)", False),
        ("def lead_thing(*, actor, project):\n    require_role(actor, project, LEAD)", False),
        # through another service of the module, or a private helper, that checks
        (CHECKED_SERVICE + "def task_other(*, actor, task_id):\n    task_thing(actor=a)", False),
        (
            "def _lock(actor, task):\n    access_task(actor, task.pk, for_update=True)\n"
            "@transaction.atomic\ndef task_save(*, actor, task):\n    _lock(actor, task)",
            False,
        ),
        # through a checking service of another module
        ("def blocker_make(*, actor, task):\n    task_lock_for_editor(actor=actor)", False),
        # helpers that neither open a transaction nor act for anyone
        ("def registry_problems(*, domain, blockers):\n    return []", False),
        ("def task_execute(*, run_id):\n    run(run_id)", False),
        ("def run_execute(*, run_id):\n    with transaction.atomic():\n        claim()", False),
        # a write that trusts its caller
        ("@transaction.atomic\ndef task_edit(*, task, actor):\n    task.save()", True),
        ("def task_edit(*, task, actor):\n    with transaction.atomic():\n        pass", True),
        ("def task_update(*, task, actor):\n    task_edit(task=task, actor=actor)", True),
        # it checks, but whoever acts is not a keyword ``actor``
        ("@transaction.atomic\ndef take(user, layer):\n    has_role(user, layer.project_id)", True),
        ("def take(*, user, layer):\n    require_role(user, layer.project)", False),
        # a private helper is the module's own business
        ("@transaction.atomic\ndef _write(*, task, actor):\n    task.save()", False),
    ],
)
def test_the_service_rule_finds_writes_that_trust_their_caller(source, caught):
    checked_elsewhere = {"task_lock_for_editor"}
    assert bool(services_without_a_check(source, checked_elsewhere)) is caught


@pytest.mark.parametrize(
    "source,caught",
    [
        ("def mark_read(*, user, ids):\n    rows(user).update(read=True)", True),
        ("def mark_read(*, actor, ids):\n    rows(visible_to(actor)).update(read=True)", False),
    ],
)
def test_the_service_rule_reads_what_a_page_calls(source, caught):
    missing = services_without_a_check(source, called_by_pages={"mark_read"})
    assert bool(missing) is caught


def _services_checks():
    """Per services module its source, the public services that check (of every module), and
    the names the view and API modules call."""
    sources = dict(_sources())
    services = {m: s for m, s in sources.items() if _is_services_module(m)}
    checked: set[str] = set()
    while True:
        found = {
            name
            for source in services.values()
            for name in checking_functions(source, checked)
            if not name.startswith("_")
        }
        if found <= checked:
            break
        checked |= found
    called = {
        _call_name(node)
        for module, source in sources.items()
        if _is_view_module(module)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
    }
    return services, checked, called


def test_every_service_checks_who_acts():
    """Issue 47, item 1: a write a page or the API can trigger is ``service(*, actor, …)``
    that runs ``access_*`` / ``require_*`` itself (or a service that does) before its lock,
    transaction, write and event, so the next caller (a bulk action, a command, an MCP tool)
    that forgets the view's check is refused rather than writing as anyone who reads the task.
    ``NEEDS_NO_CHECK`` says of each exception why."""
    assert _is_services_module("authoring/services.py")
    assert _is_services_module("review/services/decisions.py")
    assert not _is_services_module("hilbench_annotate/bulk_actions.py")
    services, checked, called = _services_checks()
    assert {"task_edit", "blocker_create", "workspace_save", "lint_waive"} <= checked
    missing = [
        f"{module}: {name}"
        for module, source in services.items()
        for name in services_without_a_check(source, checked, called)
        if name not in NEEDS_NO_CHECK
    ]
    assert not missing, missing


def test_the_service_rule_exceptions_are_still_needed():
    """Each name of ``NEEDS_NO_CHECK`` is a service the rule would otherwise refuse: one that
    checks (or is gone) is struck off the list."""
    services, checked, called = _services_checks()
    refused = {
        name
        for source in services.values()
        for name in services_without_a_check(source, checked, called)
    }
    assert set(NEEDS_NO_CHECK) <= refused, sorted(set(NEEDS_NO_CHECK) - refused)
