"""Demo data and demo users for ``make run``: made by the project itself, idempotent."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from exchange.demo import build_all
from exchange.demo.blocked_task import (  # noqa: F401 - re-exported for tests
    BLOCKED_QUESTION,
    DEMO_BLOCKERS,
    DEMO_VALIDATION_QUESTIONS,
)
from exchange.demo.evaluation import demo_results
from exchange.demo.plant import plant_demo_blockers
from exchange.importers import import_bird, import_swebench
from hilbench_annotate import services
from hilbench_annotate.models import Membership, Project, Task
from hilbench_annotate.vocabulary import Role, TaskSource
from judge.labels import label_add
from judge.models import ValidationQuestion
from judge.validation import question_add

# username → (roles in the demo project, password). Demo only: refused with DEBUG off.
# The harness is a machine user: no password (it could not log in with one anyway); it calls
# the API with a token from `manage.py create_api_token harness`.
DEMO_USERS = {
    "author": ((Role.AUTHOR,), "author-demo"),
    "author2": ((Role.AUTHOR,), "author2-demo"),
    "reviewer": ((Role.REVIEWER,), "reviewer-demo"),
    "auditor": ((Role.AUDITOR,), "auditor-demo"),
    "auditor2": ((Role.AUDITOR,), "auditor2-demo"),
    "lead": ((Role.LEAD,), "lead-demo"),
    "harness": ((Role.HARNESS,), None),
}


class Command(BaseCommand):
    help = "Make the demo project, demo users (one per role) and demo SQL and SWE tasks."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="Allow with DEBUG off")

    def handle(self, *args, force=False, **options):
        if not settings.DEBUG and not force:
            raise CommandError("Demo users have known passwords; refusing with DEBUG off.")
        paths = build_all(settings.VAR_DIR / "demo")
        User = get_user_model()
        with transaction.atomic():
            project, _ = Project.objects.get_or_create(
                slug="demo",
                defaults={
                    "name": "Demo benchmark",
                    "description": "A retail-bank SQL database and a small invoicing library.",
                },
            )
            other, _ = Project.objects.get_or_create(
                slug="other-team", defaults={"name": "Other team's benchmark"}
            )
            admin, created = User.objects.get_or_create(
                username="admin", defaults={"is_staff": True, "is_superuser": True}
            )
            if created:
                admin.set_password("admin-demo")
                admin.save()
            users = {}
            for username, (roles, password) in DEMO_USERS.items():
                user, created = User.objects.get_or_create(username=username)
                if created and password:
                    user.set_password(password)
                    user.save()
                elif password is None and user.has_usable_password():
                    # Also for a demo database seeded before machine users lost their password.
                    user.set_unusable_password()
                    user.save()
                for role in roles:
                    Membership.objects.get_or_create(project=project, user=user, role=role)
                users[username] = user
            outsider, created = User.objects.get_or_create(username="outsider")
            if created:
                outsider.set_password("outsider-demo")
                outsider.save()
            Membership.objects.get_or_create(project=other, user=outsider, role=Role.AUTHOR)

        sql = import_bird(
            project=project,
            questions=paths["sql"]["questions"],
            databases=paths["sql"]["databases"],
            actor=users["author"],
        )
        swe = import_swebench(
            project=project,
            instances=paths["swe"]["instances"],
            repo=str(paths["swe"]["repo"]),
            actor=users["author2"],
        )
        import_bird(
            project=other,
            questions=paths["sql"]["questions"],
            databases=paths["sql"]["databases"],
            limit=1,
            actor=outsider,
        )
        self._plant_demo_blockers(project, users["author"])
        self._label_demo_questions(project, users)

        demo_results(project, users["lead"])
        self.stdout.write(f"Demo SQL: {sql.summary()}\nDemo SWE: {swe.summary()}")
        self.stdout.write("\nDemo users (username / password):")
        self.stdout.write("  admin / admin-demo  (site admin)")
        for username, (roles, password) in DEMO_USERS.items():
            if password is None:
                self.stdout.write(
                    f"  {username}  ({', '.join(roles)} in Demo benchmark; a machine user with no "
                    f"password: make its API token with `manage.py create_api_token {username}`)"
                )
                continue
            self.stdout.write(f"  {username} / {password}  ({', '.join(roles)} in Demo benchmark)")
        self.stdout.write("  outsider / outsider-demo  (author in Other team's benchmark only)")

    def _label_demo_questions(self, project, users) -> None:
        """Held-out judge-validation questions for the blocked task as the recall floor counts
        them (``judge.floor``): written by three people who never edited the task, each blocker's
        three by three of them, in three styles, and labelled by two others."""

        task = Task.objects.get(project=project, source=TaskSource.BIRD, source_id="retail_bank/4")
        if ValidationQuestion.objects.filter(task=task).exists():
            return
        writers = [users["author2"], users["auditor2"], users["lead"]]
        for n, (gold, text, style) in enumerate(DEMO_VALIDATION_QUESTIONS):
            writer = writers[n % len(writers)]
            question = question_add(task=task, actor=writer, text=text, style=style)
            label_add(question=question, labeller=users["reviewer"], blocker_key=gold)
            label_add(question=question, labeller=users["auditor"], blocker_key=gold)

    def _plant_demo_blockers(self, project, author) -> None:
        task = Task.objects.get(project=project, source=TaskSource.BIRD, source_id="retail_bank/4")
        if task.blockers.exists():
            return
        with transaction.atomic():
            task = Task.objects.select_for_update().get(pk=task.pk)
            plant_demo_blockers(task, author)
            # Planting loan_servicing_payment_code: the agent must not read the code's
            # meaning in the column description.
            env = task.sql_environment
            descriptions = dict(env.descriptions)
            descriptions["transaction_log"] = descriptions["transaction_log"].replace(
                "LN: loan payment; ", ""
            )
            services.task_touch_environment(
                task=task,
                actor=author,
                expected_version=task.version,
                changes={"descriptions": descriptions},
            )
