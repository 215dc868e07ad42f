"""A bundle as the release's ``hil`` CLI runs it: the runtime workspace ``run_hil_bench.py``
builds from the Hugging Face dataset, built from the bundle's own files instead.

``hil sql|swe <instances.json>`` reads a list of instances and, beside them, one folder per
task (named by ``task_id``). This writes, under ``out``:

- ``sql_tasks/instances.json`` and ``sql_tasks/<task_id>/``: ``<database>.sqlite``,
  ``table_descriptions.csv`` and one ``<table>.csv`` per table, ``blocker_registry.json``,
  ``business_info.json``; ``chroma_db/`` is built by ``build_chroma.py`` (below).
- ``swe_tasks/instances.json`` and ``swe_tasks/<task_id>/``: ``metadata.json``,
  ``problem_statement.txt``, ``blocker_registry.json`` and, when the task has them,
  ``run_script.sh`` and ``parser.py``.
- ``build_images.sh``: ``docker build`` of each SWE task authored in the app, from its
  ``baseline/environment/``, tagged with the metadata's ``image_name`` (``hilbench-swe:…``,
  which ``hil`` uses as is: repository at /app, dependencies installed). A release task's
  image is the release's own (``docker load`` of its archive), as in the release.
- ``build_chroma.py``: the business-information index each SQL task needs, built with
  ``hil``'s own Python (chromadb, sentence-transformers), as ``run_hil_bench.py`` builds it.

Tasks the workspace cannot hold (a release SQL task whose database lives outside the app)
are listed in the report, not written.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
import shutil
import sqlite3
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.toolkit.jsontext import json_loads

from . import layout


def _json(path: Path) -> dict:
    return json_loads(path.read_text(encoding="utf-8"))


def _task_folders(root: Path) -> list[Path]:
    folders = [p.parent.parent for p in root.glob(f"*/{layout.METADATA}")]
    folders += [p.parent.parent for p in root.glob(f"*/*/{layout.METADATA}")]
    return sorted(set(folders), key=lambda p: p.name)


def _tables(database: Path) -> list[str]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]


def _table_descriptions(tables: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["table_name", "table_description"])
    for table in tables:
        writer.writerow([table, f"Table {table}"])
    return buffer.getvalue()


def _question(folder: Path) -> str:
    annotate = folder / layout.ANNOTATE
    if annotate.is_file():
        return str(_json(annotate).get("blocked_spec", {}).get("question", ""))
    return ""


def _sql_task(folder: Path, tasks_root: Path) -> dict:
    shared = folder / "shared"
    metadata = _json(folder / layout.METADATA)
    database = folder / layout.SQL_DATABASE
    if not database.is_file():
        raise DomainError(f"{folder.name}: the database is not in the bundle (release data)")
    question = _question(folder)
    if not question:
        raise DomainError(f"{folder.name}: no question (annotate/task.json is missing)")
    task_id, name = str(metadata["task_id"]), str(metadata["database_name"])
    task_dir = tasks_root / task_id
    task_dir.mkdir(parents=True)
    shutil.copyfile(database, task_dir / f"{name}.sqlite")
    descriptions = shared / "data" / "database_description"
    for csv_file in sorted(descriptions.glob("*.csv")) if descriptions.is_dir() else []:
        shutil.copyfile(csv_file, task_dir / csv_file.name.lower())
    (task_dir / "table_descriptions.csv").write_text(
        _table_descriptions(_tables(task_dir / f"{name}.sqlite"))
    )
    shutil.copyfile(folder / layout.REGISTRY, task_dir / "blocker_registry.json")
    business = shared / "data" / "business_info.json"
    info = _json(business).get("business_info", []) if business.is_file() else []
    (task_dir / "business_info.json").write_text(
        json.dumps({"database_name": name, "business_info": info}, indent=2)
    )
    return {
        "env": {
            "database_type": "sqlite",
            "name": "main",
            "max_rows": 200,
            "database_name": name,
            "base_db_path": str((task_dir / f"{name}.sqlite").resolve()),
            "working_db_path": "",
            "diff_queries": [],
            "chroma_path": str((task_dir / "chroma_db").resolve()),
        },
        "problem_statement": {
            "type": "sql",
            "id": task_id,
            "question": question,
            "ground_truth_query": (shared / "ground_truth.sql").read_text(encoding="utf-8"),
            "business_info": info,
            "database_name": name,
            "extra_fields": {},
            "expected_sorted": False,
            "required_unique": False,
            "no_extra_columns_allowed": False,
            "blocker_registry_path": str((task_dir / "blocker_registry.json").resolve()),
            "table_descriptions_path": str((task_dir / "table_descriptions.csv").resolve()),
        },
    }


def _swe_task(folder: Path, tasks_root: Path) -> tuple[dict, str | None]:
    """The instance and, for a task authored in the app, its image's build command."""
    metadata = _json(folder / layout.METADATA)
    task_id = str(metadata["task_id"])
    task_dir = tasks_root / task_id
    task_dir.mkdir(parents=True)
    statement = (folder / layout.SWE_STATEMENT).read_text(encoding="utf-8")
    (task_dir / "problem_statement.txt").write_text(statement)
    shutil.copyfile(folder / layout.REGISTRY, task_dir / "blocker_registry.json")
    for name in ("run_script.sh", "parser.py"):
        for candidate in (folder / "shared" / name, folder / "baseline" / "tests" / name):
            if candidate.is_file():
                shutil.copyfile(candidate, task_dir / name)
                break
    (task_dir / "metadata.json").write_text(
        json.dumps({**metadata, "instance_id": task_id}, indent=2)
    )
    patch = folder / "baseline" / "solution" / "ground_truth.patch"
    environment = folder / "baseline" / "environment"
    build = None
    if (environment / "repository.fast-export").is_file():
        build = (
            f"docker build -t {shlex.quote(metadata['image_name'])} "
            f"{shlex.quote(str(environment.resolve()))}"
        )
    instance = {
        "instance_id": task_id,
        "problem_statement": statement,
        "repo_name": "app",
        "base_commit": metadata.get("base_commit") or "HEAD",
        "image_name": metadata["image_name"],
        "extra_fields": {
            "uid": str(metadata.get("uid") or metadata.get("attempt_id") or task_id),
            "repo_or_db_name": str(metadata.get("repo_name_source") or metadata.get("repo_name")),
            "ground_truth_patch": patch.read_text(encoding="utf-8") if patch.is_file() else "",
            "blocker_registry_path": str((task_dir / "blocker_registry.json").resolve()),
        },
    }
    return instance, build


BUILD_CHROMA = '''"""Build each SQL task's business-information index, as run_hil_bench.py does.
Run with the Python of your hil checkout (it has chromadb and sentence-transformers):
    uv run python build_chroma.py
"""
import json
from pathlib import Path

import chromadb
from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

embedding = SentenceTransformerEmbeddingFunction(model_name="all-MiniLM-L6-v2")
for info in sorted(Path(__file__).parent.glob("sql_tasks/*/business_info.json")):
    data = json_loads(info.read_text())
    client = chromadb.PersistentClient(path=str(info.parent / "chroma_db"))
    try:
        client.delete_collection("business_info")
    except Exception:
        pass
    collection = client.get_or_create_collection("business_info", embedding_function=embedding)
    documents = data["business_info"]
    if documents:
        collection.add(
            ids=[f"doc_{i}" for i in range(len(documents))],
            documents=documents,
            metadatas=[{"database_name": data["database_name"]} for _ in documents],
        )
    print(f"{info.parent.name}: {len(documents)} business-info entries indexed")
'''


def hil_workspace(bundle: Path, out: Path) -> dict:
    """Write the ``hil`` workspace for ``bundle`` (a ``.tar.gz`` or an extracted folder) into
    ``out`` (which must not exist); return ``{"sql": [...], "swe": [...], "skipped": [...]}``."""
    bundle, out = Path(bundle), Path(out)
    if out.exists():
        raise DomainError(f"{out} exists; name a new folder.")
    root = bundle
    if bundle.is_file():
        root = extract_archive(bundle, out / "bundle")
    else:
        out.mkdir(parents=True)
    report: dict[str, list] = {"sql": [], "swe": [], "skipped": []}
    instances: dict[str, list] = {"sql": [], "swe": []}
    builds = []
    for folder in _task_folders(root):
        domain = "sql" if (folder / "shared" / "ground_truth.sql").is_file() else "swe"
        tasks_root = out / f"{domain}_tasks"
        tasks_root.mkdir(exist_ok=True)
        try:
            if domain == "sql":
                instances["sql"].append(_sql_task(folder, tasks_root))
            else:
                instance, build = _swe_task(folder, tasks_root)
                instances["swe"].append(instance)
                builds += [build] if build else []
        except (DomainError, OSError, KeyError, ValueError) as exc:
            report["skipped"].append({"folder": folder.name, "reason": str(exc)})
            continue
        report[domain].append(folder.name)
    for domain, items in instances.items():
        if items:
            (out / f"{domain}_tasks" / "instances.json").write_text(json.dumps(items, indent=2))
    script = out / "build_images.sh"
    script.write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\n" + "".join(b + "\n" for b in builds)
    )
    script.chmod(0o755)
    (out / "build_chroma.py").write_text(BUILD_CHROMA)
    return report
