"""Reading task repositories from git objects, and checking / building setup patches.

Every test works on a bare mirror made with ``git clone --mirror`` from a small repository
built in tmp_path, like the app's repository store. Tests that run a check also prove that
the mirror is byte-for-byte unchanged afterwards: a later "history leakage" check inspects
the mirror, so the authoring tools may never write an object or a ref into it.
"""

import hashlib
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit import gitrepo
from hilbench_annotate.toolkit import patches as patches_module
from hilbench_annotate.toolkit.gitrepo import file_exists, list_tree, read_file, symlink_paths
from hilbench_annotate.toolkit.patches import (
    PatchFile,
    PatchRefused,
    check_applies,
    diff_lines,
    file_after,
    file_diff,
    parse_patch,
    path_problems,
    replace_file_diff,
    split_patch,
)

APP_PY = "".join(f"line {n}\n" for n in range(1, 21))
APP_PY_TIP = APP_PY.replace("line 20\n", "line 20 changed after the base commit\n")


def _git(cwd: Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")} | {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout


class Repo:
    """The source work tree, its bare mirror, and the base commit tasks start from."""

    def __init__(self, work: Path, mirror: Path, base: str, tip: str):
        self.work, self.mirror, self.base, self.tip = work, mirror, base, tip


@pytest.fixture
def repo(tmp_path) -> Repo:
    """Files, a subdirectory, symbolic links ``link -> /etc`` and ``docs -> ../outside``,
    three commits; the base commit is the middle one so reads must not use the tip."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("# Demo\n\nA small project.\n")
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text(APP_PY.replace("line 5\n", "line five (old)\n"))
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "first")

    (work / "src" / "app.py").write_text(APP_PY)
    (work / "src" / "util.py").write_text("def helper():\n    return 1\n")
    (work / "src" / "nested").mkdir()
    (work / "src" / "nested" / "deep.txt").write_text("deep\n")
    (work / "old_name.txt").write_text("".join(f"rename me {n}\n" for n in range(10)))
    (work / "remove_me.txt").write_text("bye\n")
    (work / "data.bin").write_bytes(b"\x00\x01\x02binary\xff")
    (work / "nul.dat").write_bytes(b"valid utf-8 \x00 but binary\n")
    (work / "big.txt").write_text("x" * 5000 + "\n")
    (work / "link").symlink_to("/etc")
    (work / "docs").symlink_to("../outside")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "second")
    base = _git(work, "rev-parse", "HEAD").strip()

    (work / "src" / "app.py").write_text(APP_PY_TIP)
    _git(work, "commit", "-q", "-am", "third")
    tip = _git(work, "rev-parse", "HEAD").strip()

    mirror = tmp_path / "mirror.git"
    _git(tmp_path, "clone", "-q", "--mirror", str(work), str(mirror))
    return Repo(work, mirror, base, tip)


def _snapshot(mirror: Path) -> dict:
    """Everything a history-leakage check could look at: objects, refs, every file's bytes."""
    files = {}
    for path in sorted(mirror.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(mirror))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "count-objects": _git(mirror, "count-objects", "-v"),
        "refs": _git(mirror, "for-each-ref"),
        "objects": sorted(p for p in files if p.startswith("objects/")),
        "files": files,
    }


@contextmanager
def untouched(mirror: Path):
    """Fail unless the block leaves the mirror exactly as it found it."""
    before = _snapshot(mirror)
    yield
    assert _snapshot(mirror) == before


# --- reading the tree ------------------------------------------------------------------------


def test_list_tree_root_lists_directories_first_then_files_with_kinds(repo):
    entries = list_tree(repo.mirror, repo.base)

    assert [e.name for e in entries] == [
        "src",
        "README.md",
        "big.txt",
        "data.bin",
        "docs",
        "link",
        "nul.dat",
        "old_name.txt",
        "remove_me.txt",
    ]
    by_name = {e.name: e for e in entries}
    assert by_name["src"].kind == "tree" and by_name["src"].size is None
    assert by_name["link"].kind == "link" and by_name["link"].mode == "120000"
    assert by_name["docs"].kind == "link"
    assert by_name["README.md"].kind == "blob"
    assert by_name["README.md"].size == len("# Demo\n\nA small project.\n")
    assert by_name["README.md"].path == "README.md"


def test_list_tree_subdirectory_gives_full_paths(repo):
    entries = list_tree(repo.mirror, repo.base, "src")

    assert [(e.name, e.path, e.kind) for e in entries] == [
        ("nested", "src/nested", "tree"),
        ("app.py", "src/app.py", "blob"),
        ("util.py", "src/util.py", "blob"),
    ]
    assert [e.path for e in list_tree(repo.mirror, repo.base, "src/nested/")] == [
        "src/nested/deep.txt"
    ]


def test_list_tree_refuses_unknown_paths_files_and_symlinked_directories(repo):
    with pytest.raises(DomainError, match="no 'nope'"):
        list_tree(repo.mirror, repo.base, "nope")
    with pytest.raises(DomainError, match="not a directory"):
        list_tree(repo.mirror, repo.base, "README.md")
    # The tree is read from git objects: a symlink to /etc is not a directory to browse.
    with pytest.raises(DomainError, match="not a directory"):
        list_tree(repo.mirror, repo.base, "link")
    with pytest.raises(DomainError, match="no 'link/passwd'"):
        list_tree(repo.mirror, repo.base, "link/passwd")


def test_read_file_checks_the_size_before_loading_the_blob(repo, monkeypatch):
    """A huge blob must be refused from its size in the tree, never read into memory."""
    calls = []
    original = gitrepo.run_git

    def recording(repo_path, args, **kwargs):
        calls.append(list(args))
        return original(repo_path, args, **kwargs)

    monkeypatch.setattr(gitrepo, "run_git", recording)
    with pytest.raises(DomainError, match="too big"):
        read_file(repo.mirror, repo.base, "big.txt", max_bytes=1000)
    assert calls and not any(args[0] == "cat-file" for args in calls)


def test_read_file_reads_the_base_commit_not_the_tip(repo):
    assert read_file(repo.mirror, repo.base, "src/app.py") == APP_PY
    assert read_file(repo.mirror, repo.tip, "src/app.py") == APP_PY_TIP


def test_read_file_refuses_binary_big_symlinks_directories_and_missing_files(repo):
    with pytest.raises(DomainError, match="binary file"):
        read_file(repo.mirror, repo.base, "data.bin")
    with pytest.raises(DomainError, match="binary file"):
        read_file(repo.mirror, repo.base, "nul.dat")
    with pytest.raises(DomainError, match="too big"):
        read_file(repo.mirror, repo.base, "big.txt", max_bytes=1000)
    assert len(read_file(repo.mirror, repo.base, "big.txt", max_bytes=10_000)) == 5001
    with pytest.raises(DomainError, match="symbolic link"):
        read_file(repo.mirror, repo.base, "link")
    with pytest.raises(DomainError, match="directory"):
        read_file(repo.mirror, repo.base, "src")
    with pytest.raises(DomainError, match="no file"):
        read_file(repo.mirror, repo.base, "link/passwd")


@pytest.mark.parametrize("bad", ["../outside.txt", "src/../README.md", "/etc/passwd", "a//b"])
def test_paths_leaving_the_repository_are_refused(repo, bad):
    with pytest.raises(DomainError):
        list_tree(repo.mirror, repo.base, bad)
    with pytest.raises(DomainError):
        read_file(repo.mirror, repo.base, bad)
    with pytest.raises(DomainError):
        file_exists(repo.mirror, repo.base, bad)


def test_commit_names_that_look_like_options_are_refused(repo):
    with pytest.raises(DomainError, match="not a commit"):
        read_file(repo.mirror, "--output=/tmp/x", "README.md")
    with pytest.raises(DomainError, match="not in the repository"):
        read_file(repo.mirror, "0" * 40, "README.md")


def test_symlink_paths_and_file_exists(repo):
    assert symlink_paths(repo.mirror, repo.base) == {"link", "docs"}
    assert file_exists(repo.mirror, repo.base, "src/util.py")
    assert file_exists(repo.mirror, repo.base, "link")
    assert not file_exists(repo.mirror, repo.base, "src")
    assert not file_exists(repo.mirror, repo.base, "src/missing.py")
    assert not file_exists(repo.mirror, repo.base, "link/passwd")


# --- parsing ---------------------------------------------------------------------------------


def test_parse_patch_reads_a_real_git_diff(repo):
    work = repo.work
    _git(work, "checkout", "-q", "-b", "changes", repo.base)
    (work / "src" / "util.py").write_text("def helper():\n    return 2\n")
    (work / "new file.txt").write_text("spaces\n")
    (work / "naïve.txt").write_text("quoted\n")
    (work / "remove_me.txt").unlink()
    _git(work, "mv", "old_name.txt", "src/new_name.txt")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "changes")
    diff = _git(work, "diff", "-M", repo.base, "HEAD")

    files = {f.path: f for f in parse_patch(diff)}

    util = files["src/util.py"]
    assert (util.old_path, util.new_path, util.is_new, util.is_deleted, util.is_rename) == (
        "src/util.py",
        "src/util.py",
        False,
        False,
        False,
    )
    assert util.new_mode is None and util.old_mode == "100644"  # from the index line
    assert files["new file.txt"].is_new and files["new file.txt"].old_path is None
    assert files["new file.txt"].new_mode == "100644"
    assert '"b/na\\303\\257ve.txt"' in diff  # git quoted it; the parser unquoted it
    assert files["naïve.txt"].is_new
    assert files["remove_me.txt"].is_deleted and files["remove_me.txt"].new_path is None
    renamed = files["src/new_name.txt"]
    assert renamed.is_rename and renamed.old_path == "old_name.txt"
    assert len(files) == 5


def test_parse_patch_reads_a_plain_unified_diff_and_counts_hunk_lines():
    """A removed SQL comment line reads ``--- x``; counting hunk lines keeps it a hunk line."""
    plain = (
        "--- a/schema.sql\t2024-01-01 10:00:00.000000000 +0000\n"
        "+++ b/schema.sql\t2024-01-02 10:00:00.000000000 +0000\n"
        "@@ -1,3 +1,2 @@\n"
        " create table t (id int);\n"
        "--- a comment\n"
        "-+++ b/evil\n"
        "+select 1;\n"
        "--- /dev/null\n"
        "+++ b/added.txt\n"
        "@@ -0,0 +1 @@\n"
        "+hello\n"
    )

    files = parse_patch(plain)

    assert files == [
        PatchFile("schema.sql", "schema.sql", False, False, False, None),
        PatchFile(None, "added.txt", True, False, False, None),
    ]


# --- refused patches -------------------------------------------------------------------------


def _new_file(path: str, body: str = "+x\n", mode: str = "100644") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n{body}"
    )


REFUSED = {
    "dotdot": (
        "--- a/../escape.txt\n+++ b/../escape.txt\n@@ -1 +1 @@\n-a\n+b\n",
        ["../escape.txt", "'..'"],
    ),
    "absolute": (
        "--- a/README.md\n+++ b//etc/passwd\n@@ -1 +1 @@\n-# Demo\n+root::0:0::/:/bin/sh\n",
        ["/etc/passwd", "absolute"],
    ),
    "absolute-plain": (
        "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root:x:0:0\n+root::0:0\n",
        ["/etc/passwd", "absolute"],
    ),
    "git-dir": (_new_file(".git/hooks/post-checkout"), [".git/hooks/post-checkout", ".git"]),
    "symlink-creation": (
        _new_file("evil", "+/etc/passwd\n\\ No newline at end of file\n", mode="120000"),
        ["evil", "symbolic link"],
    ),
    "through-link": (
        "--- a/link/passwd\n+++ b/link/passwd\n@@ -1 +1 @@\n-root:x:0:0\n+root::0:0\n",
        ["link/passwd", "symbolic link 'link'"],
    ),
    "onto-link-plain": (
        "--- a/docs\n+++ b/docs\n@@ -1 +1 @@\n-../outside\n\\ No newline at end of file\n"
        "+/root\n\\ No newline at end of file\n",
        ["docs", "symbolic link"],
    ),
    "through-docs": (_new_file("docs/index.md"), ["docs/index.md", "symbolic link 'docs'"]),
    "onto-link": (
        "diff --git a/link b/link\nindex 1111111..2222222 120000\n--- a/link\n+++ b/link\n"
        "@@ -1 +1 @@\n-/etc\n\\ No newline at end of file\n+/root\n"
        "\\ No newline at end of file\n",
        ["link", "symbolic link"],
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsafe_patches_are_refused_with_the_file_and_the_problem(repo, case):
    patch, fragments = REFUSED[case]
    problems = path_problems(patch, symlinks=symlink_paths(repo.mirror, repo.base))
    assert problems
    assert all(fragment in " ".join(problems) for fragment in fragments)

    with untouched(repo.mirror), pytest.raises(PatchRefused) as refused:
        check_applies(repo.mirror, repo.base, [("setup patch", patch)])

    message = str(refused.value)
    assert "setup patch" in message
    assert all(fragment in message for fragment in fragments), message


def test_a_patch_whose_context_does_not_match_is_refused_with_gits_message(repo):
    stale = (
        "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
        "@@ -4,3 +4,3 @@\n line 4\n-line five (old)\n+line 5 edited\n line 6\n"
    )

    with untouched(repo.mirror), pytest.raises(PatchRefused) as refused:
        check_applies(repo.mirror, repo.base, [("setup patch", stale)])

    message = str(refused.value)
    assert "setup patch does not apply (src/app.py) on the base commit" in message
    assert "patch does not apply" in refused.value.git_message
    assert refused.value.git_message in message
    assert refused.value.path == "src/app.py"


def test_trailing_whitespace_is_refused_unless_the_patch_is_exempt(repo):
    sloppy = file_diff("src/util.py", "def helper():\n    return 1\n", "def helper():  \n    x\n")
    assert sloppy  # a valid diff; only its whitespace is wrong

    with untouched(repo.mirror), pytest.raises(PatchRefused) as refused:
        check_applies(repo.mirror, repo.base, [("setup patch", sloppy)])
    assert "whitespace" in refused.value.git_message
    assert "(src/util.py)" in str(refused.value)

    # Upstream gold patches are applied as-is by the harness; the author cannot fix them.
    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("gold", sloppy)], whitespace_exempt={"gold"})


def test_post_apply_check_catches_symlinks_the_text_check_missed(repo, monkeypatch):
    """Second line of defence: what git staged is inspected, not only our reading of the text."""
    monkeypatch.setattr(patches_module, "_section_problems", lambda section, symlinks: [])
    evil = _new_file("evil", "+/etc/passwd\n\\ No newline at end of file\n", mode="120000")

    with untouched(repo.mirror), pytest.raises(PatchRefused, match="evil: .*symbolic link"):
        check_applies(repo.mirror, repo.base, [("setup patch", evil)])


def test_changing_what_git_says_is_a_symlink_is_refused_even_if_unknown_to_the_tree():
    patch = REFUSED["onto-link"][0].replace("link", "other")
    assert path_problems(patch, symlinks=set()) == ["other: patch changes a symbolic link"]


def test_deleting_a_symlink_is_not_a_path_problem(repo):
    deletion = (
        "diff --git a/link b/link\ndeleted file mode 120000\n--- a/link\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-/etc\n\\ No newline at end of file\n"
    )
    assert path_problems(deletion, symlinks={"link"}) == []
    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", deletion)])


# --- applying chains -------------------------------------------------------------------------


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def test_a_good_setup_patch_and_a_setup_test_gold_chain_apply(repo):
    setup_text = _edit(APP_PY, "line 10\n", "line 10 setup\n")
    setup = file_diff("src/app.py", APP_PY, setup_text)
    test_text = _edit(setup_text, "line 10 setup\n", "line 10 setup+test\n")
    test = file_diff("src/app.py", setup_text, test_text)
    gold_text = _edit(test_text, "line 10 setup+test\n", "line 10 gold\n")
    gold = file_diff("src/app.py", test_text, gold_text) + file_diff(
        "src/fix.py", None, "fixed = True\n"
    )

    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", setup)])
        check_applies(
            repo.mirror,
            repo.base,
            [("setup patch", setup), ("test patch", test), ("gold patch", gold)],
        )
        # The test patch changes a line only the setup patch wrote: alone it cannot apply.
        with pytest.raises(PatchRefused, match="test patch does not apply"):
            check_applies(repo.mirror, repo.base, [("test patch", test)])


def test_a_chain_names_the_patch_that_does_not_apply_on_top_of_the_previous_one(repo):
    setup = file_diff("src/app.py", APP_PY, _edit(APP_PY, "line 10\n", "line 10 setup\n"))
    upstream_test = file_diff("src/app.py", APP_PY, _edit(APP_PY, "line 10\n", "line 10 test\n"))
    gold = file_diff(
        "src/util.py", "def helper():\n    return 1\n", "def helper():\n    return 3\n"
    )

    with untouched(repo.mirror), pytest.raises(PatchRefused) as refused:
        check_applies(
            repo.mirror,
            repo.base,
            [("setup patch", setup), ("test patch", upstream_test), ("gold patch", gold)],
        )

    assert refused.value.label == "test patch"
    assert "test patch does not apply (src/app.py) on top of the setup patch" in str(refused.value)
    assert "patch does not apply" in str(refused.value)


# --- building a setup patch in the browser ---------------------------------------------------


def test_browser_edits_round_trip_through_file_diff_replace_and_file_after(repo):
    util_base = read_file(repo.mirror, repo.base, "src/util.py")
    readme_base = read_file(repo.mirror, repo.base, "README.md")
    util_edit = "def helper():\n    # blocked: which value?\n    return 1\n"
    readme_edit = readme_base + "\nMore text.\n"

    patch = ""
    patch = replace_file_diff(patch, "src/util.py", file_diff("src/util.py", util_base, util_edit))
    patch = replace_file_diff(patch, "README.md", file_diff("README.md", readme_base, readme_edit))
    patch = replace_file_diff(patch, "notes/new.txt", file_diff("notes/new.txt", None, "new\n"))

    assert list(split_patch(patch)) == ["README.md", "notes/new.txt", "src/util.py"]
    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", patch)])
        assert file_after(repo.mirror, repo.base, patch, "src/util.py") == util_edit
        assert file_after(repo.mirror, repo.base, patch, "README.md") == readme_edit
        assert file_after(repo.mirror, repo.base, patch, "notes/new.txt") == "new\n"
        assert file_after(repo.mirror, repo.base, patch, "src/app.py") == APP_PY
        assert file_after(repo.mirror, repo.base, patch, "brand/new.py") == ""

    # Re-editing one file replaces only that file's section, in place.
    sections = split_patch(patch)
    readme_again = "# Demo, edited again\n\nA small project.\n"
    edited = replace_file_diff(
        patch, "README.md", file_diff("README.md", readme_base, readme_again)
    )
    again = split_patch(edited)
    assert list(again) == list(sections)
    assert again["src/util.py"] == sections["src/util.py"]
    assert again["notes/new.txt"] == sections["notes/new.txt"]
    assert "+# Demo, edited again" in again["README.md"]
    assert "More text" not in again["README.md"]
    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", edited)])
        assert file_after(repo.mirror, repo.base, edited, "README.md") == readme_again

    # Reverting a file to its base content removes its section.
    assert file_diff("src/util.py", util_base, util_base) == ""
    reverted = replace_file_diff(
        edited, "src/util.py", file_diff("src/util.py", util_base, util_base)
    )
    assert list(split_patch(reverted)) == ["README.md", "notes/new.txt"]
    assert split_patch(reverted)["README.md"] == again["README.md"]
    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", reverted)])
        assert file_after(repo.mirror, repo.base, reverted, "src/util.py") == util_base


def test_file_diff_deletes_and_handles_missing_final_newline_and_odd_names(repo):
    deletion = file_diff("remove_me.txt", "bye\n", None)
    assert deletion.startswith("diff --git a/remove_me.txt b/remove_me.txt\ndeleted file mode")
    no_newline = file_diff(
        "src/util.py", "def helper():\n    return 1\n", "def helper():\n    return 1"
    )
    assert "\\ No newline at end of file" in no_newline
    odd = file_diff("dir with space/naïve.txt", None, "x\n")
    assert parse_patch(odd)[0].new_path == "dir with space/naïve.txt"
    patch = deletion + no_newline + odd

    with untouched(repo.mirror):
        check_applies(repo.mirror, repo.base, [("setup patch", patch)])
        assert file_after(repo.mirror, repo.base, patch, "remove_me.txt") == ""
        assert file_after(repo.mirror, repo.base, patch, "src/util.py").endswith("return 1")
        assert file_after(repo.mirror, repo.base, patch, "dir with space/naïve.txt") == "x\n"


def test_replace_file_diff_refuses_a_diff_of_another_file():
    diff = file_diff("a.txt", "a\n", "b\n")
    with pytest.raises(DomainError, match="b.txt"):
        replace_file_diff("", "b.txt", diff)


def test_diff_lines_colours_a_patch_by_counting_its_hunks():
    patch = (
        "diff --git a/src/app.py b/src/app.py\n"
        "index 1111111..2222222 100644\n"
        "--- a/src/app.py\n"
        "+++ b/src/app.py\n"
        "@@ -1,3 +1,3 @@ def main():\n"
        " keep\n"
        "--- a SQL comment, removed\n"
        "+++ counter += 1\n"
        " keep\n"
        "\\ No newline at end of file\n"
        "diff --git a/README b/README\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/README\n"
        "@@ -0,0 +1 @@\n"
        "+hello\n"
    )
    assert diff_lines(patch) == [
        ("diff-file", "diff --git a/src/app.py b/src/app.py"),
        ("diff-file", "index 1111111..2222222 100644"),
        ("diff-file", "--- a/src/app.py"),
        ("diff-file", "+++ b/src/app.py"),
        ("diff-hunk", "@@ -1,3 +1,3 @@ def main():"),
        ("", " keep"),
        # Inside a hunk, "---" and "+++" are a removed and an added line, not headers.
        ("diff-del", "--- a SQL comment, removed"),
        ("diff-add", "+++ counter += 1"),
        ("", " keep"),
        ("", "\\ No newline at end of file"),
        ("diff-file", "diff --git a/README b/README"),
        ("diff-file", "new file mode 100644"),
        ("diff-file", "--- /dev/null"),
        ("diff-file", "+++ b/README"),
        ("diff-hunk", "@@ -0,0 +1 @@"),
        ("diff-add", "+hello"),
    ]
    # A fragment without its @@ line (a tool's output) is still coloured line by line.
    assert diff_lines("+x = 2\n-x = 1\n") == [("diff-add", "+x = 2"), ("diff-del", "-x = 1")]
    assert diff_lines("") == []
