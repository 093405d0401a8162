"""One name per meaning of ``direction`` (docs/architecture.md, "Rules of the code"): in product code ``direction`` is a
``core.models.Direction`` row (or the model field of that name), ``direction_code`` its code ("en-de", a ``str``),
``direction_id`` its primary key. Read from the source, no import: a function parameter or an annotated name
``direction`` typed ``str`` or ``int`` fails, and so does a ``direction_code`` typed as anything but ``str``. The few
names an outside party reads (a Celery task's keyword arguments, which queued messages carry) are listed in
``ALLOWED`` with the reason."""

from __future__ import annotations

import ast

from tests.unit.product_code import product_sources

WRAPPERS = {"None", "Optional"}  # `str | None` is still a code

# "path::function" -> why its `direction` parameter keeps the name although it holds a code.
ALLOWED = {
    "exports/benchmark/tasks.py::build_direction_task": "Celery task: queued messages carry `direction=`",
    "exports/release/tasks.py::release_direction_task": "Celery task: queued messages carry `direction=`",
    "exports/release/tasks.py::release_direction_remote_task": "Celery task: queued messages carry `direction=`",
    "scoring/worker.py::score_direction_task": "Celery task: queued messages carry `direction=`",
}


def _types(annotation: ast.expr | None) -> set[str]:
    """The plain type names an annotation is made of, less ``None``/``Optional`` (``str | None`` -> {"str"})."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        annotation = ast.parse(annotation.value, mode="eval").body
    return {node.id for node in ast.walk(annotation) if isinstance(node, ast.Name)} - WRAPPERS


def _wrong(name: str, annotation: ast.expr | None) -> bool:
    types = _types(annotation)
    if name == "direction":
        return bool(types) and types <= {"str", "int"}
    if name == "direction_code":
        return bool(types) and types != {"str"}
    return False


def misnamed(source: str) -> list[str]:
    """``where:line name: annotation`` for each misnamed parameter or annotated name of ``source``; ``where`` is the
    enclosing function's qualified name (or the class's, for a field), "" at module level."""
    found: list[str] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{scope}.{child.name}" if scope else child.name
                arguments = child.args
                for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                    if _wrong(arg.arg, arg.annotation):
                        found.append(f"{name}:{arg.lineno} {arg.arg}: {ast.unparse(arg.annotation)}")
                visit(child, name)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{scope}.{child.name}" if scope else child.name)
            elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                if _wrong(child.target.id, child.annotation):
                    found.append(f"{scope}:{child.lineno} {child.target.id}: {ast.unparse(child.annotation)}")
            else:
                visit(child, scope)

    visit(ast.parse(source), "")
    return found


def product_findings() -> dict[str, str]:
    """Every misnamed name of the product code: ``path::where:line name: annotation`` -> ``path::where``."""
    return {
        f"{path}::{finding}": f"{path}::{finding.split(':', 1)[0]}"
        for path, source in product_sources()
        for finding in misnamed(source)
    }


def test_the_scanner_catches_codes_and_ids_named_direction():
    source = (
        "def stage(release, direction: str, *, direction_id: int, direction_code: str | None = None): ...\n"
        "def load(direction: 'str | None'): ...\n"
        "def count(*, direction_code: int): ...\n"
        "def rows(direction: Direction, direction_code: str): ...\n"
        "class Part:\n"
        "    direction: int\n"
        "    direction_code: str\n"
    )
    assert misnamed(source) == [
        "stage:1 direction: str",
        "load:2 direction: 'str | None'",
        "count:3 direction_code: int",
        "Part:6 direction: int",
    ]


def test_direction_names_one_meaning_in_product_code():
    findings = [finding for finding, where in product_findings().items() if where not in ALLOWED]
    assert not findings, (
        "`direction` is a Direction row; name a code `direction_code` (str) and a key `direction_id` (int): "
        + "\n".join(findings)
    )


def test_every_allowed_entry_is_still_needed():
    gone = sorted(set(ALLOWED) - set(product_findings().values()))
    assert not gone, f"no longer misnamed (remove from ALLOWED and docs/architecture.md): {gone}"
