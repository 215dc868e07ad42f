"""An export written in chunks (by one process or by many workers) is the bundle one chunk
would give: the same files, each content stored once, readable by tar, tarfile and our own
importer; its headers are tarfile's; its queries are a fixed number a chunk."""

import errno
import gzip
import hashlib
import json
import os
import subprocess
import tarfile
import time
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exchange.bundles import layout
from exchange.bundles.tarheaders import MemberHeaders, tar_header
from exchange.importers.bundle import import_bundle
from exchange.models import ExportChunk, ExportJob
from exchange.selectors import export_entries
from exchange.services.exports import bundle_export_create, bundle_export_execute
from hilbench_annotate.models import Project, SqlEnvironment, Task
from hilbench_annotate.selectors import current_revisions, current_revisions_kept

from ..conftest import start_worker
from .bundle_helpers import members, seed_demo, user

pytestmark = pytest.mark.django_db


def _ustar(name: str, size: int, link: str = "") -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, layout.TAR_MTIME, layout.FILE_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if link:
        info.type, info.linkname = tarfile.LNKTYPE, link
    return info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")


@pytest.mark.parametrize(
    "name",
    [
        "manifest.json",
        "sql_0/ask_human/environment/sidecars/ask-human/judge/features.py",
        "x" * 100,
        "sql_12/" + "/".join(["d" * 30] * 6) + "/f.py",  # 197 bytes: ustar's prefix field
    ],
)
@pytest.mark.parametrize("size", [0, 1, 513, 10**9])
def test_headers_are_tarfiles_own_ustar_headers(name, size):
    assert tar_header(name, size) == _ustar(name, size)
    assert tar_header(name, 0, "sql_0/shared/data/database.sqlite") == _ustar(
        name, 0, "sql_0/shared/data/database.sqlite"
    )


@pytest.mark.parametrize(
    "link",
    [
        "_shared/sql_0/" + "a" * 64,
        "sql_0/ask_human/environment/data/database.sqlite",
        "_shared/swe_4/" + "é" * 10,  # not ASCII: left to tar_header (a PAX header)
        "_shared/" + "l" * 100,  # too long for ustar's link field
    ],
)
def test_member_headers_are_tar_headers(link):
    # Every folder, every path within it, a script among them, a name ustar must split,
    # a name without a folder, each header made twice (the second from the parts remembered).
    headers = MemberHeaders()
    names = [
        "sql_0/ask_human/environment/sidecars/ask-human/judge/features.py",
        "sql_17/full_info/tests/test.sh",
        "swe_3/" + "e" * 120,
        "sql_2/" + "n" * 93,  # 100 bytes joined: the longest name without a prefix
        "sql_2/" + "n" * 94,
        "sql_0/shared/données.csv",
        "manifest.json",
        "sql_0/",
        "x.sh/x.sh",  # the same text as folder and as path within it
    ]
    for name in names * 2:
        folder, _, within = name.partition("/")
        folder = folder if within else name
        assert headers.link(folder, within, link) == tar_header(name, 0, link), name
        for size in (0, 1, 513, 8**11 - 1, 8**11):
            assert headers.file(folder, within, size) == tar_header(name, size), (name, size)


@pytest.mark.parametrize("name", ["swe_3/" + "e" * 120, "sql_0/shared/données.csv"])
def test_a_name_ustar_cannot_hold_gets_a_pax_header(tmp_path, name):
    archive = tmp_path / "a.tar"
    archive.write_bytes(tar_header(name, 3) + b"abc" + b"\0" * 509 + b"\0" * 1024)
    with tarfile.open(archive) as tf:
        member = tf.next()
        assert member.name == name and tf.extractfile(member).read() == b"abc"


def _export(project, tasks, out, *, draft=True) -> ExportJob:
    job = bundle_export_create(
        project=project, actor=user("lead"), selection={"tasks": [t.pk for t in tasks]}, draft=draft
    )
    return bundle_export_execute(job_id=job.pk, out=out)


def _files(bundle) -> dict[str, bytes]:
    files = members(bundle)
    manifest = json.loads(files.pop(layout.MANIFEST))
    manifest.pop("created_at")
    return {**files, layout.MANIFEST: json.dumps(manifest, sort_keys=True).encode()}


def test_a_bundle_in_chunks_holds_what_one_chunk_holds_each_content_stored_once(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="sql").order_by("pk"))
    settings.EXPORT_CHUNK_SIZE = 100
    whole = _export(project, tasks, tmp_path / "whole.tar.gz")
    settings.EXPORT_CHUNK_SIZE = 2
    chunked = _export(project, tasks, tmp_path / "chunked.tar.gz")
    written = ExportChunk.objects.filter(export=chunked, phase="write")
    assert written.count() == 3
    # Each worker copies the contents its tasks share (the sidecars' sources, the database)
    # into its own chunk: the assembly has one run of compressed bytes to copy per chunk.
    assert [[i[0] for i in c.result["record"]["items"]] for c in written] == [["data"]] * 3

    assert _files(tmp_path / "whole.tar.gz") == _files(tmp_path / "chunked.tar.gz")
    assert chunked.report["files"] == whole.report["files"]
    with tarfile.open(tmp_path / "chunked.tar.gz") as tf:
        stored = [m for m in tf if m.isfile()]
        links = [m for m in tf if m.islnk()]
    database = SqlEnvironment.objects.get(task=tasks[0]).database.path.read_bytes()
    with tarfile.open(tmp_path / "chunked.tar.gz") as tf:
        copies = [m.name for m in stored if tf.extractfile(m).read() == database]
    # Six tasks share the database (each in seven places) and the app's code: each stored
    # once in the bundle, in _shared/, every name of it in a task folder a link to it.
    assert copies == [f"_shared/sql_0/{hashlib.sha256(database).hexdigest()}"]
    assert not [m.name for m in stored if m.name.endswith("sidecars/sql-tools/sql_tools.py")]
    tools = {m.linkname for m in links if m.name.endswith("sidecars/sql-tools/sql_tools.py")}
    assert len(tools) == 1 and tools.pop().startswith("_shared/")
    # Any other link stays in its folder; no content is stored twice.
    assert links and all(
        m.linkname.split("/")[0] in ("_shared", m.name.split("/")[0]) for m in links
    )
    with tarfile.open(tmp_path / "chunked.tar.gz") as tf:
        stored_shas = [hashlib.sha256(tf.extractfile(m).read()).hexdigest() for m in stored
                       if m.size and not m.name.startswith(("sql_", "swe_"))]  # fmt: skip
    assert len(stored_shas) == len(set(stored_shas))
    # The manifest names each content once, with every path that carries it.
    manifest = json.loads(_files(tmp_path / "chunked.tar.gz")[layout.MANIFEST])
    paths = [p for names in manifest["contents"].values() for p in names]
    assert len(paths) == len(set(paths))
    assert sorted(paths) == sorted(n for n in _files(tmp_path / "chunked.tar.gz")
                                   if n != layout.MANIFEST)  # fmt: skip

    # One task folder extracted with _shared beside it by GNU tar has every one of its files.
    alone = tmp_path / "alone"
    alone.mkdir()
    subprocess.run(
        ["tar", "-xzf", str(tmp_path / "chunked.tar.gz"), "-C", str(alone), "_shared", "sql_4"],
        check=True,
    )
    listed = [n for n in _files(tmp_path / "chunked.tar.gz") if n.startswith("sql_4/")]
    task_files = sorted(
        p.relative_to(alone).as_posix() for p in alone.rglob("*")
        if p.is_file() and not p.relative_to(alone).as_posix().startswith("_shared/")
    )  # fmt: skip
    assert task_files == sorted(listed)
    assert (alone / "sql_4/full_info/tests/database.sqlite").read_bytes() == database

    # tar follows the links (some lead to a chunk's first copy, itself a link) …
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(tmp_path / "chunked.tar.gz"), "-C", str(out)], check=True)
    assert (out / "sql_5/full_info/tests/database.sqlite").read_bytes() == database
    # … and so does our own importer, which checks every link first.
    other = Project.objects.create(name="Other", slug="other")
    report = import_bundle(project=other, path=tmp_path / "chunked.tar.gz", actor=user("lead"))
    assert len(report.created) == len(tasks)


def test_a_large_file_from_disk_is_stored_once_in_shared(settings, tmp_path, monkeypatch):
    """Past CROSS_TASK_LINK_BYTES a file from disk (here the SWE task's repository stream) is
    stored once, in _shared/, whoever carries it; its names link to that copy, and the
    manifest lists them under its sha256 (format 1 had listed them as ``linked_across_tasks``)."""
    from exchange.bundles import tarstream

    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="swe").order_by("pk"))[:1]
    monkeypatch.setattr(tarstream, "CROSS_TASK_LINK_BYTES", 1)
    job = _export(project, tasks, tmp_path / "b.tar.gz")
    assert job.status == "succeeded", job.error
    with tarfile.open(tmp_path / "b.tar.gz") as tf:
        links = {m.name: m.linkname for m in tf if m.islnk()}
        manifest = json.loads(tf.extractfile(layout.MANIFEST).read())
    streams = {n: t for n, t in links.items() if n.endswith("repository.fast-export")}
    assert len(streams) >= 3 and len(set(streams.values())) == 1
    [target] = set(streams.values())
    sha = target.rsplit("/", 1)[1]
    assert set(manifest["contents"][sha]) == {target, *streams}
    assert "linked_across_tasks" not in manifest


def test_export_queries_are_a_fixed_number_a_chunk(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="sql").order_by("pk"))
    settings.EXPORT_CHUNK_SIZE = 100
    _export(project, tasks, tmp_path / "warm.tar.gz")  # the oracle and lint caches filled

    def queries(count: int) -> int:
        with CaptureQueriesContext(connection) as captured:
            job = _export(project, tasks[:count], tmp_path / f"{count}.tar.gz")
        assert job.status == "succeeded", job.error
        return len(captured.captured_queries)

    two, six = queries(2), queries(6)
    # Before chunks, every task cost some 27 queries: four more tasks would add ~110.
    assert six - two <= 8, (two, six)


def test_a_chunk_reads_its_tasks_current_revisions_once(settings, tmp_path):
    """A chunk's files, pass rates, gates and provenance each asked for the tasks' current
    revisions: five reads of the same rows a chunk, each a scan of the table on PostgreSQL
    once it is large. Now one a chunk step (``current_revisions_kept``); outside a step the
    selector reads again, and a task first asked for within one is read then."""
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="sql").order_by("pk"))
    settings.EXPORT_CHUNK_SIZE = 2
    _export(project, tasks, tmp_path / "warm.tar.gz")  # the oracle and lint caches filled
    read = (  # current_revisions' query
        '"hilbench_annotate_revision"."id" AS "pk", "hilbench_annotate_revision"."number" AS'
    )

    def reads(**kwargs) -> int:
        with CaptureQueriesContext(connection) as captured:
            job = _export(project, tasks, tmp_path / "b.tar.gz", **kwargs)
        assert job.status == "succeeded", job.error
        steps = job.chunks.exclude(phase=ExportChunk.Phase.ASSEMBLE).count()
        return sum(read in q["sql"] for q in captured.captured_queries), steps

    assert len(tasks) > 2
    count, steps = reads()  # a draft: the write step only
    assert count == steps == -(-len(tasks) // 2)

    ids = [t.pk for t in tasks]
    with CaptureQueriesContext(connection) as captured, current_revisions_kept():
        first = current_revisions(task_ids=ids[:2])
        assert current_revisions(task_ids=ids[:2]) == first
        both = current_revisions(task_ids=ids[:3])
    assert set(both) == set(ids[:3]) and {k: both[k] for k in first} == first
    assert sum(read in q["sql"] for q in captured.captured_queries) == 2  # the third task's
    assert current_revisions(task_ids=ids[:3]) == both  # outside: read again, the same


def test_a_task_whose_files_fail_is_left_out_with_its_reason(settings, tmp_path):
    """Issue 45, item 0: one bad task no longer fails the export (it used to: the whole
    bundle was refused); it is named with why and the others are written. A failure that is
    no task's still fails the export (``test_export_isolation.py``)."""
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="sql").order_by("pk"))
    env = SqlEnvironment.objects.get(task=tasks[-1])
    SqlEnvironment.objects.filter(pk=env.pk).update(
        descriptions={**env.descriptions, "../escape": "a,b\n"}
    )
    settings.EXPORT_CHUNK_SIZE = 2
    job = _export(project, tasks, tmp_path / "bad.tar.gz")
    assert job.status == "succeeded", job.error
    [skipped] = job.report["skipped"]
    assert skipped["task"] == tasks[-1].pk and skipped["title"] == tasks[-1].title
    assert skipped["reason"].startswith("left out: its files raised DomainError: ")
    assert "is not a file name" in skipped["reason"]
    assert sorted(e["task"] for e in export_entries(job=job)) == sorted(t.pk for t in tasks[:-1])
    assert (tmp_path / "bad.tar.gz").exists()
    assert not (settings.BUNDLE_STORE / "work" / f"export-{job.pk}").exists()


@pytest.mark.django_db(transaction=True)
def test_two_real_workers_write_the_chunks_of_one_export(settings, tmp_path, worker_broker):
    """The Export page's path: the job is sent to the workers, each chunk to whichever is
    free, the last chunk assembles; the bundle is the one a single process writes."""
    project = seed_demo(settings, tmp_path)
    tasks = list(Task.objects.filter(project=project, domain="sql").order_by("pk"))
    settings.EXPORT_CHUNK_SIZE = 2
    inline = _export(project, tasks, tmp_path / "inline.tar.gz")
    env = {"HILBENCH_EXPORT_CHUNK_SIZE": "2"}
    workers = [start_worker(worker_broker, tmp_path / f"worker-{n}.log", env=env) for n in range(2)]
    try:
        from exchange.services.exports import bundle_export_start

        job = bundle_export_start(
            project=project, actor=user("lead"), selection={"tasks": [t.pk for t in tasks]},
            draft=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.is_finished:
                break
            time.sleep(0.3)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)
    logs = "".join((tmp_path / f"worker-{n}.log").read_text() for n in range(2))
    assert job.status == "succeeded", f"{job.status}: {job.error}\n{logs[-3000:]}"
    # The same files and the same manifest (but for its time of creation).
    assert _files(job.path) == _files(tmp_path / "inline.tar.gz")
    assert job.report["files"] == inline.report["files"]
    chunks = ExportChunk.objects.filter(export=job)
    assert sorted(chunks.values_list("phase", flat=True)) == ["assemble"] + ["write"] * 3
    assert set(chunks.values_list("status", flat=True)) == {"succeeded"}


def test_an_export_chunk_is_written_with_fewer_collections(monkeypatch):
    import gc

    from exchange.bundles import writer

    seen = []
    monkeypatch.setattr(writer, "_Chunk", lambda ids: seen.append(gc.get_threshold()[0]) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        writer.chunk_write(work=None, name="c", folders=[], options=None)
    assert seen and seen[0] >= 40_000


def test_long_segments_and_large_files_from_disk_assemble_into_a_readable_bundle(tmp_path):
    """A chunk whose raw bytes pass a megabyte between two copied blobs is compressed in
    several steps (its record must still start where its first bytes are), and a file from
    disk larger than a read is copied into the chunk in reads: both come back byte for byte."""
    import random

    from exchange.bundles.tarstream import CHUNK, ChunkSpool, assemble

    rng = random.Random(5)
    stream = tmp_path / "repository.fast-export"
    stream.write_bytes(os.urandom(3 * CHUNK))  # random: its blob is larger than one read
    work = tmp_path / "work"
    expected: dict[str, bytes] = {}
    records = []
    for number in range(2):
        spool = ChunkSpool(work, f"chunk-{number}")
        tasks = []
        for t in range(2):
            folder = f"swe_{number * 2 + t}"
            entries = []
            for f in range(5):  # 5 x 300 kB of its own: one segment past a megabyte
                content = rng.randbytes(300_000)
                entries.append(spool.entry(f"{folder}/data/{f}.bin", content))
                expected[f"{folder}/data/{f}.bin"] = content
            entries.append(spool.entry(f"{folder}/shared/repository.fast-export", stream))
            expected[f"{folder}/shared/repository.fast-export"] = stream.read_bytes()
            entries.append(spool.entry(f"{folder}/tail.txt", b"after the stream"))
            expected[f"{folder}/tail.txt"] = b"after the stream"
            tasks.append(entries)
        records.append(spool.write(tasks))
    assert [[i[0] for i in r.items] for r in records] == [["data"]] * 2
    out = tmp_path / "bundle.tar.gz"
    result = assemble(out, work, records, {"draft": True})
    with tarfile.open(out) as tf:
        got = {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}
    assert {n: v for n, v in got.items() if n != layout.MANIFEST} == expected
    # The sha256 hashed beside the kernel's copy is the file's; so is the one of a copy by
    # reads and writes, where the file systems refuse copy_file_range.
    assert result["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert result["size"] == out.stat().st_size

    real_copy = os.copy_file_range

    def refused(*args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    def forbidden(*args):
        raise OSError(errno.EPERM, "Operation not permitted")  # a seccomp profile

    def some_then_nothing(source, target, length, offset):  # copies a little, then 0
        return real_copy(source, target, min(length, 1000), offset) if offset == 0 else 0

    for number, kernel_copy in enumerate((refused, forbidden, some_then_nothing)):
        with mock.patch("os.copy_file_range", kernel_copy):
            again = assemble(tmp_path / f"again-{number}.tar.gz", work, records, {"draft": True})
        assert (tmp_path / f"again-{number}.tar.gz").read_bytes() == out.read_bytes()
        assert again == result


def test_a_chunk_shorter_than_its_record_fails_the_assembly(tmp_path):
    """A chunk file cut short (a full disk while it was written, say) is an error naming it,
    not a bundle missing bytes; nothing is left at the bundle's path."""
    from exchange.bundles.tarstream import ChunkSpool, assemble

    work = tmp_path / "work"
    spool = ChunkSpool(work, "chunk-0")
    record = spool.write([[spool.entry("t/data.bin", os.urandom(50_000))]])
    data = work / record.data
    data.write_bytes(data.read_bytes()[:1000])
    out = tmp_path / "bundle.tar.gz"
    with pytest.raises(OSError, match="ends before its record says"):
        assemble(out, work, [record], {"draft": True})
    assert not out.exists() and not out.with_name(out.name + ".part").exists()


def test_a_shared_copy_serves_one_group_of_folders_as_file_systems_cap_names(tmp_path):
    """ext4 allows a file 65,000 names: 10,000 tasks naming the database 7 times each made
    ``tar -x`` refuse the last 5,000 links ("Too many links"). Each copy in _shared/ serves
    LINK_GROUP folders of a domain; the manifest lists every copy under the one sha256."""
    from exchange.bundles.layout import LINK_GROUP, shared_copy
    from exchange.bundles.tarstream import ChunkSpool, assemble

    assert shared_copy("sql_7", "ab") == "_shared/sql_0/ab"
    assert shared_copy(f"swe_{LINK_GROUP + 3}", "ab") == f"_shared/swe_{LINK_GROUP}/ab"
    code = b"print('the same in every task')\n"
    sha = hashlib.sha256(code).hexdigest()
    work = tmp_path / "work"
    records = []
    for number, folders in enumerate([["sql_0", "sql_1"], [f"sql_{LINK_GROUP}"]]):
        spool = ChunkSpool(work, f"chunk-{number}", common=frozenset({sha}))
        tasks = [
            [spool.entry(f"{f}/{mode}/tests/compare.py", code) for mode in ("a", "b")]
            + [spool.entry(f"{f}/own.txt", f.encode())]
            for f in folders
        ]
        records.append(spool.write(tasks))
    info = assemble(tmp_path / "b.tar.gz", work, records, {"format_version": 2})
    assert info["files"] == 9
    with tarfile.open(tmp_path / "b.tar.gz") as tf:
        stored = sorted(m.name for m in tf if m.isfile() and m.name.startswith("_shared/"))
        links = {m.name: m.linkname for m in tf if m.islnk()}
        manifest = json.loads(tf.extractfile(layout.MANIFEST).read())
    assert stored == [f"_shared/sql_0/{sha}", f"_shared/sql_{LINK_GROUP}/{sha}"]
    assert links[f"sql_{LINK_GROUP}/a/tests/compare.py"] == stored[1]
    assert {links[f"sql_{n}/b/tests/compare.py"] for n in (0, 1)} == {stored[0]}
    assert sorted(manifest["contents"][sha]) == sorted([*stored, *links])
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(tmp_path / "b.tar.gz"), "-C", str(out)], check=True)
    assert (out / f"sql_{LINK_GROUP}/b/tests/compare.py").read_bytes() == code


def test_links_of_every_kind_come_back_as_their_files(tmp_path):
    """The links a chunk makes in a loop of their own (to ``_shared``, to a first name in the
    folder) give each name its content and mode, where the name or its target is not ASCII
    or too long for ustar (a PAX header, longer than a block) as where it is plain."""
    from exchange.bundles.tarstream import RECORD, ChunkSpool, assemble

    code, script = b"print('app code')\n", b"#!/bin/sh\necho solve\n"
    common = frozenset({hashlib.sha256(code).hexdigest()})
    names = ["a/tests/grade.py", "b/données/grade.py", "c/" + "x" * 120 + "/grade.py"]
    work = tmp_path / "work"
    spool = ChunkSpool(work, "chunk-0", common=common)
    expected: dict[str, bytes] = {}
    tasks = []
    for folder in ("sql_0", "sql_1"):
        entries = []
        for name in names:
            own = f"{folder} {name}".encode()  # carried twice in the folder: one link
            for where, content in ((name, code), (f"one/{name}", own), (f"two/{name}", own)):
                entries.append(spool.entry(f"{folder}/{where}", content))
                expected[f"{folder}/{where}"] = content
        for mode in ("x", "y"):
            entries.append(spool.entry(f"{folder}/{mode}/solve.sh", script))
            expected[f"{folder}/{mode}/solve.sh"] = script
        tasks.append(entries)
    assemble(tmp_path / "b.tar.gz", work, [spool.write(tasks)], {"draft": True})
    # The chunk counted the bytes of each header, a PAX one too: the archive ends on a whole
    # record, as tar pads it.
    assert len(gzip.decompress((tmp_path / "b.tar.gz").read_bytes())) % RECORD == 0
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(tmp_path / "b.tar.gz"), "-C", str(out)], check=True)
    with tarfile.open(tmp_path / "b.tar.gz") as tf:
        links = {m.name for m in tf if m.islnk()}
    assert "sql_1/two/b/données/grade.py" in links and "sql_0/y/solve.sh" in links
    for name, content in expected.items():
        assert (out / name).read_bytes() == content, name
        assert os.access(out / name, os.X_OK) == name.endswith(".sh"), name
