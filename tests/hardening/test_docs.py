"""The README is an index (issue 35): it keeps CI's two commands, stays short, and every page it points to
exists; the docs site's navigation names every stage page. `bin/test` builds the site with
`mkdocs build --strict`, which checks the links inside the site."""

import re

import yaml

from tests.conftest import REPO
from tests.support.asserts import every

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_keeps_the_demo_and_test_commands_and_stays_short():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert "bin/demo\n" in blocks and "bin/test\n" in blocks
    assert len(README.splitlines()) <= 250


def test_every_local_link_of_the_readme_names_a_file():
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", README) if not re.match(r"[a-z]+:", t)]
    assert any(t.startswith("docs/stages/") for t in targets)
    missing = sorted(t for t in targets if not (REPO / t).is_file())
    assert missing == []


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_site_has_a_page_per_stage_in_its_navigation():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    assert every((REPO / "docs" / p).is_file() for p in pages)
    stages = [
        "corpus",
        "injection",
        "review",
        "rating",
        "spans",
        "agreement",
        "benchmark",
        "release",
        "scoring",
        "meta-evaluation",
    ]
    assert [f"stages/{s}.md" for s in stages] == [p for p in pages if p.startswith("stages/")]
    assert sorted(p.name for p in (REPO / "docs" / "stages").glob("*.md")) == sorted(f"{s}.md" for s in stages)


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_the_readme_says_what_a_clone_lacks_and_how_long_the_first_demo_start_takes():
    """#46.5: a newcomer on a fresh clone read of `../shared/` files she did not have, and of no wait."""
    for paragraph in _paragraphs(README):
        if "../shared" in paragraph and "`../shared/data/xqmeval` exists" not in paragraph:
            assert "a clone does not have" in paragraph or "a plain clone has none" in paragraph, paragraph
    notes = README.split("For a newcomer:", 1)[-1].split("\n\n")[1]
    # how long the first start takes, as measured (a figure in seconds), beside what a clone without ../shared lacks
    assert re.search(r"The first start .*?\b\d+ s\b", notes, re.S) and "Without `../shared`" in notes, notes


def test_the_readmes_docs_server_leaves_the_demos_port_free():
    demo_port = re.search(r"\$\{PORT:-(\d+)\}", (REPO / "bin" / "demo").read_text(encoding="utf-8")).group(1)
    serve = re.search(r"mkdocs serve(.*)", README).group(1)
    address = re.search(r"(?:-a|--dev-addr)[ =](\S+)", serve)
    assert address is not None, f"`mkdocs serve` without an address takes 127.0.0.1:8000: {serve}"
    assert address.group(1).rsplit(":", 1)[1] != demo_port
