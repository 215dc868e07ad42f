"""Every JSON file a bundle holds validates against its schema in docs/bundle/; the release's
registries and business info do too (the same format)."""

import json
from pathlib import Path

import jsonschema
import pytest

from exchange.bundles import layout

from ..conftest import ROOT
from .bundle_helpers import export, members, plant_swe, seed_demo, sql_task

SCHEMAS = ROOT / "docs" / "bundle"


def schema_for(path: str) -> str:
    if path == layout.MANIFEST:
        return "manifest"
    relative = path.split("/", 1)[1]
    domain = path.split("_", 1)[0]
    copies = {  # the files a mode folder carries for its sidecars and verifier
        "environment/sidecars/ask-human/blocker_registry.json": "blocker_registry",
        "environment/sidecars/business-info/data/business_info.json": "business_info",
        "environment/sidecars/ask-human/judge.json": "judge_settings",
        "environment/sidecars/ask-human/judge/weights/embedded.json": "judge_weights",
        "tests/tests.json": "swe_tests",
    }
    mode, _, inside = relative.partition("/")
    if mode in ("baseline", "ask_human", "full_info") and inside in copies:
        return copies[inside]
    return {
        layout.METADATA: f"metadata.{domain}",
        layout.REGISTRY: "blocker_registry",
        layout.SQL_BUSINESS_INFO: "business_info",
        layout.ANNOTATE: "annotate_task",
        layout.VALIDATION: "validation",
        layout.REVIEW: "review",
    }[relative]


def _validator(name: str):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.django_db
def test_every_json_file_of_a_bundle_matches_its_schema(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    bundle = export(
        project, tmp_path / "b.tar.gz", tasks=[sql_task(project), plant_swe(project, tmp_path)]
    )
    checked = set()
    for name, data in members(bundle).items():
        if not name.endswith(".json"):
            continue
        schema = schema_for(name)
        errors = list(_validator(schema).iter_errors(json.loads(data)))
        assert errors == [], (name, [e.message for e in errors[:3]])
        checked.add(schema)
    release_only = {"generated"}  # test_the_files_added_to_release_tasks_match_their_schemas
    assert checked == {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.json")} - (
        release_only
    )


@pytest.mark.django_db
def test_the_files_added_to_release_tasks_match_their_schemas(
    project, lead, tmp_path, release_examples
):
    from django.core.management import call_command

    from exchange.bundles.release_runtime import GENERATED, JUDGE

    for domain in ("sql", "swe"):
        call_command("import_hilbench", str(release_examples / domain), project=project.slug)
    bundle = export(project, tmp_path / "b.tar.gz", tasks=list(project.tasks.all()))
    files = members(bundle)
    checked = []
    for name, data in sorted(files.items()):
        relative = name.split("/", 1)[-1]
        schema = {
            GENERATED: "generated",
            JUDGE: "judge_settings",
            layout.MANIFEST: "manifest",
        }.get(relative if name != layout.MANIFEST else name)
        if relative.endswith("tests/tests.json"):
            schema = "swe_tests"
        if schema:
            errors = list(_validator(schema).iter_errors(json.loads(data)))
            assert errors == [], (name, [e.message for e in errors[:3]])
            checked.append(schema)
    assert {"generated", "judge_settings", "manifest", "swe_tests"} <= set(checked)


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_release_files_match_the_same_schemas(domain, release_examples):
    root = release_examples / domain
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for relative, schema in (
            (layout.REGISTRY, "blocker_registry"),
            (layout.SQL_BUSINESS_INFO, "business_info"),
            (layout.METADATA, f"metadata.{domain}"),
        ):
            path = Path(folder / relative)
            if path.is_file():
                errors = list(_validator(schema).iter_errors(json.loads(path.read_text())))
                assert errors == [], (path, [e.message for e in errors[:3]])
