"""Regenerate exchange/importers/swebench_specs.json from SWE-bench's own data.

SWE-bench's harness pins, per repository and version, the interpreter, the packages, the
install commands, the test command and the log parser of its test environments
(``MAP_REPO_VERSION_TO_SPECS_*`` and ``MAP_REPO_TO_PARSER_*`` in the ``swebench`` package).
The importer reads them from the JSON this script writes, so the app needs neither the
package (it pulls in datasets, modal, docker…) nor the network at run time.

    python scripts/swebench_specs.py            # pip-downloads swebench==4.1.0 (no deps)
    python scripts/swebench_specs.py --wheel W  # or reads a wheel you have

Besides the specifications, the per-repository paths where the harness reads a repository's
own requirement files and conda environment files (``MAP_REPO_TO_REQS_PATHS``,
``MAP_REPO_TO_ENV_YML_PATHS``). The constants modules are plain data; they are loaded from
the wheel by file, never by importing the ``swebench`` package. Python and JavaScript/Go
repositories are kept (the languages the app has log parsers for); the output is sorted, so a
rerun is byte-identical.
"""

import argparse
import ast
import importlib.util
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = "4.1.0"
OUT = Path(__file__).resolve().parent.parent / "exchange" / "importers" / "swebench_specs.json"
LANGUAGES = {"python": "PY", "go": "GO", "javascript": "JS"}
SPEC_KEYS = (
    "python", "pip_packages", "packages", "pre_install", "install", "test_cmd", "env",
    "eval_commands",
)  # fmt: skip
# SWE-bench's parser functions by name -> the app's parser (validators/logparsers.py).
PARSERS = {
    "parse_log_pytest": "pytest",
    "parse_log_pytest_options": "pytest_options",
    "parse_log_pytest_v2": "pytest",
    "parse_log_gotest": "go_test",
    "parse_log_jest": "jest",
    "parse_log_jest_json": "jest",
    "parse_log_mocha_v2": "mocha",
    "parse_log_django": "django",
}


def _wheel(path: str | None, work: Path) -> Path:
    if path:
        return Path(path)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", f"swebench=={VERSION}", "-d", work],
        check=True,
    )
    return next(work.glob("swebench-*.whl"))


def _module(root: Path, relative: str):
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_"), root / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parsers(root: Path, language: str) -> dict[str, str]:
    """repo -> parser function name, read from the module's source (it imports the harness);
    aliases (``parse_log_flask = parse_log_pytest``) are followed to the function they name."""
    source = (root / f"swebench/harness/log_parsers/{language}.py").read_text()
    aliases: dict[str, str] = {}
    mapping: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if isinstance(node.value, ast.Name):
            aliases[name] = node.value.id
        elif name.startswith("MAP_REPO_TO_PARSER") and isinstance(node.value, ast.Dict):
            mapping = {
                key.value: value.id
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(key, ast.Constant) and isinstance(value, ast.Name)
            }

    def resolve(name: str) -> str:
        seen = set()
        while name in aliases and name not in seen:
            seen.add(name)
            name = aliases[name]
        return name

    return {repo: resolve(name) for repo, name in mapping.items()}


def _clean(spec: dict) -> dict:
    kept = {key: spec[key] for key in SPEC_KEYS if key in spec}
    for key in ("pre_install", "install", "eval_commands"):
        if isinstance(kept.get(key), str):
            kept[key] = [kept[key]]
    if isinstance(kept.get("packages"), str):
        kept["packages"] = kept["packages"].split()
    if "env" in kept:
        kept["env"] = {str(k): str(v) for k, v in dict(kept["env"]).items()}
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="a swebench wheel (default: pip download it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with zipfile.ZipFile(_wheel(args.wheel, work)) as wheel:
            wheel.extractall(work / "wheel")
        root = work / "wheel"
        repos = {}
        for language, suffix in LANGUAGES.items():
            module = _module(root, f"swebench/harness/constants/{language}.py")
            specs = getattr(module, f"MAP_REPO_VERSION_TO_SPECS_{suffix}")
            parsers = _parsers(root, language)
            # Where the harness reads a repository's own requirement files and conda
            # environment files (``packages: requirements.txt`` / ``environment.yml``).
            requirement_paths = getattr(module, "MAP_REPO_TO_REQS_PATHS", {})
            conda_paths = getattr(module, "MAP_REPO_TO_ENV_YML_PATHS", {})
            for repo, versions in specs.items():
                parser_name = parsers.get(repo, "")
                repos[repo] = {
                    "language": language,
                    "log_parser": PARSERS.get(parser_name, parser_name),
                    "versions": {v: _clean(s) for v, s in sorted(versions.items())},
                }
                if repo in requirement_paths:
                    repos[repo]["requirement_paths"] = list(requirement_paths[repo])
                if repo in conda_paths:
                    repos[repo]["conda_paths"] = list(conda_paths[repo])
    document = {"source": f"swebench=={VERSION}", "repos": dict(sorted(repos.items()))}
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(repos)} repositories written to {OUT}")


if __name__ == "__main__":
    main()
