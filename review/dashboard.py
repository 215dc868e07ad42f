"""The lead dashboard of one project: where tasks are, how long layers take, who reviews.

Every figure is aggregated by the database (``values().annotate(...)``, correlated
subqueries); Python only reads medians off histograms the database already grouped. The
page costs the same, small number of queries whatever the number of tasks or events.
"""

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Exists, F, FloatField, Func, OuterRef, Q, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import TruncWeek
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from hilbench_annotate import workflow
from hilbench_annotate.access import access_project
from hilbench_annotate.models import Membership, Project, Task, TaskEvent
from hilbench_annotate.toolkit.charts import bar_chart, column_chart
from hilbench_annotate.vocabulary import Role, TaskStatus
from review.models import ReviewAssignment, ReviewDecision, ReviewLayer

WEEKS = 12
RECENT_DAYS = 30
# Members with these roles are listed in the workload table even before their first review.
REVIEWING_ROLES = (Role.REVIEWER, Role.AUDITOR, Role.LEAD)
SENT_BACK = (ReviewDecision.Outcome.REQUEST_CHANGES, ReviewDecision.Outcome.REJECT)


@dataclass(frozen=True)
class Table:
    """One dashboard table: what the page shows and what its CSV download contains."""

    name: str
    columns: tuple[str, ...]
    rows: list[tuple]


def percentile(counted: list[tuple[float, int]], share: float) -> float | None:
    """The ``share`` quantile of values given with their counts; None when there are none.

    Linear interpolation between the closest ranks (numpy's default), so ``share=0.5`` is
    the usual median.
    """
    ordered = sorted((value, n) for value, n in counted if n > 0)
    total = sum(n for _, n in ordered)
    if not total:
        return None
    position = (total - 1) * share

    def value_at(rank: int) -> float:
        seen = 0
        for value, n in ordered:
            seen += n
            if rank < seen:
                return value
        return ordered[-1][0]

    low, high = value_at(math.floor(position)), value_at(math.ceil(position))
    return low + (high - low) * (position - math.floor(position))


class HoursBetween(Func):
    """Hours from ``earlier`` to ``later`` (datetimes), to a tenth of an hour, in the database.

    Rounding makes stays of the same length one group, so the database returns a histogram
    (one row per layer and tenth of an hour) instead of one row per stay. Only SQLite and
    PostgreSQL are configured; ``as_sql`` is the PostgreSQL form.
    """

    arity = 2
    output_field = FloatField()

    def __init__(self, later, earlier, **extra):
        super().__init__(later, earlier, **extra)

    def as_sql(self, compiler, connection, **extra):
        template = "ROUND((EXTRACT(EPOCH FROM (%(expressions)s)) / 3600.0)::numeric, 1)::float"
        return super().as_sql(compiler, connection, template=template, arg_joiner=" - ", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        template = "ROUND((julianday(%(expressions)s)) * 24.0, 1)"
        return super().as_sql(
            compiler, connection, template=template, arg_joiner=") - julianday(", **extra
        )


def iso_week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


class Dashboard:
    """The dashboard's tables for ``project``; each table is one or two aggregate queries."""

    TABLES = ("states", "layers", "time", "throughput", "reasons", "workload", "agreement")

    def __init__(self, project: Project, *, now: datetime | None = None):
        self.project = project
        self.now = now or timezone.now()

    def table(self, name: str) -> Table:
        if name not in self.TABLES:
            raise KeyError(name)
        return getattr(self, name)

    # --- shared reads ---------------------------------------------------------------------

    @cached_property
    def layer_names(self) -> dict[int, str]:
        return dict(
            ReviewLayer.objects.filter(project=self.project).values_list("position", "name")
        )

    def _layer_name(self, position: int | None) -> str:
        if position is None:
            return "—"
        return self.layer_names.get(position, f"Layer {position}")

    @cached_property
    def _task_counts(self) -> list[dict]:
        """(status, review_layer) → tasks: one GROUP BY serves both the states and layers."""
        return list(
            Task.objects.filter(project=self.project)
            .values("status", "review_layer")
            .annotate(n=Count("id"))
            .order_by()
        )

    @cached_property
    def _decision_counts(self) -> list[dict]:
        return list(
            ReviewDecision.objects.filter(task__project=self.project)
            .values("layer", "outcome", "reject_reason")
            .annotate(n=Count("id"))
            .order_by()
        )

    # --- tables ---------------------------------------------------------------------------

    @cached_property
    def states(self) -> Table:
        counts: dict[str, int] = defaultdict(int)
        for row in self._task_counts:
            counts[row["status"]] += row["n"]
        rows = [(value, label, counts[value]) for value, label in TaskStatus.choices]
        return Table("states", ("state", "label", "tasks"), rows)

    @cached_property
    def layers(self) -> Table:
        """Tasks waiting at each layer, and tasks back with their author that return there."""
        waiting: dict[int, int] = defaultdict(int)
        returning: dict[int, int] = defaultdict(int)
        for row in self._task_counts:
            if row["review_layer"] is None:
                continue
            if row["status"] == workflow.IN_REVIEW:
                waiting[row["review_layer"]] += row["n"]
            elif row["status"] == workflow.CHANGES_REQUESTED:
                returning[row["review_layer"]] += row["n"]
        positions = sorted(set(self.layer_names) | set(waiting) | set(returning))
        rows = [(k, self._layer_name(k), waiting[k], returning[k]) for k in positions]
        return Table("layers", ("layer", "name", "in_review", "changes_requested"), rows)

    @cached_property
    def time(self) -> Table:
        """Hours from entering a layer to the task's next status change, per layer.

        A task enters layer k with a ``status_changed`` event whose target is in_review at
        k (a submit, a resubmit, or an approval at k-1); the database pairs each such event
        with the next status change of the same task and counts stays per tenth of an hour,
        so only a histogram of finished stays comes back.
        """
        events = TaskEvent.objects.filter(project=self.project, kind="status_changed")
        following = (
            TaskEvent.objects.filter(task_id=OuterRef("task_id"), kind="status_changed")
            .filter(
                Q(created_at__gt=OuterRef("created_at"))
                | Q(created_at=OuterRef("created_at"), pk__gt=OuterRef("pk"))
            )
            .order_by("created_at", "pk")
            .values("created_at")[:1]
        )
        stays = (
            events.filter(data__target=workflow.IN_REVIEW)
            .annotate(
                layer=KT("data__target_layer"),
                hours=HoursBetween(Subquery(following), F("created_at")),
            )
            .values("layer", "hours")
            .annotate(n=Count("id"))
            .order_by()
        )
        hours: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for row in stays:
            if row["hours"] is None or row["layer"] in (None, "", "null"):
                continue  # a stay still going on, or an event naming no layer
            hours[int(row["layer"])].append((row["hours"], row["n"]))
        rows = []
        for k in sorted(set(self.layer_names) | set(hours)):
            middle, p90 = percentile(hours[k], 0.5), percentile(hours[k], 0.9)
            rows.append(
                (
                    k,
                    self._layer_name(k),
                    sum(n for _, n in hours[k]),
                    None if middle is None else round(middle, 1),
                    None if p90 is None else round(p90, 1),
                )
            )
        return Table("time", ("layer", "name", "stays", "median_hours", "p90_hours"), rows)

    @cached_property
    def throughput(self) -> Table:
        """Tasks reaching approved per ISO week (Monday to Sunday, UTC), the last 12 weeks."""
        this_monday = timezone.localdate(self.now) - timedelta(
            days=timezone.localdate(self.now).weekday()
        )
        first_monday = this_monday - timedelta(weeks=WEEKS - 1)
        start = timezone.make_aware(datetime.combine(first_monday, datetime.min.time()))
        counts = (
            TaskEvent.objects.filter(
                project=self.project,
                kind="status_changed",
                data__target=workflow.APPROVED,
                created_at__gte=start,
            )
            .annotate(week=TruncWeek("created_at"))
            .values("week")
            .annotate(n=Count("task_id", distinct=True))
            .order_by()
        )
        by_monday = {timezone.localdate(row["week"]): row["n"] for row in counts}
        rows = []
        for i in range(WEEKS):
            monday = first_monday + timedelta(weeks=i)
            rows.append((iso_week(monday), monday.isoformat(), by_monday.get(monday, 0)))
        return Table("throughput", ("week", "week_start", "approved"), rows)

    @cached_property
    def reasons(self) -> Table:
        """Rejections by reason, then change requests by layer (``kind`` tells them apart)."""
        rejected: dict[str, int] = defaultdict(int)
        changes: dict[int, int] = defaultdict(int)
        for row in self._decision_counts:
            if row["outcome"] == ReviewDecision.Outcome.REJECT:
                rejected[row["reject_reason"] or "(no reason given)"] += row["n"]
            elif row["outcome"] == ReviewDecision.Outcome.REQUEST_CHANGES:
                changes[row["layer"]] += row["n"]
        rows = [
            ("rejection", reason, n)
            for reason, n in sorted(rejected.items(), key=lambda item: (-item[1], item[0]))
        ]
        rows += [
            ("change_request", f"{k}. {self._layer_name(k)}", changes[k])
            for k in sorted(set(self.layer_names) | set(changes))
        ]
        return Table("reasons", ("kind", "label", "count"), rows)

    @cached_property
    def workload(self) -> Table:
        """Per person: live locks (active and not expired), decisions lately and ever."""
        since = self.now - timedelta(days=RECENT_DAYS)
        people: dict[str, list[int]] = {}
        members = (
            Membership.objects.filter(project=self.project, role__in=REVIEWING_ROLES)
            .values_list("user__username", flat=True)
            .distinct()
        )
        for username in members:
            people.setdefault(username, [0, 0, 0])
        active = (
            ReviewAssignment.objects.live(now=self.now)
            .filter(task__project=self.project)
            .values("reviewer__username")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in active:
            people.setdefault(row["reviewer__username"], [0, 0, 0])[0] = row["n"]
        decided = (
            ReviewDecision.objects.filter(task__project=self.project)
            .values("reviewer__username")
            .annotate(recent=Count("id", filter=Q(created_at__gte=since)), total=Count("id"))
            .order_by()
        )
        for row in decided:
            counts = people.setdefault(row["reviewer__username"], [0, 0, 0])
            counts[1], counts[2] = row["recent"], row["total"]
        rows = [
            (name, *counts)
            for name, counts in sorted(people.items(), key=lambda item: (-item[1][0], item[0]))
        ]
        return Table(
            "workload",
            ("reviewer", "active_assignments", f"decisions_{RECENT_DAYS}d", "decisions_total"),
            rows,
        )

    @cached_property
    def agreement(self) -> Table:
        """Of a person's approvals at layer k, the share no later layer sent back afterwards.

        Approvals at the last layer are left out: nothing comes after them. Tasks still on
        their way through later layers count as not sent back (yet).
        """
        sent_back = ReviewDecision.objects.filter(
            task_id=OuterRef("task_id"),
            layer__gt=OuterRef("layer"),
            outcome__in=SENT_BACK,
            created_at__gt=OuterRef("created_at"),
        )
        approvals = ReviewDecision.objects.filter(
            task__project=self.project, outcome=ReviewDecision.Outcome.APPROVE
        )
        if self.layer_names:
            approvals = approvals.filter(layer__lt=max(self.layer_names))
        grouped = (
            approvals.values("reviewer__username", "layer")
            .annotate(approved=Count("id"), kept=Count("id", filter=~Exists(sent_back)))
            .order_by("reviewer__username", "layer")
        )
        rows = [
            (
                row["reviewer__username"],
                row["layer"],
                self._layer_name(row["layer"]),
                row["approved"],
                row["kept"],
                round(100 * row["kept"] / row["approved"], 1),
            )
            for row in grouped
        ]
        return Table(
            "agreement",
            ("reviewer", "layer", "name", "approved", "not_sent_back", "agreement_pct"),
            rows,
        )

    # --- charts ---------------------------------------------------------------------------

    def charts(self) -> dict[str, str]:
        return {
            "states": bar_chart(
                [(label, n) for _, label, n in self.states.rows],
                title="Tasks per state",
                unit="tasks",
            ),
            "layers": bar_chart(
                [(f"{k}. {name}", n) for k, name, n, _ in self.layers.rows],
                title="Tasks in review per layer",
                unit="tasks",
            ),
            "time": bar_chart(
                [(f"{k}. {name}", mid) for k, name, _, mid, _ in self.time.rows if mid is not None],
                title="Median hours in each layer",
                unit="h",
            ),
            "throughput": column_chart(
                [(week.split("-")[1], n) for week, _, n in self.throughput.rows],
                title=f"Tasks approved per week, last {WEEKS} weeks",
                unit="tasks",
            ),
        }


# --- view -----------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value):
    """Text a spreadsheet would run as a formula is prefixed with a quote."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _csv_response(project: Project, table: Table) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="{project.slug}-dashboard-{table.name}.csv"'
    )
    writer = csv.writer(response)
    writer.writerow(table.columns)
    writer.writerows([_csv_cell(cell) for cell in row] for row in table.rows)
    return response


@login_required
@require_GET
def dashboard(request, project_id: int):
    """The lead dashboard; ``?format=csv&table=<name>`` downloads one of its tables."""
    project = access_project(request.user, project_id, roles=(Role.LEAD,))
    board = Dashboard(project)
    if request.GET.get("format") == "csv":
        name = request.GET.get("table", "")
        if name not in Dashboard.TABLES:
            raise Http404(f"No dashboard table {name!r}; one of {', '.join(Dashboard.TABLES)}.")
        return _csv_response(project, board.table(name))
    reasons = board.reasons.rows
    context = {
        "project": project,
        "board": board,
        "charts": board.charts(),
        "rejections": [row for row in reasons if row[0] == "rejection"],
        "change_requests": [row for row in reasons if row[0] == "change_request"],
        "weeks": WEEKS,
        "recent_days": RECENT_DAYS,
    }
    return render(request, "review/dashboard.html", context)
