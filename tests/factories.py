import factory
from django.contrib.auth import get_user_model

from hilbench_annotate.models import (
    Blocker,
    Membership,
    Project,
    SqlEnvironment,
    SweEnvironment,
    Task,
    TriggerQuestion,
)
from hilbench_annotate.vocabulary import Domain, Role, TaskSource


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Benchmark {n}")
    slug = factory.Sequence(lambda n: f"benchmark-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.AUTHOR


class TaskFactory(factory.django.DjangoModelFactory):
    """A SQL task by default; ``TaskFactory(swe=True)`` makes a SWE one."""

    class Meta:
        model = Task
        skip_postgeneration_save = True

    class Params:
        swe = factory.Trait(
            domain=Domain.SWE,
            source=TaskSource.SWEBENCH,
            original_spec={
                "problem_statement": "Totals are off by a cent.",
                "requirements": "",
                "interface": "",
            },
            blocked_spec={
                "problem_statement": "Totals are off.",
                "requirements": "",
                "interface": "",
            },
        )

    project = factory.SubFactory(ProjectFactory)
    domain = Domain.SQL
    source = TaskSource.BIRD
    source_id = factory.Sequence(lambda n: f"db/{n}")
    title = factory.Sequence(lambda n: f"How many loans were granted in year {1990 + n % 10}?")
    original_spec = {"question": "How many loans were granted in 1997?", "evidence": "year = 1997"}
    blocked_spec = {"question": "How many loans were granted in the boom year?", "evidence": ""}

    @factory.post_generation
    def environment(task, create, extracted, **kwargs):
        if not create:
            return
        if task.domain == Domain.SQL:
            SqlEnvironment.objects.create(task=task, db_id="retail_bank", gold_sql="SELECT 1")
        else:
            SweEnvironment.objects.create(
                task=task, repo_name="demo/invoicing", base_commit="0" * 40
            )


class BlockerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Blocker

    task = factory.SubFactory(TaskFactory)
    key = factory.Sequence(lambda n: f"blocker_{n}")
    position = factory.Sequence(lambda n: n)
    type = "question"
    subtype = "timeframe_ambiguity"
    description = "The question names the boom year without saying which year it is."
    resolution = "The boom year is 1997."


class TriggerQuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TriggerQuestion

    blocker = factory.SubFactory(BlockerFactory)
    position = factory.Sequence(lambda n: n)
    text = "Which calendar year is the boom year?"
