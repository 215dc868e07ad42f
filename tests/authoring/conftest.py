import pytest

from exchange.importers import import_bird
from hilbench_annotate.models import Task


@pytest.fixture
def sql_task(project, author, demo_data):
    """The first demo BIRD question, imported by ``author`` with its database."""
    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        actor=author,
        limit=1,
    )
    return Task.objects.get(project=project)
