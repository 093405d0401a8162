"""Where the platform's source writes each record (model): the scan behind ``docs/records.md``'s "one writer".

Read from the source, no import of the code it scans. A write is, for a model ``M`` (its class name):

- a write method (``create``, ``update``, ``save``, ``delete``, ``bulk_create``, …) called on a chain that starts
  at ``M`` (its manager, a queryset, the class itself: ``M.objects.filter(…).update(…)``, ``M(…).save()``);
- the same method called on a name that holds an ``M`` in that function: a parameter annotated ``M`` (or
  ``M | None``), or a name bound to ``M(…)``, ``M.objects….get/create/first/last(…)`` or
  ``get_object_or_404(M, …)``; and ``add``/``set``/``remove``/``clear`` on a many-to-many field of such a name;
- ``M``, or its table as ``M._meta.db_table``, handed to the bulk helpers of ``core.bulk`` (``insert_objects``,
  ``insert_dicts``, ``copy_rows``, …);
- SQL in a string that inserts into, updates or deletes from ``M``'s table.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.unit.product_code import repository_modules

ROOT = Path(__file__).resolve().parents[2]
NOT_PLATFORM = ("tests", "perf", "scoring", "llm_client", "static", "templates", "docs", "bin", "site")
WRITES = {
    "update",
    "bulk_update",
    "bulk_create",
    "create",
    "get_or_create",
    "update_or_create",
    "delete",
    "_raw_delete",
    "save",
}
M2M_WRITES = {"add", "set", "remove", "clear"}
BULK_HELPERS = {"insert_objects", "insert_dicts", "insert_dicts_with_ids", "reserve_ids", "copy_rows"}
FETCHES = {"get", "create", "first", "last", "get_or_create", "update_or_create", "select_for_update"}


def _root(node: ast.AST) -> ast.AST:
    """The start of an attribute/call chain: ``M`` in ``M.objects.filter(...).update``."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node


def _chain_methods(node: ast.AST) -> set[str]:
    names = set()
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        node = node.value if not isinstance(node, ast.Call) else node.func
    return names


def _annotated_models(annotation: ast.AST | None, models: set[str]) -> set[str]:
    """The models an annotation names: ``Project``, ``Project | None``, ``"Project"``, ``core.models.Project``."""
    if annotation is None:
        return set()
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)}
    for n in ast.walk(annotation):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            names |= set(re.findall(r"\w+", n.value))
    return names & models


def _bound_model(value: ast.AST, models: set[str]) -> str | None:
    """The model whose row ``value`` evaluates to, when the expression says so plainly."""
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in models:
            return func.id  # M(...)
        if isinstance(func, ast.Name) and func.id == "get_object_or_404" and value.args:
            first = value.args[0]
            root = _root(first)
            return root.id if isinstance(root, ast.Name) and root.id in models else None
        root = _root(func)
        if isinstance(root, ast.Name) and root.id in models and _chain_methods(func) & FETCHES:
            return root.id
    return None


class _Scan(ast.NodeVisitor):
    def __init__(self, models: dict[str, str]):
        self.models = models  # class name -> table
        self.found: list[tuple[str, int, str]] = []  # (model, line, what)
        self.scopes: list[dict[str, str]] = [{}]

    def _bind(self, name: str, model: str | None) -> None:
        if model:
            self.scopes[-1][name] = model

    def _held(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def visit_FunctionDef(self, node):
        scope: dict[str, str] = {}
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            for model in _annotated_models(arg.annotation, set(self.models)):
                scope[arg.arg] = model
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node):
        model = _bound_model(node.value, set(self.models))
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._bind(target.id, model)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Call) and model:
                first = target.elts[0] if target.elts else None  # obj, created = M.objects.get_or_create(...)
                if isinstance(first, ast.Name):
                    self._bind(first.id, model)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if isinstance(node.target, ast.Name):
            models = _annotated_models(node.annotation, set(self.models))
            self._bind(node.target.id, next(iter(models), None) or _bound_model(node.value, set(self.models)))
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITES:
            root = _root(func.value)
            if isinstance(root, ast.Name) and root.id in self.models:  # M.objects….update(), M(…).save()
                self.found.append((root.id, node.lineno, f"{root.id}….{func.attr}()"))
            elif isinstance(func.value, ast.Name) and (model := self._held(func.value.id)):  # project.save()
                self.found.append((model, node.lineno, f"{func.value.id}.{func.attr}()"))
        if isinstance(func, ast.Attribute) and func.attr in M2M_WRITES and isinstance(func.value, ast.Attribute):
            holder = func.value.value  # project.directions.add(…): the project's many-to-many table
            if isinstance(holder, ast.Name) and (model := self._held(holder.id)):
                self.found.append((model, node.lineno, f"{holder.id}.{func.value.attr}.{func.attr}()"))
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in BULK_HELPERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id in self.models:  # insert_dicts(M, rows)
                self.found.append((first.id, node.lineno, f"{name}({first.id}, …)"))
            root = _root(first)
            if isinstance(first, ast.Attribute) and first.attr == "db_table" and isinstance(root, ast.Name):
                if root.id in self.models:  # copy_rows(M._meta.db_table, …)
                    self.found.append((root.id, node.lineno, f"{name}({root.id}._meta.db_table, …)"))
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and len(node.value) > 10:
            text = " ".join(node.value.lower().replace('"', "").split())
            for model, table in self.models.items():
                if any(f"{verb} {table}" in text for verb in ("update", "insert into", "delete from")):
                    self.found.append((model, node.lineno, f"SQL writing {table}"))


def writes(source: str, models: dict[str, str]) -> list[tuple[str, int, str]]:
    """(model, line, what) for each write of ``models`` (class name -> table) in ``source``."""
    scan = _Scan(models)
    scan.visit(ast.parse(source))
    return scan.found


def platform_sources() -> Iterator[tuple[str, str]]:
    """(path relative to the repository, source) of every platform module: not tests, migrations, perf scripts
    or the Django-free worker packages (they reach no database)."""
    for path in repository_modules(skip=NOT_PLATFORM):
        rel = path.relative_to(ROOT).as_posix()
        if "/migrations/" in rel:
            continue
        yield rel, path.read_text(encoding="utf-8")
