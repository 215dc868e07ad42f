"""Starting a validation run or an environment build reads its form through
``validators.serializers`` (no API takes these actions yet; one would validate with the same
schema): malformed input is refused with the field named, never a 500, and nothing is
started; valid input starts what it did."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from validators.models import EnvironmentBuild, ValidationRun

pytestmark = pytest.mark.django_db


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


@pytest.mark.parametrize(
    "checks,said",
    [
        (["spec", ""], "Check 2: This field may not be blank."),
        (["spec\x00"], "Check 1: Null characters are not allowed."),
    ],
)
def test_malformed_checks_are_refused_naming_the_field(client, swe_task, author, checks, said):
    client.force_login(author)
    response = client.post(reverse("validation-start", args=[swe_task.pk]), {"checks": checks})
    assert response.status_code == 302 and _said(response) == said
    assert not ValidationRun.objects.exists()


def test_named_checks_or_none_start_a_run(client, swe_task, author):
    client.force_login(author)
    url = reverse("validation-start", args=[swe_task.pk])
    client.post(url, {"checks": ["spec"]})
    client.post(url)
    assert [r.checks for r in ValidationRun.objects.order_by("pk")][0] == ["spec"]
    assert ValidationRun.objects.count() == 2


def test_a_malformed_rebuild_flag_is_refused_naming_the_field(client, swe_task, author):
    client.force_login(author)
    url = reverse("environment-build-start", args=[swe_task.pk])
    response = client.post(url, {"rebuild": "perhaps"})
    assert response.status_code == 302 and _said(response) == "Rebuild: Must be a valid boolean."
    assert not EnvironmentBuild.objects.exists()
    response = client.post(url, {"rebuild": "1"})
    assert response.status_code == 302 and EnvironmentBuild.objects.count() == 1
