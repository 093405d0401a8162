"""axe-core in the browser tests (axe-playwright-python ships axe.min.js): every page a walk visits must
have no serious or critical violation of WCAG 2.1 A/AA."""

from __future__ import annotations

BLOCKING = ("serious", "critical")
WCAG_AA = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
    "resultTypes": ["violations"],
}


def violations(page) -> list[dict]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options=WCAG_AA)
    return [v for v in results.response["violations"] if v.get("impact") in BLOCKING]


def describe(found: list[dict]) -> str:
    lines = []
    for v in found:
        targets = "; ".join(
            " ".join(node["target"]) if isinstance(node["target"], list) else str(node["target"])
            for node in v["nodes"][:5]
        )
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} — {len(v['nodes'])} node(s): {targets}")
    return "\n".join(lines)


def assert_accessible(page, where: str, visited: list | None = None) -> None:
    """No serious/critical axe violation on the current page; ``visited`` collects the checked paths."""
    page.wait_for_load_state("load")
    found = violations(page)
    if visited is not None:
        visited.append(where)
    assert not found, f"axe on {where} ({page.url}):\n{describe(found)}"
