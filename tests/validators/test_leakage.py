"""Commit-history leakage: the sanitized repository passes, and each kind of leak is caught.

Every test builds real repositories in tmp_path with real git commands (fixed dates, no user
or system configuration). The upstream repository has history before the base commit (which
still holds the line the setup patch removes) and after it (the upstream fix, i.e. the gold
patch's lines), like a real SWE task. Each leak is planted in a freshly sanitized copy, so the
checks that fail are exactly the ones the leak concerns.
"""

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from validators.leakage import RULES, check_leakage, forbidden_texts, sanitize
from validators.results import FAILED, PASSED

DAY = 86_400
T0 = 1_700_000_000

APP_V1 = '''"""Payment client."""

TIMEOUT_SECONDS = 30  # agreed with the payments team on 2023-11-02


def charge(amount):
    return amount
'''
APP_V2 = APP_V1.replace('"""Payment client."""', '"""Payment client for the shop."""')
APP_BASE = (
    APP_V2
    + """

def refund(amount):
    return -amount
"""
)
REMOVED_LINE = "TIMEOUT_SECONDS = 30  # agreed with the payments team on 2023-11-02"
GOLD_LINE = 'raise ValueError("charge amount must be positive")'
APP_GOLD = APP_BASE.replace(
    "def charge(amount):\n",
    f"def charge(amount):\n    if amount <= 0:\n        {GOLD_LINE}\n",
)
RESOLUTION = ("blocker-1", "The timeout is thirty seconds, as agreed with the payments team")


def _env(date: int | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env |= {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
    return env


def git(cwd: Path, *args: str, date: int | None = None, input: str | None = None) -> str:
    command = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    command += ["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args]
    result = subprocess.run(
        command, cwd=cwd, env=_env(date), input=input, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout.strip()


def quiet(cwd: Path, *args: str, **kwargs) -> str:
    """git without reflog writes: plants exactly one leak, not a reflog entry besides."""
    return git(cwd, "-c", "core.logAllRefUpdates=false", *args, **kwargs)


def commit(work: Path, files: dict[str, str], message: str, date: int) -> str:
    for name, text in files.items():
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", message, date=date)
    return git(work, "rev-parse", "HEAD")


def diff_for(work: Path, name: str, text: str) -> str:
    """The patch turning the committed ``name`` into ``text`` (work tree restored after)."""
    (work / name).write_text(text)
    patch = git(work, "diff", "--", name) + "\n"
    git(work, "checkout", "--", name)
    return patch


@dataclass
class Task:
    work: Path
    mirror: Path
    base: str
    setup_patch: str
    gold_patch: str
    forbidden: list[tuple[str, str]]


@pytest.fixture
def task(tmp_path) -> Task:
    work = tmp_path / "upstream"
    work.mkdir()
    git(work, "init", "-q", "--initial-branch=main")
    commit(work, {"app.py": APP_V1, "README.md": "# payments\n"}, "Add client", T0)
    commit(work, {"app.py": APP_V2}, "Describe client", T0 + DAY)
    base = commit(work, {"app.py": APP_BASE}, "Add refunds", T0 + 2 * DAY)
    setup_patch = diff_for(work, "app.py", APP_BASE.replace(REMOVED_LINE + "\n", ""))
    gold_patch = diff_for(work, "app.py", APP_GOLD)
    commit(work, {"app.py": APP_GOLD}, "Refuse non-positive charges", T0 + 3 * DAY)
    commit(work, {"README.md": "# payments\n\nSee app.py.\n"}, "Docs", T0 + 4 * DAY)
    git(work, "tag", "v1.0", base)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(work), str(mirror))
    forbidden = forbidden_texts(
        gold_patch=gold_patch, setup_patch=setup_patch, resolutions=[RESOLUTION]
    )
    return Task(work, mirror, base, setup_patch, gold_patch, forbidden)


def shipped(task: Task, dest: Path) -> Path:
    return sanitize(
        mirror=task.mirror, base_commit=task.base, setup_patch=task.setup_patch, dest=dest
    )


def snapshot(mirror: Path) -> dict:
    """Every file of the mirror with its digest, plus refs and object listing."""
    files = {
        path.relative_to(mirror).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(mirror.rglob("*"))
        if path.is_file()
    }
    refs = git(mirror, "for-each-ref", "--format=%(refname) %(objectname)")
    objects = git(mirror, "cat-file", "--batch-all-objects", "--batch-check")
    return {"files": files, "refs": refs, "objects": objects}


def outcomes(results) -> dict[str, str]:
    assert [result.name for result in results] == list(RULES)
    return {result.name: result.outcome for result in results}


def failed(results) -> set[str]:
    return {result.name for result in results if result.outcome == FAILED}


def by_name(results, name):
    return next(result for result in results if result.name == name)


# --- sanitize ---------------------------------------------------------------------------------


def test_sanitized_repository_passes_every_check_and_mirror_is_untouched(task, tmp_path):
    before = snapshot(task.mirror)
    dest = shipped(task, tmp_path / "shipped")
    assert snapshot(task.mirror) == before

    results = check_leakage(repo=dest, base_commit=task.base, forbidden=task.forbidden)
    assert outcomes(results) == dict.fromkeys(RULES, PASSED), [r.message for r in results]
    text = by_name(results, "no_forbidden_text")
    assert text.details["texts_searched"] == len(task.forbidden) >= 3
    assert (
        text.details["objects_scanned"]
        == by_name(results, "no_unreachable_objects").details["reachable_from_head"]
    )

    # One orphan commit on main with the base tree minus the removed line, fixed identity/date.
    assert git(dest, "rev-list", "--all", "--count") == "1"
    assert git(dest, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(dest, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ct|%at") == (
        f"HiL-Bench <hilbench@localhost>|HiL-Bench <hilbench@localhost>|{T0 + 2 * DAY}|"
        f"{T0 + 2 * DAY}"
    )
    assert (dest / "app.py").read_text() == APP_BASE.replace(REMOVED_LINE + "\n", "")
    assert (dest / "README.md").read_text() == "# payments\n"
    assert git(dest, "status", "--porcelain") == ""
    assert not (dest / ".git" / "logs").exists()
    assert git(dest, "count-objects", "-v").splitlines()[0] == "count: 0"  # no loose objects
    assert git(dest, "remote") == ""


def test_sanitize_is_deterministic_and_refuses_a_used_destination(task, tmp_path):
    first = shipped(task, tmp_path / "one")
    second = shipped(task, tmp_path / "two")
    assert git(first, "rev-parse", "HEAD") == git(second, "rev-parse", "HEAD")
    with pytest.raises(DomainError, match="empty directory"):
        shipped(task, first)


def test_sanitize_refuses_a_setup_patch_that_does_not_apply(task, tmp_path):
    with pytest.raises(DomainError, match="does not apply"):
        sanitize(
            mirror=task.mirror,
            base_commit=task.base,
            setup_patch=task.setup_patch.replace("2023-11-02", "2023-11-03"),
            dest=tmp_path / "shipped",
        )
    assert not (tmp_path / "shipped").exists()  # nothing half-built is left behind


def test_the_mirror_itself_leaks(task):
    """The unsanitized upstream history is exactly what must not ship (bare repo works too).

    Its HEAD is upstream's tip, whose tree holds the gold lines: text its HEAD shows is not
    distinctive, so the leak is reported as what it is — commits newer than the base."""
    results = check_leakage(repo=task.mirror, base_commit=task.base, forbidden=task.forbidden)
    assert failed(results) == {"no_newer_commits", "only_head_refs", "no_remote"}
    newer = by_name(results, "no_newer_commits")
    assert "2 commit(s)" in newer.message
    assert 'branch "main" points at a commit newer than the base commit' in newer.message
    text = by_name(results, "no_forbidden_text")
    assert GOLD_LINE in text.details["texts_in_head_tree"]
    assert by_name(results, "clean_work_tree").outcome == "skipped"  # bare
    assert 'tag "v1.0"' in by_name(results, "only_head_refs").message


# --- one leak per repository --------------------------------------------------------------------

BASE_DATE = T0 + 2 * DAY
LATER = T0 + 10 * DAY


def _later_commit(repo: Path) -> str:
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    return git(repo, "commit-tree", tree, "-p", "HEAD", "-m", "later work", date=LATER)


def leak_later_branch(repo: Path, task: Task) -> Path:
    quiet(repo, "update-ref", "refs/heads/feature", _later_commit(repo))
    return repo


def leak_newer_tag(repo: Path, task: Task) -> Path:
    quiet(repo, "update-ref", "refs/tags/v2", _later_commit(repo))
    return repo


def leak_tag(repo: Path, task: Task) -> Path:
    quiet(repo, "tag", "v1", "HEAD")
    return repo


def leak_remote_ref(repo: Path, task: Task) -> Path:
    quiet(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    return repo


def leak_remote_config(repo: Path, task: Task) -> Path:
    quiet(repo, "remote", "add", "origin", "https://example.com/payments.git")
    return repo


def leak_stash(repo: Path, task: Task) -> Path:
    (repo / "README.md").write_text("# payments\n\nwork in progress\n")
    git(repo, "stash", "-q", date=BASE_DATE)
    return repo


def leak_reflog(repo: Path, task: Task) -> Path:
    update = ["update-ref", "--create-reflog", "-m", "reset: moving to HEAD"]
    git(repo, "-c", "core.logAllRefUpdates=always", *update, "refs/heads/main", "HEAD")
    return repo


def leak_dangling_gold_blob(repo: Path, task: Task) -> Path:
    quiet(repo, "hash-object", "-w", "--stdin", input=f"    {GOLD_LINE}\n")
    return repo


def leak_reflowed_gold_blob(repo: Path, task: Task) -> Path:
    """Whitespace does not hide a leak: matching is on whitespace-collapsed text."""
    reflowed = GOLD_LINE.replace("amount must", "amount\n\t\tmust")
    quiet(repo, "hash-object", "-w", "--stdin", input=f"if x:\n{reflowed}\n")
    return repo


def leak_note(repo: Path, task: Task) -> Path:
    quiet(repo, "notes", "add", "-m", "Checked with the payments team", "HEAD", date=BASE_DATE)
    return repo


def leak_replace_ref(repo: Path, task: Task) -> Path:
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    other = git(repo, "commit-tree", tree, "-m", "replacement", date=BASE_DATE)
    quiet(repo, "replace", "HEAD", other)
    return repo


def leak_history_as_is(repo: Path, task: Task) -> Path:
    """The upstream history up to the base commit, with the setup patch committed on top."""
    naive = repo.parent / "naive"
    git(repo.parent, "init", "-q", "--initial-branch=main", str(naive))
    fetch = ["fetch", "-q", "--no-tags", "--update-head-ok", "--no-write-fetch-head"]
    quiet(naive, *fetch, str(task.mirror), f"{task.base}:refs/heads/main")
    quiet(naive, "read-tree", "-u", "--reset", "HEAD")
    quiet(naive, "apply", "--index", input=task.setup_patch)
    quiet(naive, "commit", "-q", "-m", "Set up task", date=BASE_DATE)
    return naive


def leak_future_commit_on_head(repo: Path, task: Task) -> Path:
    later = _later_commit(repo)
    quiet(repo, "update-ref", "refs/heads/main", later)
    return repo


def leak_packed_unreachable_gold_blob(repo: Path, task: Task) -> Path:
    quiet(repo, "hash-object", "-w", "--stdin", input=f"    {GOLD_LINE}\n")
    quiet(repo, "repack", "-a", "-d", "-q", "--keep-unreachable")
    assert git(repo, "count-objects", "-v").splitlines()[0] == "count: 0"  # all packed
    return repo


def leak_untracked_gold_file(repo: Path, task: Task) -> Path:
    (repo / "fix_notes.py").write_text(f"# from the upstream fix\n{GOLD_LINE}\n")
    return repo


def leak_resolution_in_commit_editmsg(repo: Path, task: Task) -> Path:
    (repo / ".git" / "COMMIT_EDITMSG").write_text(f"Set up task\n\n{RESOLUTION[1]}.\n")
    return repo


def leak_resolution_in_head_tree(repo: Path, task: Task) -> Path:
    """The answer in plain sight: the shipped README states the resolution."""
    (repo / "README.md").write_text(f"# payments\n\n{RESOLUTION[1]}.\n")
    quiet(repo, "add", "README.md")
    tree = git(repo, "write-tree")
    commit = git(repo, "commit-tree", tree, "-m", "Initial commit", date=BASE_DATE)
    quiet(repo, "update-ref", "refs/heads/main", commit)
    quiet(repo, "gc", "-q", "--prune=now")  # the former commit goes: only the README leaks
    return repo


def leak_lower_cased_resolution_in_commit_editmsg(repo: Path, task: Task) -> Path:
    (repo / ".git" / "COMMIT_EDITMSG").write_text(f"set up task\n\n{RESOLUTION[1].lower()}\n")
    return repo


def leak_resolution_in_a_stray_file_under_objects(repo: Path, task: Task) -> Path:
    (repo / ".git" / "objects" / "info" / "notes.txt").write_text(f"{RESOLUTION[1]}.\n")
    return repo


def leak_gold_line_in_an_alternates_like_file(repo: Path, task: Task) -> Path:
    """objects/info/http-alternates is read by dumb-HTTP clients only: git itself ignores it."""
    (repo / ".git" / "objects" / "info" / "http-alternates").write_text(f"    {GOLD_LINE}\n")
    return repo


LEAKS = {
    "resolution in HEAD's tree": (
        leak_resolution_in_head_tree,
        {"no_forbidden_text"},
        'at "README.md" in HEAD\'s tree',
    ),
    "lower-cased resolution in COMMIT_EDITMSG": (
        leak_lower_cased_resolution_in_commit_editmsg,
        {"no_forbidden_text"},
        ".git/COMMIT_EDITMSG",
    ),
    "resolution in a stray file under objects/": (
        leak_resolution_in_a_stray_file_under_objects,
        {"no_forbidden_text"},
        ".git/objects/info/notes.txt",
    ),
    "gold line in an alternates-like file under objects/": (
        leak_gold_line_in_an_alternates_like_file,
        {"no_forbidden_text"},
        ".git/objects/info/http-alternates",
    ),
    # name: (plant the leak, rules expected to fail, text every failing message must hold)
    "future commit on HEAD": (leak_future_commit_on_head, {"no_newer_commits"}, "newer"),
    "packed unreachable object": (
        leak_packed_unreachable_gold_blob,
        {"no_unreachable_objects", "no_forbidden_text"},
        "blob",
    ),
    "untracked gold file in the work tree": (
        leak_untracked_gold_file,
        {"clean_work_tree", "no_forbidden_text"},
        "fix_notes.py",
    ),
    "resolution in COMMIT_EDITMSG": (
        leak_resolution_in_commit_editmsg,
        {"no_forbidden_text"},
        ".git/COMMIT_EDITMSG",
    ),
    "later commit on another branch": (
        leak_later_branch,
        {"only_head_refs", "no_newer_commits", "no_unreachable_objects"},
        'branch "feature"',
    ),
    "tag at a newer commit": (
        leak_newer_tag,
        {"only_head_refs", "no_newer_commits", "no_unreachable_objects"},
        "",
    ),
    "tag": (leak_tag, {"only_head_refs"}, 'tag "v1"'),
    "remote-tracking ref": (leak_remote_ref, {"no_remote"}, "refs/remotes/origin/main"),
    "configured remote": (leak_remote_config, {"no_remote"}, 'remote "origin"'),
    "stash": (leak_stash, {"only_head_refs", "no_reflog", "no_unreachable_objects"}, ""),
    "reflog entry": (leak_reflog, {"no_reflog"}, "HEAD"),
    "dangling blob with a gold line": (
        leak_dangling_gold_blob,
        {"no_unreachable_objects", "no_forbidden_text"},
        "blob",
    ),
    "reflowed gold line": (
        leak_reflowed_gold_blob,
        {"no_unreachable_objects", "no_forbidden_text"},
        "blob",
    ),
    "note": (leak_note, {"only_head_refs", "no_unreachable_objects"}, ""),
    "history shipped as is": (leak_history_as_is, {"no_forbidden_text"}, "app.py"),
    "replace ref": (leak_replace_ref, {"only_head_refs", "no_unreachable_objects"}, ""),
}


@pytest.mark.parametrize("leak", list(LEAKS))
def test_each_leak_fails_exactly_its_rules(task, tmp_path, leak):
    plant, expected, named = LEAKS[leak]
    repo = plant(shipped(task, tmp_path / "shipped"), task)
    results = check_leakage(
        repo=repo, base_commit=task.base, forbidden=task.forbidden, base_date=BASE_DATE
    )
    assert failed(results) == expected, [(r.name, r.outcome, r.message) for r in results]
    assert all(r.outcome == PASSED for r in results if r.name not in expected)
    for result in results:
        if result.name in expected:
            assert named in result.message, result.message


def test_leak_messages_name_what_leaks(task, tmp_path):
    def check(plant):
        repo = plant(shipped(task, tmp_path / plant.__name__), task)
        results = check_leakage(repo=repo, base_commit=task.base, forbidden=task.forbidden)
        return {result.name: result.message for result in results}

    messages = check(leak_newer_tag)
    assert 'tag "v2" points at a commit newer than the HEAD' in messages["no_newer_commits"]
    assert 'tag "v2"' in messages["only_head_refs"]

    messages = check(leak_stash)
    assert "the stash (refs/stash)" in messages["only_head_refs"]
    assert "refs/stash" in messages["no_reflog"]

    messages = check(leak_note)
    assert 'notes ref "commits"' in messages["only_head_refs"]

    messages = check(leak_replace_ref)
    assert "replace ref" in messages["only_head_refs"]

    messages = check(leak_dangling_gold_blob)
    assert "gold patch added line" in messages["no_forbidden_text"]
    assert "not reachable from HEAD" in messages["no_forbidden_text"]
    assert "text the setup patch removed" not in messages["no_forbidden_text"]

    messages = check(leak_history_as_is)
    assert "text the setup patch removed" in messages["no_forbidden_text"]
    assert 'at "app.py" in HEAD\'s history' in messages["no_forbidden_text"]
    assert "gold patch added line" not in messages["no_forbidden_text"]


def test_lines_the_agent_already_sees_are_no_leak_anywhere(task, tmp_path):
    """A clean repository must pass even when the gold patch adds lines that the shipped tree
    already holds (``from __future__ import annotations``), that history held before, or that
    only occur inside a longer line (``rule.endpoint,`` in ``row.format(rule.endpoint, …)``)."""
    work = tmp_path / "clean"
    work.mkdir()
    git(work, "init", "-q", "--initial-branch=main")
    common = "from __future__ import annotations\n\n\ndef route(rule):\n    return rule\n"
    commit(
        work,
        {"views.py": common, "old.py": "def show(row, rule):\n    row.format(rule.endpoint, 2)\n"},
        "v1",
        T0,
    )
    base = commit(work, {"old.py": "# gone\n"}, "v2", T0 + DAY)
    mirror = tmp_path / "clean.git"
    git(tmp_path, "clone", "-q", "--mirror", str(work), str(mirror))
    gold = "\n".join(
        [
            "+++ b/api.py",
            "+from __future__ import annotations",
            "+        rule.endpoint,",
            "+    return format_endpoint(rule.endpoint, options)",
        ]
    )
    forbidden = forbidden_texts(gold_patch=gold, setup_patch="", resolutions=[])
    # The naive shipping of history: old.py's former content is still in the store.
    naive = tmp_path / "naive"
    git(tmp_path, "clone", "-q", str(mirror), str(naive))
    quiet(naive, "remote", "remove", "origin")
    results = check_leakage(repo=naive, base_commit=base, forbidden=forbidden)
    text = by_name(results, "no_forbidden_text")
    assert text.outcome == PASSED, text.message
    assert "from __future__ import annotations" in text.details["texts_in_head_tree"]
    # The same check does fire on a gold line that is in history as a line of its own.
    planted = [*forbidden, ("gold patch added line", "row.format(rule.endpoint, 2)")]
    text = by_name(
        check_leakage(repo=naive, base_commit=base, forbidden=planted), "no_forbidden_text"
    )
    assert text.outcome == FAILED and 'at "old.py" in HEAD\'s history' in text.message


def test_a_base_commit_present_in_the_repository_dates_newer(task):
    """With the base commit in the store its own date is the reference, not HEAD's."""
    results = check_leakage(repo=task.work, base_commit=task.base)
    newer = by_name(results, "no_newer_commits")
    assert newer.outcome == FAILED
    assert f"base commit {task.base[:12]}" in newer.message
    assert len(newer.details["newer"]) == 2


def test_short_texts_are_skipped_and_said_so(task, tmp_path):
    repo = shipped(task, tmp_path / "shipped")
    forbidden = [("resolution of blocker-2", "  30   s "), ("resolution of blocker-3", "refund")]
    result = by_name(check_leakage(repo=repo, forbidden=forbidden), "no_forbidden_text")
    assert result.outcome == PASSED
    assert "2 text(s) shorter than 12 characters were not searched" in result.message
    assert result.details["texts_skipped_too_short"] == [
        {"label": "resolution of blocker-2", "text": "30 s"},
        {"label": "resolution of blocker-3", "text": "refund"},
    ]


# --- forbidden_texts ----------------------------------------------------------------------------

GOLD = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,3 +1,9 @@
 def charge(amount):
+    if amount <= 0:
+        raise ValueError("charge amount must be positive")
+    } else {
+        return None
+    pass
+# ----------------------------------
+    return apply_discount(amount, rate)
     return amount
"""
SETUP = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,4 +1,2 @@
-TIMEOUT_SECONDS = 30  # agreed with the payments team
-    return apply_discount(amount, rate)
-    else:
 def charge(amount):
"""


def test_forbidden_texts_lists_gold_additions_resolutions_and_setup_removals():
    texts = forbidden_texts(
        gold_patch=GOLD,
        setup_patch=SETUP,
        resolutions=[("blocker-1", "  Thirty seconds, per the payments team.\n"), ("b2", "30 s")],
    )
    assert texts == [
        ("gold patch added line", "if amount <= 0:"),
        ("gold patch added line", 'raise ValueError("charge amount must be positive")'),
        ("gold patch added line", "return apply_discount(amount, rate)"),
        ("resolution of blocker-1", "Thirty seconds, per the payments team."),
        ("resolution of b2", "30 s"),
        ("text the setup patch removed", "TIMEOUT_SECONDS = 30  # agreed with the payments team"),
    ]


def test_forbidden_texts_skips_headers_and_trivial_lines_and_deduplicates():
    texts = forbidden_texts(
        gold_patch="+++ b/a_long_file_name.py\n+    return None  \n+} else {\n+x = 1\n",
        setup_patch="--- a/a_long_file_name.py\n-while True: pass\n-    } catch {\n",
        resolutions=[],
    )
    assert texts == []
    same = "+    value = compute_the_total(order)\n"
    texts = forbidden_texts(gold_patch=same, setup_patch=same.replace("+", "-"), resolutions=[])
    assert texts == [("gold patch added line", "value = compute_the_total(order)")]
