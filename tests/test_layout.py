"""The codebase's shape, checked: the documented layout, no import cycle, no private name
imported across modules, and modules and functions of a size one can read.

These read the source (``ast``); nothing is imported, so a failure names the file and line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("anchorstream", "daemon")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100  # the body, without its docstring

#: Functions allowed past MAX_FUNCTION_LINES, each with the reason it stays whole.
LONG_FUNCTIONS: dict[str, str] = {}
#: Modules allowed past MAX_MODULE_LINES, each with the reason.
LONG_MODULES: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            found[".".join(parts)] = path
    return found


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), filename=str(path)) for name, path in MODULES.items()}


def _imported(tree: ast.AST):
    """``(module, name or None, line)`` for every absolute import in the tree, lazy ones too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def _resolve(dotted: str) -> str | None:
    """The project module that ``dotted`` names (or lies in), or None for third-party code."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, tree in TREES.items():
        edges = set()
        for module, imported, _ in _imported(tree):
            target = _resolve(f"{module}.{imported}" if imported else module)
            if target is not None and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    """Imports inside functions count too: a lazy import hides a cycle, it does not remove it."""
    assert _cycles(_import_graph()) == []


def test_the_library_never_imports_the_service():
    offenders = [f"{name} imports {target}" for name, targets in _import_graph().items()
                 if name.startswith("anchorstream") for target in targets
                 if target.startswith("daemon")]
    assert offenders == []


def test_no_private_name_is_imported_across_modules():
    """A name with a leading underscore stays in its module. A private module (``_kernels``,
    ``_buffers``) is private to its top-level package: the library's modules use it, the service
    does not."""
    offenders = []
    for name, tree in TREES.items():
        for module, imported, line in _imported(tree):
            target = _resolve(f"{module}.{imported}" if imported else module)
            if target is None or target == name:
                continue
            private_name = imported is not None and imported.startswith("_") and \
                not imported.endswith("__") and \
                _resolve(f"{module}.{imported}") != f"{module}.{imported}"
            private_module = any(part.startswith("_") for part in target.split(".")) and \
                target.split(".")[0] != name.split(".")[0]
            if private_name or private_module:
                where = MODULES[name].relative_to(ROOT)
                offenders.append(f"{where}:{line} imports {module}.{imported or ''}")
    assert offenders == []


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_modules_and_functions_are_of_a_readable_size():
    too_long = []
    for name, path in MODULES.items():
        rel = str(path.relative_to(ROOT))
        n = path.read_text().count("\n")
        if n > MAX_MODULE_LINES and rel not in LONG_MODULES:
            too_long.append(f"{rel}: {n} lines")
        for node in ast.walk(TREES[name]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{rel}:{node.name}"
                if _body_lines(node) > MAX_FUNCTION_LINES and key not in LONG_FUNCTIONS:
                    too_long.append(f"{key} (line {node.lineno}): {_body_lines(node)} lines")
    assert too_long == []


def test_every_module_is_in_the_documented_layout_and_every_listed_one_exists():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    tree = doc.split("<!-- layout -->")[1]
    listed = set()
    folders = []
    for line in tree.splitlines():
        m = re.match(r"^([│ ]*)(├── |└── )?(\S+)", line)
        if not m or line.strip().startswith("```"):
            continue
        depth = len(m.group(1)) // 4 + (1 if m.group(2) else 0)
        entry = m.group(3)
        folders = folders[:depth]
        if entry.endswith("/"):
            folders.append(entry.rstrip("/"))
        elif entry.endswith(".py"):
            listed.add("/".join(folders + [entry]))
    actual = {str(p.relative_to(ROOT)) for p in MODULES.values()}
    assert sorted(actual - listed) == [], "modules missing from docs/architecture.md"
    assert sorted(listed - actual) == [], "docs/architecture.md lists modules that do not exist"


def test_importing_the_library_reads_no_environment():
    """Reading the environment is the service's job (daemon/settings.py), at start."""
    offenders = []
    for name, tree in TREES.items():
        if not name.startswith("anchorstream"):
            continue
        for node in tree.body:  # module level only: code that runs on import
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and sub.attr in ("environ", "getenv") and \
                        not isinstance(node, (ast.FunctionDef, ast.ClassDef,
                                              ast.AsyncFunctionDef)):
                    offenders.append(f"{MODULES[name].relative_to(ROOT)}:{sub.lineno}")
    assert offenders == []
