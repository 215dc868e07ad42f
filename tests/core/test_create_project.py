"""Issue 30, item 11: a project made from the command line, with its members by role."""

import pytest
from django.core.management import CommandError, call_command

from hilbench_annotate.models import Membership, Project
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_create_project_with_members_then_an_import_can_name_it(tmp_path, capsys):
    UserFactory(username="alice")
    UserFactory(username="bob")
    call_command("create_project", name="SQL v3", member=["alice:lead", "bob:author"])
    project = Project.objects.get(slug="sql-v3")
    assert set(Membership.objects.filter(project=project).values_list("user__username", "role")) \
        == {("alice", "lead"), ("bob", "author")}  # fmt: skip
    assert "Created project SQL v3 (sql-v3" in capsys.readouterr().out
    # Again: nothing doubles; a member added later is added.
    UserFactory(username="carol")
    call_command("create_project", name="SQL v3", member=["alice:lead", "carol:reviewer"])
    assert Membership.objects.filter(project=project).count() == 3
    # The importers take its slug.
    from tests.conftest import FIXTURES

    call_command("import_hilbench", str(FIXTURES / "hilbench" / "sql"), project="sql-v3")
    assert project.tasks.count() == 2


@pytest.mark.parametrize(
    ("members", "said"),
    [
        (["nobody:lead"], "there is no user 'nobody'"),
        (["alice:boss"], "the role must be one of author, reviewer, auditor, lead, harness"),
    ],
)
def test_a_bad_member_creates_nothing_and_says_which(members, said):
    UserFactory(username="alice")
    with pytest.raises(CommandError, match=said):
        call_command("create_project", name="SQL v4", member=members)
    assert not Project.objects.filter(slug="sql-v4").exists()


def test_a_slug_taken_by_another_project_is_refused():
    Project.objects.create(name="Other", slug="sql-v5")
    with pytest.raises(CommandError, match="the slug 'sql-v5' belongs to the project 'Other'"):
        call_command("create_project", name="SQL v5")
