"""Issue 46: the assembly writes ``manifest.json``'s task list a chunk at a time, and the
export's report no longer carries every task written (they are in the write step's chunks
and the manifest): the join of 50,000 tasks held every entry three times, and its database
connection a 20 MB JSON value."""

import json

import pytest

from exchange.bundles import layout
from exchange.bundles.contents import TaskList, write_manifest
from exchange.models import REPORT_HEAD, ExportChunk, ExportJob
from exchange.selectors import export_entries
from hilbench_annotate.models import Task

from .bundle_helpers import members, seed_demo, user
from .test_bundle_chunks import _export

pytestmark = pytest.mark.django_db

HEADER = {
    "format": "hilbench-annotate-bundle",
    "project": {"slug": "p", "name": "Prøject «one»"},
    "selection": {"tasks": [1, 2], "states": []},
    "skipped": [{"task": 9, "title": "left\nout", "reason": "why"}],
    "zzz": 1.5,  # a key after ``tasks``
}
ENTRIES = [
    {"folder": "sql_0", "title": 'Ünïcode "quoted"\ttab', "validated": False, "revision": 3},
    {
        "folder": "sql_1",
        "incomplete": ["ask_human/environment", "baseline/solution"],
        "nested": {"b": [], "a": {}},
        "oracle": "not run: no data",
    },  # fmt: skip
]


def _parts(tmp_path, lines):
    part = tmp_path / "chunk.contents"
    part.write_text("".join(lines), encoding="utf-8")
    return [part]


@pytest.mark.parametrize("entries", [ENTRIES, ENTRIES[:1], []], ids=["two", "one", "none"])
def test_the_manifest_written_a_part_at_a_time_is_the_whole_one_as_json_writes_it(
    tmp_path, entries
):
    sha = "a" * 64
    listed = TaskList(tmp_path / "manifest.tasks")
    with listed:
        for entry in entries:
            listed.add(entry)
    assert listed.count == len(entries)
    out = tmp_path / "manifest.json"
    size = write_manifest(
        out, HEADER, _parts(tmp_path, [f'{sha}\t"sql_0/x"\t"sql_1/x"\n']), shared=[],
        tasks=listed,
    )  # fmt: skip
    whole = {**HEADER, "contents": {sha: ["sql_0/x", "sql_1/x"]}, "tasks": entries}
    assert out.read_bytes() == layout.dumps(whole)
    assert size == out.stat().st_size
    assert json.loads(out.read_bytes()) == whole
    # Without a task list, the header is written as given (what a caller without one had).
    write_manifest(out, HEADER, _parts(tmp_path, []), shared=[])
    assert out.read_bytes() == layout.dumps({**HEADER, "contents": {}})


def test_the_report_names_no_task_written_the_chunks_and_the_manifest_do(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    settings.EXPORT_CHUNK_SIZE = 2
    job = _export(project, tasks, tmp_path / "bundle.tar.gz")
    assert job.status == "succeeded", job.error
    # The report: what was left out, the files and how many tasks; no list of those written.
    assert set(job.report) == {"skipped", "files", "exported_count"}
    assert job.report["exported_count"] == len(tasks) and job.report["skipped"] == []
    # Each task written, in bundle order, from the write step's chunks: the manifest's list,
    # with the task id of this database beside each.
    entries = list(export_entries(job=job))
    manifest = json.loads(members(tmp_path / "bundle.tar.gz")[layout.MANIFEST])
    assert [{k: v for k, v in e.items() if k != "task"} for e in entries] == manifest["tasks"]
    assert sorted(e["task"] for e in entries) == [t.pk for t in tasks]
    assert ExportChunk.objects.filter(export=job, phase="write").count() > 1
    # What a read of the job shows: its first entries and the count.
    assert job.summary["exported"] == entries[:REPORT_HEAD]
    assert job.summary["exported_count"] == len(tasks) == job.report_summary["exported_count"]


def test_a_job_finished_before_the_change_reads_its_entries_from_its_report(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    old = [{"folder": "sql_0", "task": 1, "status": "draft"}]
    job = ExportJob.objects.create(
        project=project, created_by=user("lead"), selection={},
        report={"exported": old, "skipped": [], "files": 3},
    )  # fmt: skip
    assert list(export_entries(job=job)) == old
    assert job.report_summary["exported_count"] == 1


def test_a_small_json_file_holds_its_own_size_not_orjsons_buffer():
    """An export chunk holds some ten JSON files a task until it writes them: orjson's
    result keeps the 4 KiB buffer it wrote into, so a 12-byte file held 4 KiB."""
    import tracemalloc

    assert layout.dumps({"a": 1}) == b'{\n  "a": 1\n}\n'
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [layout.dumps({"a": i}) for i in range(100)]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(held) == 100 and grown < 100 * 200  # with orjson's buffers: 100 × 4 KiB
    large = layout.dumps({f"k{i}": "x" * 20 for i in range(3000)})  # past the copy's bound
    assert json.loads(large)["k2999"] == "x" * 20
