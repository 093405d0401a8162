"""The services' house style, read from the source (no import, no database): every public function of a
services module takes keyword-only arguments and is named ``<entity>_<action>[_<qualifier>]``, so a call
says what each value is and the names sort by what they act on (``release_create``, ``release_push``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.product_code import repository_modules

REPO = Path(__file__).resolve().parents[2]
SERVICES = [
    p
    # a stage's services module, or the modules of a services package (its __init__ only re-exports them)
    for p in repository_modules()
    if p.name == "services.py" or (p.parent.name == "services" and not p.name.startswith("_"))
]

# What a service acts on: a word of the domain (a model, a record, a part of one). One or more words.
ENTITIES = {
    "annotator", "assignments", "audit", "batch", "build", "candidate", "corpus", "counts", "crowd", "decision", "direction",
    "directions", "job", "jobs", "language", "lock", "out", "part", "pool", "project", "push", "rating",
    "release", "request", "result", "retry", "round", "run", "runs", "sampling", "scores", "scoring", "span",
    "staging", "system", "task", "token", "tokens", "xqmeval", "user", "username", "work",
}  # fmt: skip
# What it does: a verb.
ACTIONS = {
    "add", "adjudicate", "assign", "begin", "cancel", "check", "clean", "clear", "close", "create", "ensure",
    "execute", "exists", "export", "find", "finish", "format", "get", "hash", "import", "ingest", "invite",
    "list", "lock", "make", "merge", "open", "plan", "prepare", "push", "record", "reinstate", "remove", "reset",
    "resolve", "resume", "retire", "run", "set", "skip", "start", "submit", "summarize", "sync", "take",
    "update", "withdraw", "revoke", "authenticate", "receive", "read", "write",
}  # fmt: skip
# Allowed exceptions, each with its reason. None today: add a name here only with a reason a reviewer accepts.
ALLOWED: dict[str, str] = {}


def public_functions(path: Path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            yield node


def follows_the_naming_rule(name: str) -> bool:
    """``<entity>_<action>[_<qualifier>…]``: it opens with an entity and an action follows (an entity may take more
    words: ``rating_item_take_next``, ``pool_rule_set``)."""
    words = name.split("_")
    return words[0] in ENTITIES and any(word in ACTIONS for word in words[1:])


def test_the_scan_finds_the_services():
    names = {p.relative_to(REPO).as_posix() for p in SERVICES}
    assert {"core/services.py", "annotation/review/services.py", "exports/release/services/finishing.py"} <= names
    assert sum(1 for p in SERVICES for _ in public_functions(p)) > 60


@pytest.mark.parametrize("path", SERVICES, ids=[p.relative_to(REPO).as_posix() for p in SERVICES])
def test_public_services_take_keyword_only_arguments(path):
    positional = [
        f"{node.name}({', '.join(a.arg for a in node.args.posonlyargs + node.args.args)})"
        for node in public_functions(path)
        if (node.args.posonlyargs or node.args.args) and node.name not in ALLOWED
    ]
    assert not positional, f"{path.name}: make these keyword-only (def f(*, …)): {positional}"


@pytest.mark.parametrize("path", SERVICES, ids=[p.relative_to(REPO).as_posix() for p in SERVICES])
def test_public_services_are_named_entity_then_action(path):
    misnamed = [
        node.name
        for node in public_functions(path)
        if node.name not in ALLOWED and not follows_the_naming_rule(node.name)
    ]
    assert not misnamed, f"{path.name}: name these <entity>_<action> (e.g. release_create): {misnamed}"


@pytest.mark.parametrize(
    ("name", "follows"),
    [
        ("release_create", True),
        ("rating_item_take_next", True),
        ("project_directions_add", True),
        ("create_release", False),
        ("plan_run", False),
        ("ensure_project", False),
        ("resume", False),
        ("release", False),
    ],
)
def test_the_naming_rule_tells_the_old_names_from_the_new(name, follows):
    assert follows_the_naming_rule(name) is follows
