"""axe-core in the browser tests: inject the vendored copy into a page, run it, read violations.

``static/vendor/axe.min.js`` is a pinned copy of axe-core (MPL-2.0, licence header kept);
nothing is downloaded at test time.
"""

from pathlib import Path

AXE_JS = Path(__file__).resolve().parents[2] / "static" / "vendor" / "axe.min.js"
BLOCKING_IMPACTS = ("serious", "critical")


def axe_violations(page, *, include: str | None = None, impacts=BLOCKING_IMPACTS) -> list[dict]:
    """Run axe on the page (or on the element matching ``include``); violations of ``impacts``.

    Checks WCAG 2.x A/AA rules plus axe's best practices, as axe runs them by default.
    """
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE_JS))
    result = page.evaluate(
        """async (include) => {
            const r = await axe.run(include ? {include: [include]} : document,
                                    {resultTypes: ["violations"]});
            return r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(" "),
                                          summary: n.failureSummary}))}));
        }""",
        include,
    )
    return [v for v in result if v["impact"] in impacts]


def describe(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['impact']}: {v['id']} — {v['help']}")
        for node in v["nodes"][:5]:
            lines.append(f"    {node['target']}: {node['summary'].splitlines()[-1].strip()}")
    return "\n".join(lines)


def assert_accessible(page, where: str, **kwargs) -> None:
    """No serious or critical axe violation on the page as it is now."""
    violations = axe_violations(page, **kwargs)
    assert not violations, f"axe on {where} ({page.url}):\n{describe(violations)}"
