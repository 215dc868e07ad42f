"""Create a project and its members from the command line, for people who script their set-up
(every importer needs ``--project SLUG``).

    python manage.py create_project --name "SQL v3" --slug sql-v3 \\
        --member alice:lead --member bob:author --member carol:reviewer

A member is ``username:role`` (author, reviewer, auditor, lead, harness); a user who does not
exist is refused, as is an unknown role, a slug or name already taken: nothing is created then.
Running it again with the same name and slug adds the members it names (idempotent).
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.text import slugify

from hilbench_annotate.models import Membership, Project
from hilbench_annotate.vocabulary import Role


class Command(BaseCommand):
    help = "Create a project (name, slug) with its members (username:role, repeatable)."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--slug", default="", help="Default: from the name")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--member", action="append", default=[], help="username:role, repeatable"
        )

    def handle(self, *args, name, slug, description, member, **options):
        name = name.strip()
        slug = slug.strip() or slugify(name)
        if not name or not slug or slug != slugify(slug):
            raise CommandError(f"Give a name and a slug of letters, digits and dashes ({slug!r}).")
        members, problems = [], []
        users = get_user_model().objects
        for entry in member:
            username, _, role = entry.partition(":")
            if role not in Role.values:
                problems.append(f"{entry!r}: the role must be one of {', '.join(Role.values)}")
                continue
            user = users.filter(username=username).first()
            if user is None:
                problems.append(f"{entry!r}: there is no user {username!r}")
                continue
            members.append((user, role))
        existing = Project.objects.filter(slug=slug).first()
        if existing is not None and existing.name != name:
            problems.append(f"the slug {slug!r} belongs to the project {existing.name!r}")
        elif existing is None and Project.objects.filter(name=name).exists():
            problems.append(f"a project is already named {name!r} (with another slug)")
        if problems:
            raise CommandError("Nothing was created: " + "; ".join(problems))
        with transaction.atomic():
            project, created = Project.objects.get_or_create(
                slug=slug, defaults={"name": name, "description": description}
            )
            added = 0
            for user, role in members:
                _, new = Membership.objects.get_or_create(project=project, user=user, role=role)
                added += new
        verb = "Created" if created else "Found"
        self.stdout.write(f"{verb} project {project.name} ({project.slug}, id {project.pk}); "
                          f"{added} member(s) added.")  # fmt: skip
