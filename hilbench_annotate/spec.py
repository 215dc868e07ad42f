"""Task specifications as named sections, and their rendering in the release's layout.

SWE: ``problem_statement``, ``requirements``, ``interface`` — rendered into one text with
``# PROBLEM STATEMENT`` / ``# REQUIREMENTS`` / ``# PUBLIC INTERFACES`` headings, as the
release's ``problem_statement.txt`` is. SQL: ``question`` and ``evidence`` (BIRD's hint,
withheld from the blocked task by default).
"""

import re

from hilbench_annotate.toolkit.textdiff import word_diff_html

SWE_SECTIONS = (
    ("problem_statement", "PROBLEM STATEMENT"),
    ("requirements", "REQUIREMENTS"),
    ("interface", "PUBLIC INTERFACES"),
)
SQL_SECTIONS = (("question", "Question"), ("evidence", "Evidence"))

_HEADING = re.compile(
    r"^# (" + "|".join(re.escape(h) for _, h in SWE_SECTIONS) + r")[ \t]*\n", re.MULTILINE
)


def sections_for(domain: str) -> tuple[tuple[str, str], ...]:
    return SWE_SECTIONS if domain == "swe" else SQL_SECTIONS


def spec_sections(domain: str, original: dict[str, str], blocked: dict[str, str]) -> list[dict]:
    """Each section of a task's specification with its original and blocked texts and the
    word diff from one to the other (struck: what the blocked text removed): the workspace
    edits beside it, the review page reads it."""
    return [
        {
            "key": key,
            "label": label,
            "original": original.get(key, ""),
            "blocked": blocked.get(key, ""),
            "diff": word_diff_html(original.get(key, ""), blocked.get(key, "")),
        }
        for key, label in sections_for(domain)
    ]


def parse_swe_statement(text: str) -> dict[str, str]:
    """Split a release-style problem statement into sections.

    Text before the first heading (or a text with no headings at all) is the problem
    statement. ``render_swe_statement(parse_swe_statement(t)) == t`` for any text whose
    headings appear in the release's order, each after two blank lines, and that ends with a
    newline, as the release's texts do: nothing is lost in a round trip.
    """
    by_heading = {h: key for key, h in SWE_SECTIONS}
    matches = list(_HEADING.finditer(text))
    sections = {"problem_statement": "", "requirements": "", "interface": ""}
    if not matches:
        sections["problem_statement"] = text
        return sections
    # Text before the first heading belongs to the problem statement.
    sections["problem_statement"] = text[: matches[0].start()]
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        key = by_heading[match.group(1)]
        sections[key] = sections.get(key, "") + text[match.end() : end]
    return sections


# What the release puts before a heading that follows a section: at least two blank lines
# (every problem_statement.txt of the release and its calibration tasks has 2 or more).
_BEFORE_HEADING = "\n\n\n"


def render_swe_statement(sections: dict[str, str]) -> str:
    """The sections under their headings. A section that does not end in two blank lines
    (an edit, trimmed by a form or the API) gets them, so the next heading starts a line of
    its own, and the text ends with a newline as the release's do; a section that already
    does is kept as it is, so a release text comes back unchanged."""
    text = ""
    for key, heading in SWE_SECTIONS:
        body = sections.get(key, "")
        if key != "problem_statement" and not body:
            continue
        if text:
            kept = len(text) - len(text.rstrip("\n"))
            text += _BEFORE_HEADING[min(kept, len(_BEFORE_HEADING)) :]
        text += f"# {heading}\n{body}"
    return text if text.endswith("\n") else text + "\n"


def swe_title(sections: dict[str, str]) -> str:
    """The issue's title line, else its first non-empty line."""
    for line in sections.get("problem_statement", "").splitlines():
        stripped = line.strip().lstrip("#").strip()
        if not stripped:
            continue
        return re.sub(r"^(TITLE|Title)\s*:\s*", "", stripped)[:300]
    return "Untitled SWE task"
