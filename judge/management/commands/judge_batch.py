"""Judge a file of questions against HiL-Bench registries, offline.

    python manage.py judge_batch --registries DIR --questions FILE.jsonl --out FILE.jsonl \\
        [--judge embedded]

``DIR/<task>.json`` are registry files (``{"blockers": [...]}``); each input line is
``{"task": ..., "question": ...}``. Each output line is the input line plus ``predicted``
(the matched blocker's id, or null) and ``response`` (its resolution verbatim, or
``irrelevant question``). Every line is checked before any is judged: a bad line stops the
command naming its line number, and nothing is written.
"""

import json
import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judge.base import RegistryBlocker, respond
from judge.embedded import EmbeddedJudge, load_registry

JUDGES = ("embedded",)


class Command(BaseCommand):
    help = "Judge a JSONL file of {task, question} lines against HiL-Bench blocker registries."

    def add_arguments(self, parser):
        parser.add_argument("--registries", required=True, type=Path)
        parser.add_argument("--questions", required=True, type=Path)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--judge", default="embedded", choices=JUDGES)

    def handle(self, *args, **options):
        registries_dir = Path(options["registries"])
        if not registries_dir.is_dir():
            raise CommandError(f"--registries {registries_dir} is not a directory")
        registries: dict[str, list[RegistryBlocker]] = {}
        for path in sorted(registries_dir.glob("*.json")):
            try:
                registries[path.stem] = load_registry(path)
            except (OSError, ValueError) as exc:
                raise CommandError(f"registry {path.name}: {exc}") from exc
        if not registries:
            raise CommandError(f"no <task>.json registry in {registries_dir}")

        records = self._read(Path(options["questions"]), registries)
        judge = EmbeddedJudge()
        verdicts = judge.judge_many([(r["question"], registries[r["task"]]) for r in records])

        lines = []
        matched = 0
        for record, verdict in zip(records, verdicts, strict=True):
            registry = registries[record["task"]]
            matched += verdict.blocker_id is not None
            out = {
                **record,
                "predicted": verdict.blocker_id,
                "response": respond(verdict, registry),
            }
            lines.append(json.dumps(out, ensure_ascii=False))
        self._write(Path(options["out"]), lines)
        self.stdout.write(
            f"{len(records)} questions judged ({judge.version}): {matched} matched a blocker, "
            f"{len(records) - matched} irrelevant -> {options['out']}"
        )

    def _read(self, path: Path, registries: dict[str, list[RegistryBlocker]]) -> list[dict]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--questions {path}: {exc}") from exc
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"line {number}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise CommandError(f"line {number}: not a JSON object")
            task, question = record.get("task"), record.get("question")
            if not isinstance(task, str) or not task:
                raise CommandError(f"line {number}: no task")
            if not isinstance(question, str):
                raise CommandError(f"line {number}: no question (a string)")
            if task not in registries:
                raise CommandError(f"line {number}: unknown task {task!r} (no {task}.json)")
            records.append(record)
        return records

    def _write(self, path: Path, lines: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in lines))
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
