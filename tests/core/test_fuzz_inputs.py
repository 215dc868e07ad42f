"""Hostile input, generated: the importers (BIRD questions, SWE-bench instances, HiL-Bench
task folders) and the patch parser / path checks fed malformed data by Hypothesis.

Each must either succeed or refuse with *our* error (ImportRefused / DomainError /
PatchRefused) carrying a message — never an unexpected exception — and a refused import
writes nothing to the database.

Examples per test: ``FUZZ_EXAMPLES`` (default 60).
"""

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.importers import import_bird, import_hilbench, import_swebench
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.models import Blocker, SqlDatabase, Task
from hilbench_annotate.toolkit.patches import parse_patch, path_problems, split_patch

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --- generated JSON -----------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=12,
)


_MISSING = object()


def _mutated(base: dict, keys: list[str]):
    """``base`` with each of ``keys`` kept (most often), dropped, or replaced by any JSON."""

    def field(value):
        return st.one_of(st.just(value), st.just(value), json_values, st.just(_MISSING))

    return st.fixed_dictionaries({k: field(base[k]) for k in keys}).map(
        lambda drawn: {
            **{k: v for k, v in base.items() if k not in keys},
            **{k: v for k, v in drawn.items() if v is not _MISSING},
        }
    )


def _one_broken(base: dict):
    """``base`` with exactly one field replaced by any JSON value, or dropped: the record a
    validator most easily waves through."""
    return st.sampled_from(sorted(base)).flatmap(
        lambda key: st.one_of(
            json_values.map(lambda value: {**base, key: value}),
            st.just({k: v for k, v in base.items() if k != key}),
        )
    )


BIRD_RECORD = {
    "question_id": 7,
    "db_id": "retail_bank",
    "question": "How many loans were granted?",
    "evidence": "granted means status A",
    "SQL": "SELECT COUNT(*) FROM loan",
    "difficulty": "simple",
}
bird_records = st.one_of(
    json_values, _mutated(BIRD_RECORD, list(BIRD_RECORD)), _one_broken(BIRD_RECORD)
)

SWE_RECORD = {
    "instance_id": "acme__invoicing-1",
    "repo": "acme/invoicing",
    "base_commit": "0" * 40,
    "problem_statement": "Totals are off by a cent.",
    "patch": "diff --git a/x.py b/x.py\n",
    "test_patch": "diff --git a/t.py b/t.py\n",
    "FAIL_TO_PASS": '["tests/test_x.py::test_total"]',
    "PASS_TO_PASS": [],
}
swe_records = st.one_of(
    json_values, _mutated(SWE_RECORD, list(SWE_RECORD)), _one_broken(SWE_RECORD)
)


def _file_bytes(records):
    """A whole file: JSON array, JSON lines, truncated JSON, or raw bytes."""
    return st.one_of(
        st.lists(records, max_size=4).map(lambda rs: json.dumps(rs).encode()),
        st.lists(records, max_size=4).map(
            lambda rs: "".join(json.dumps(r) + "\n" for r in rs).encode()
        ),
        st.tuples(st.lists(records, min_size=1, max_size=3), st.integers(1, 60)).map(
            lambda t: json.dumps(t[0]).encode()[: t[1]]
        ),
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
    )


def _counts() -> tuple[int, int, int]:
    return Task.objects.count(), Blocker.objects.count(), SqlDatabase.objects.count()


def _refused_or_done(call) -> str:
    """Run an import; a refusal must be ours, with a message, and must have written nothing."""
    before = _counts()
    try:
        call()
    except DomainError as exc:  # ImportRefused is one
        assert str(exc).strip(), "a refusal must say what is wrong"
        assert _counts() == before, "a refused import wrote to the database"
        return "refused"
    return "imported"


# --- BIRD ---------------------------------------------------------------------------------------


@FUZZ
@given(content=_file_bytes(bird_records), suffix=st.sampled_from([".json", ".jsonl"]))
def test_bird_import_refuses_malformed_files_cleanly(project, content, suffix):
    with tempfile.TemporaryDirectory() as directory:
        questions = Path(directory) / f"questions{suffix}"
        questions.write_bytes(content)
        databases = Path(directory) / "databases"
        databases.mkdir()

        _refused_or_done(
            lambda: import_bird(project=project, questions=questions, databases=databases)
        )


@FUZZ
@given(records=st.lists(bird_records, min_size=1, max_size=4))
def test_bird_import_without_databases_either_refuses_or_imports(project, records):
    with tempfile.TemporaryDirectory() as directory:
        questions = Path(directory) / "questions.json"
        questions.write_text(json.dumps(records))
        databases = Path(directory) / "databases"
        databases.mkdir()

        _refused_or_done(
            lambda: import_bird(
                project=project,
                questions=questions,
                databases=databases,
                skip_missing_databases=True,
            )
        )


# --- SWE-bench ------------------------------------------------------------------------------------


@FUZZ
@given(content=_file_bytes(swe_records), suffix=st.sampled_from([".json", ".jsonl"]))
def test_swebench_import_refuses_malformed_files_cleanly(project, content, suffix):
    with tempfile.TemporaryDirectory() as directory:
        instances = Path(directory) / f"instances{suffix}"
        instances.write_bytes(content)

        _refused_or_done(
            lambda: import_swebench(
                project=project, instances=instances, repo=str(Path(directory) / "no-such-repo")
            )
        )


# --- HiL-Bench task folders ---------------------------------------------------------------------

REGISTRY = {
    "blockers": [
        {
            "id": "boom_year",
            "type": "question",
            "subtype": "timeframe_ambiguity",
            "description": "The question names the boom year without saying which year.",
            "resolution": "The boom year is 1997.",
            "example_questions": ["Which year is the boom year?", "When was the boom?"],
        }
    ]
}
METADATA = {"database_name": "retail_bank", "task_attempt_id": "sql_1_a"}
TOML = '[metadata]\ntask_type = "sql"\ndatabase_name = "retail_bank"\n'
INSTRUCTION = "# Task\n\nAnswer the following question:\nHow many loans?\n\n# Notes\n"


def _file(valid: str):
    """A file's content: the valid one, absent (None), arbitrary JSON, text or bytes."""
    return st.one_of(
        st.just(valid),
        st.none(),
        json_values.map(json.dumps),
        st.text(max_size=80),
        st.binary(max_size=80),
    )


folder_files = st.fixed_dictionaries(
    {
        "shared/ask-human-data/blocker_registry.json": st.one_of(
            _file(json.dumps(REGISTRY)),
            _mutated(REGISTRY["blockers"][0], list(REGISTRY["blockers"][0])).map(
                lambda b: json.dumps({"blockers": [b]})
            ),
            _one_broken(REGISTRY["blockers"][0]).map(lambda b: json.dumps({"blockers": [b]})),
        ),
        "shared/metadata.json": st.one_of(
            _file(json.dumps(METADATA)),
            _one_broken(METADATA).map(json.dumps),
            _mutated(
                {**METADATA, "swe_bench_metadata": {"FAIL_TO_PASS": []}, "instance_id": "x"},
                ["database_name", "swe_bench_metadata", "instance_id", "task_attempt_id"],
            ).map(json.dumps),
        ),
        "baseline/task.toml": st.one_of(
            _file(TOML),
            st.sampled_from(
                ["metadata = 3\n", 'metadata = "sql"\n', '[metadata]\ntask_type = "swe"\n']
            ),
        ),
        "baseline/instruction.md": _file(INSTRUCTION),
        "shared/data/business_info.json": _file(json.dumps({"business_info": ["A is granted"]})),
        "shared/ground_truth.sql": _file("SELECT COUNT(*) FROM loan"),
        "shared/problem_statement.txt": _file("Totals are off."),
        "baseline/solution/ground_truth.patch": _file("diff --git a/x b/x\n"),
        "shared/data_archive.json": _file(json.dumps({"db_artifact_path": "db.sqlite"})),
        "shared/data/database_description/loan.csv": _file(
            "original_column_name,column_name,column_description\n"
        ),
    }
)


@FUZZ
@given(files=folder_files, name=st.sampled_from(["sql_1", "swe_1", "task", "sql_x"]))
def test_hilbench_import_refuses_malformed_folders_cleanly(project, files, name):
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory) / name
        for relative, content in files.items():
            if content is None:
                continue
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)

        _refused_or_done(lambda: import_hilbench(project=project, root=Path(directory)))


def test_hilbench_import_of_an_empty_or_missing_folder_is_refused(project, tmp_path):
    with pytest.raises(ImportRefused, match="No HiL-Bench task folders"):
        import_hilbench(project=project, root=tmp_path)
    with pytest.raises(ImportRefused, match="is not a directory"):
        import_hilbench(project=project, root=tmp_path / "missing")


# --- patches ------------------------------------------------------------------------------------

patch_lines = st.one_of(
    st.sampled_from(
        [
            "diff --git a/x.py b/x.py",
            'diff --git "a/x y.py" "b/x y.py"',
            'diff --git "a/unterminated',
            "diff --git a/../etc/passwd b/../etc/passwd",
            "diff --git",
            "--- a/x.py",
            "+++ b/x.py",
            "--- /dev/null",
            "+++ /dev/null",
            '--- "a/\\303\\251t\\351"',
            '+++ "b/\\',
            "--- /etc/passwd",
            "+++ b/.git/config",
            "new file mode 120000",
            "new file mode 160000",
            "deleted file mode 100644",
            "old mode 100644",
            "new mode 100755",
            "rename from a.py",
            "rename to ../b.py",
            "copy from a",
            "copy to b",
            "similarity index 90%",
            "index 0000000..1111111 100644",
            "index zzz",
            "Binary files a/x and b/x differ",
            "GIT binary patch",
            "@@ -1,3 +1,4 @@",
            "@@ -0,0 +1 @@",
            "@@ -a,b +c,d @@",
            "@@ -1 +1 @@ def f():",
            "@@ -99999999999999999999,1 +1 @@",
            "+added",
            "-removed",
            " context",
            "\\ No newline at end of file",
            "",
        ]
    ),
    st.text(max_size=40),
)
patches = st.lists(patch_lines, max_size=25).map("\n".join)


@FUZZ
@given(text=patches, symlinks=st.sets(st.sampled_from(["x.py", "link", "a", "x y.py"])))
def test_patch_parsing_and_path_checks_never_crash(text, symlinks):
    for check in (
        lambda: parse_patch(text),
        lambda: split_patch(text),
        lambda: path_problems(text, symlinks=symlinks),
    ):
        try:
            result = check()
        except DomainError as exc:  # PatchRefused is one
            assert str(exc).strip()
            continue
        assert isinstance(result, list | dict)


@FUZZ
@given(name=st.text(min_size=1, max_size=30))
def test_any_file_name_is_either_safe_or_named_in_a_problem(name):
    patch = f"--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n"
    try:
        problems = path_problems(patch, symlinks=())
    except DomainError:
        return
    parts = name.split("\t", 1)[0].split("/")
    if ".." in parts or any(p.lower() == ".git" for p in parts):
        assert problems, f"{name!r} leaves the repository but was not flagged"
