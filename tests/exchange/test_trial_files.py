"""What a run refuses of a folder's own files (``exchange/bundles/trial_files.py``) and what
only the app writes in a release task's folder (``release_runtime.RESERVED``)."""

import pytest

from exchange.bundles.release import collect
from exchange.bundles.release_runtime import RESERVED
from exchange.bundles.trial_files import dockerfile_problem, dockerfile_problems, folder_overreach

BASE = "FROM python:3.11-slim\n"


@pytest.mark.parametrize(
    ("dockerfile", "refused"),
    [
        (BASE + "ADD http://127.0.0.1:5432/x /x\n", "ADD of a URL"),
        (BASE + "add \\\n  https://169.254.169.254/latest /m\n", "ADD of a URL"),
        (BASE + "ADD git@example.org:x/y.git /y\n", "ADD of a URL"),
        (BASE + "ONBUILD RUN echo hidden\n", "ONBUILD"),
        ("FROM hilbench-sidecar/ask-human:0123abcd\n", "an image of the app's"),
        ("FROM hb__3f2e1d\n", "an image of the app's"),
        (BASE + "COPY --from=hil-bench-harbor/ask-human:latest /srv /srv\n", "earlier stage"),
        (BASE + "COPY --from=python:3.12 /usr /usr\n", "earlier stage"),
        ("# escape=`\n" + BASE + "ADD `\n  http://127.0.0.1/x /x\n", "parser directive"),
        ("# syntax=docker/dockerfile:1\n" + BASE, "parser directive"),
    ],
)
def test_a_dockerfile_asking_for_what_a_run_refuses_is_named(dockerfile, refused):
    assert refused in (dockerfile_problem(dockerfile) or "")


@pytest.mark.parametrize(
    "dockerfile",
    [
        BASE + "RUN pip install --no-cache-dir pandas\nCOPY mcp.py /usr/local/bin/mcp\n",
        "FROM hilbench-swe:698139c7dc5e90df07566a6c\nWORKDIR /app\n",
        BASE + "ADD local.tar.gz /opt/\n",
        "FROM python:3.11-slim AS build\nRUN true\nFROM python:3.11-slim\n"
        "COPY --from=build /x /x\nCOPY --from=0 /y /y\n",
        "# a comment mentioning ADD http://example.org\n" + BASE,
    ],
)
def test_the_dockerfiles_tasks_use_build(dockerfile):
    assert dockerfile_problem(dockerfile) is None


@pytest.mark.shared_data
def test_no_release_task_asks_for_anything_a_run_refuses():
    """The release's own folders (the five examples and the 98 of the calibration set):
    nothing to refuse, nothing to note, nothing under the paths only the app writes."""
    from tests.conftest import shared_path

    roots = [shared_path("examples", "hilbench"), shared_path("examples", "hilbench-calibration")]
    folders = [
        registry.parents[2]
        for root in roots
        for registry in root.rglob("shared/ask-human-data/blocker_registry.json")
    ]
    assert len(folders) == 103
    for folder in folders:
        files = collect(folder)
        assert dockerfile_problems(files) is None, folder
        assert folder_overreach(files) == [], folder


def test_an_import_keeps_nothing_a_folder_puts_where_only_the_app_writes(tmp_path):
    folder = tmp_path / "sql_0"
    for relative in (
        "shared/sidecars/ask-human/judge/embedded.py",
        "shared/sidecars/build.sh",
        "shared/ask-human-data/judge.json",
        "shared/FETCH.md",
        "shared/ask-human-data/blocker_registry.json",
        "baseline/tests/test.sh",
    ):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text("planted\n")
    kept = collect(folder)
    assert sorted(kept) == ["baseline/tests/test.sh", "shared/ask-human-data/blocker_registry.json"]
    assert not any(path.startswith(RESERVED) for path in kept)
