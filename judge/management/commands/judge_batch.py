"""Judge a file of questions against HiL-Bench registries, offline, and measure the judge.

    python manage.py judge_batch --registries DIR --questions FILE.jsonl --out FILE.jsonl \\
        [--judge embedded|llm|ensemble] [--report FILE.json]

``DIR/<task>.json`` are registry files (``{"blockers": [...]}``), with the task's own text
in ``DIR/<task>.txt`` where there is one (the judge reads it to decide relevance: an SQL
task's question and business information, a SWE task's problem statement, requirements and
interface); each input line is
``{"task": ..., "question": ...}``, optionally with ``domain`` (``sql``/``swe``; otherwise
read from the registry's blocker types) and ``expected`` (the blocker the question targets,
or null). Each output line is the input line plus ``predicted`` (the matched blocker's id, or
null) and ``response`` (its resolution verbatim, or ``irrelevant question``); with the LLM
judge (alone or in the ensemble), also ``reason``, the verdict's reason as the ask_human call
log keeps it: which rejection rule refused the question, no match, a match below the
confidence threshold, or the match (``judge.llm``).

When lines carry ``expected``, the command reports the judge on them — precision, recall,
overall and per domain, and how recall spreads over tasks (``judge.training.counts``) — on
standard output and, with ``--report``, as JSON: how a lead measures a judge change on their
own labelled questions before switching; the LLM judge's outcomes (matches, each rejection
rule, no match, low confidence) are counted beside it. Every line is checked before any is
judged: a bad line stops the command naming its line number, and nothing is written; so does
a judge that cannot decide a line (an LLM endpoint that is down or keeps answering malformed
output), never an "irrelevant" in its place.
"""

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from hilbench_annotate.toolkit.jsontext import json_loads
from judge.base import JudgeError, RegistryBlocker, respond
from judge.embedded import load_registry, registry_domain
from judge.llm import outcome_of
from judge.measures import Outcome, counts, recall_distribution
from judge.services import get_judge

JUDGES = ("embedded", "llm", "ensemble")


class Command(BaseCommand):
    help = "Judge a JSONL file of {task, question} lines against HiL-Bench blocker registries."

    def add_arguments(self, parser):
        parser.add_argument("--registries", required=True, type=Path)
        parser.add_argument("--questions", required=True, type=Path)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--judge", default="embedded", choices=JUDGES)
        parser.add_argument("--report", type=Path, help="write the measurement here (JSON)")

    def handle(self, *args, **options):
        registries_dir = Path(options["registries"])
        if not registries_dir.is_dir():
            raise CommandError(f"--registries {registries_dir} is not a directory")
        registries: dict[str, list[RegistryBlocker]] = {}
        contexts: dict[str, str] = {}
        for path in sorted(registries_dir.glob("*.json")):
            try:
                registries[path.stem] = load_registry(path)
                text = path.with_suffix(".txt")
                contexts[path.stem] = text.read_text(encoding="utf-8") if text.is_file() else ""
            except (OSError, ValueError) as exc:
                raise CommandError(f"registry {path.name}: {exc}") from exc
        if not registries:
            raise CommandError(f"no <task>.json registry in {registries_dir}")

        records = self._read(Path(options["questions"]), registries)
        try:
            judge = get_judge(options["judge"])
        except JudgeError as exc:
            raise CommandError(str(exc)) from exc
        with_reason = options["judge"] in ("llm", "ensemble")
        lines, outcomes = [], []
        llm_outcomes: Counter = Counter()
        for number, record in records:
            registry = registries[record["task"]]
            domain = record.get("domain") or registry_domain(registry)
            try:
                verdict = judge.judge(
                    record["question"], registry, domain=domain, context=contexts[record["task"]]
                )
            except JudgeError as exc:
                raise CommandError(f"line {number}: the judge could not decide: {exc}") from exc
            out = {
                **record,
                "predicted": verdict.blocker_id,
                "response": respond(verdict, registry),
            }
            if with_reason:
                out["reason"] = verdict.reason
            if options["judge"] == "llm":
                llm_outcomes[outcome_of(verdict.reason) or "other"] += 1
            lines.append(json.dumps(out, ensure_ascii=False))
            if "expected" in record:
                outcomes.append(
                    Outcome(domain, record["task"], record["expected"], verdict.blocker_id)
                )
        self._write(Path(options["out"]), lines)
        matched = sum(json_loads(line)["predicted"] is not None for line in lines)
        self.stdout.write(
            f"{len(records)} questions judged ({judge.long_version}): "
            f"{matched} matched a blocker, "
            f"{len(records) - matched} irrelevant -> {options['out']}"
        )
        if llm_outcomes:
            self.stdout.write(
                "LLM judge outcomes: "
                + ", ".join(f"{name} {n}" for name, n in sorted(llm_outcomes.items()))
            )
        if outcomes:
            self._report(outcomes, judge.version, options.get("report"), llm_outcomes)

    def _report(
        self, outcomes: list[Outcome], version: str, path: Path | None, llm_outcomes: Counter
    ) -> None:
        figures = counts(outcomes)
        figures["recall_distribution"] = recall_distribution(figures["task_recall"])
        figures["judge"] = version
        if llm_outcomes:
            figures["llm_outcomes"] = dict(sorted(llm_outcomes.items()))
        for domain in ("all", "sql", "swe"):
            f = figures[domain]
            if f["positives"] or f["negatives"]:
                self.stdout.write(
                    f"{domain}: precision {f['precision']:.3f}, recall {f['recall']:.3f} "
                    f"({f['correct']} correct of {f['predicted']} matched, "
                    f"{f['positives']} targeting a blocker, {f['negatives']} not)"
                )
        spread = figures["recall_distribution"]
        if spread:
            self.stdout.write(
                f"recall per task over {spread['tasks']} tasks: min {spread['min']:.2f}, "
                f"median {spread['median']:.2f}, {spread['below_0.85']:.0%} below 0.85"
            )
        if path:
            Path(path).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")

    def _read(
        self, path: Path, registries: dict[str, list[RegistryBlocker]]
    ) -> list[tuple[int, dict]]:
        """The file's records, each with its line number."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--questions {path}: {exc}") from exc
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json_loads(line)
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
            expected = record.get("expected")
            if expected is not None and expected not in {b.id for b in registries[task]}:
                raise CommandError(f"line {number}: {task} has no blocker {expected!r}")
            if record.get("domain") not in (None, "sql", "swe"):
                raise CommandError(f"line {number}: domain is sql or swe")
            records.append((number, record))
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
