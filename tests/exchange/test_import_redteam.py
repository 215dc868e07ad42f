"""A bundle's repository stream is task-supplied bytes read by the host's ``git fast-import``:
an author of another project must not make it open, create or append to any file of the
server. Each attack goes through the import page and the import job, as an attacker would."""

import hashlib
import io
import json
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from exchange.bundles import layout
from exchange.models import ImportJob
from exchange.services.imports import import_execute
from hilbench_annotate.models import Membership, Project, Task
from hilbench_annotate.toolkit.faststream import StreamRefused, checked_stream
from hilbench_annotate.vocabulary import Role

from .bundle_helpers import export, manifest_relist, members, plant_swe, seed_demo, tar_of

pytestmark = pytest.mark.django_db


def _blobs(count: int) -> bytes:
    return b"".join(
        b"blob\nmark :%d\ndata %d\n%s\n" % (900_000 + n, len(b"x%d" % n), b"x%d" % n)
        for n in range(count)
    )


def _tampered(bundle, tmp_path, prefix: bytes):
    """The bundle with ``prefix`` before its repository stream, its checksum made to match."""
    files = members(bundle)
    (name,) = [n for n in files if n.endswith(layout.SWE_REPOSITORY)]
    files[name] = prefix + files[name]
    manifest = json.loads(files[layout.MANIFEST])
    manifest_relist(manifest, name, hashlib.sha256(files[name]).hexdigest())
    files[layout.MANIFEST] = layout.dumps(manifest)
    out = tmp_path / "evil.tar.gz"
    out.write_bytes(tar_of(files))
    return out


@pytest.fixture
def attack(settings, tmp_path, client):
    """The demo project with its SWE task exported, and an author of *another* project who
    uploads what they like there."""
    demo = seed_demo(settings, tmp_path)
    task = plant_swe(demo, tmp_path)
    bundle = export(demo, tmp_path / "swe.tar.gz", tasks=[task])
    mirror = task.swe_environment.repository.path
    other = Project.objects.create(name="Elsewhere", slug="elsewhere")
    mallory = get_user_model().objects.create_user(username="mallory", password="pw")
    Membership.objects.create(project=other, user=mallory, role=Role.AUTHOR)
    client.force_login(mallory)

    def upload(archive):
        with open(archive, "rb") as handle:
            response = client.post(
                reverse("import-list"), {"kind": "bundle", "project": other.pk, "archive": handle}
            )
        assert response.status_code == 302, response.content[:500]
        job = ImportJob.objects.get(project=other)
        import_execute(job_id=job.pk)
        job.refresh_from_db()
        return job

    return {"bundle": bundle, "mirror": mirror, "upload": upload, "project": other}


def _mirror_intact(mirror) -> None:
    result = subprocess.run(
        ["git", f"--git-dir={mirror}", "rev-parse", "HEAD"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "command",
    [
        b"option git export-pack-edges={target}\n",
        b"option git --export-pack-edges={target}\n",
        b"feature export-marks={target}\n",
        b"feature import-marks-if-exists={target}\n",
        b"feature cat-blob\n",
    ],
)
def test_a_stream_command_naming_a_host_file_writes_nothing(attack, tmp_path, command):
    target = attack["mirror"] / "shallow"
    prefix = command.replace(b"{target}", str(target).encode()) + _blobs(50)
    job = attack["upload"](_tampered(attack["bundle"], tmp_path, prefix))
    assert job.status == "failed", job.report
    assert "repository stream" in job.error and "not accepted" in job.error, job.error
    assert not target.exists()
    _mirror_intact(attack["mirror"])
    assert not Task.objects.filter(project=attack["project"]).exists()


def test_a_second_branch_or_a_tag_is_refused(attack, tmp_path):
    prefix = b"reset refs/heads/stolen\nfrom :900000\n" + _blobs(1)
    job = attack["upload"](_tampered(attack["bundle"], tmp_path, _blobs(1) + prefix))
    assert job.status == "failed" and "refs/heads/stolen" in job.error, job.error


def test_our_own_bundle_still_imports(attack):
    job = attack["upload"](attack["bundle"])
    assert job.status == "succeeded", job.error
    _mirror_intact(attack["mirror"])


def test_data_payloads_are_not_read_as_commands():
    """A blob whose content is an `option` line is data, not a command."""
    payload = b"option git export-pack-edges=/etc/passwd\n"
    stream = b"blob\nmark :1\ndata %d\n%s\n" % (len(payload), payload)
    assert b"".join(checked_stream(io.BytesIO(stream), branch="main")) == stream
    with pytest.raises(StreamRefused, match="ends first"):
        list(checked_stream(io.BytesIO(b"blob\ndata 100\nshort"), branch="main"))
    with pytest.raises(StreamRefused, match="delimited"):
        list(checked_stream(io.BytesIO(b"blob\ndata <<EOF\nx\nEOF\n"), branch="main"))
