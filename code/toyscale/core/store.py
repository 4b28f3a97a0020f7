"""What made a committed result: the fingerprint of its compute path (CLAIMS.md §9, any machine).

Another CPU's floating point moves a chosen epoch, and with it every trained number: a committed
result cannot be checked against a rerun by a tolerance that holds on every machine. Whether it is
*stale* is a question about code instead, and that answer is the same everywhere. A result's
fingerprint is the digest of each module on its compute path, found by following the package's
own imports from the modules that made it (its roots), plus the configuration it ran:

    fingerprint(roots, config) = {module: sha256(source without docstrings, comments or layout)
                                  for module in compute_path(roots)} ∪ {"config": sha256(repr(config))}

Presentation and bookkeeping stay off the path: a chapter's `figures` module, the plot theme,
tables, progress bars, the artifact registry, file I/O, the environment record and the process pool. A module's
digest is taken over its syntax tree, unparsed with docstrings removed, so rewording a docstring,
a comment or reformatting leaves it unchanged, while any change to what the code computes changes
it. `differences` names the modules that changed, so a stale artifact's
error says what moved and which command rebuilds it.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

PACKAGE = "toyscale"
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # code/toyscale
#: Modules that show, store, describe or schedule results but never compute them (with every module named
#: `figures`). `core.pending` only decides which of core's refusals apply. `core.parallel` only decides which
#: process runs a task; a result depends on its task alone
#: (tests/test_cli.py checks that --jobs 2 writes the same JSON as --jobs 1).
OFF_PATH = frozenset(
    {
        "toyscale.core.parallel",
        "toyscale.core.pending",
        "toyscale.core.plot",
        "toyscale.core.table",
        "toyscale.core.progress",
        "toyscale.core.report",
        "toyscale.core.data",
        "toyscale.core.environment",
        "toyscale.core.store",
        "toyscale.datasets",
    }
)
CONFIG_KEY = "config"


def off_path(module: str) -> bool:
    """True for modules kept off every compute path: a chapter's `figures` and the modules in `OFF_PATH`."""
    return module in OFF_PATH or module.rsplit(".", 1)[-1] == "figures"


def module_file(module: str) -> Path | None:
    """The source file of a `toyscale` module (a package's `__init__.py`), or None when there is none."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    base = _PACKAGE_DIR.joinpath(*module.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_package(module: str) -> bool:
    path = module_file(module)
    return path is not None and path.name == "__init__.py"


@cache
def _tree(module: str) -> ast.Module:
    path = module_file(module)
    if path is None:
        raise ValueError(f"{module!r} is not a module of the {PACKAGE} package")
    return ast.parse(path.read_text(), filename=str(path))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names, resolving leading dots against `module`'s package."""
    if node.level == 0:
        return node.module or ""
    package = module if _is_package(module) else module.rsplit(".", 1)[0]
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def _defining_module(package: str, name: str, seen: frozenset[str] = frozenset()) -> str:
    """The module that defines `name` re-exported by `package`'s `__init__` (the package itself if it defines it)."""
    if package in seen:
        return package
    for node in _tree(package).body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            source = _absolute(package, node)
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            if module_file(f"{source}.{original}") is not None:
                return f"{source}.{original}"
            if _is_package(source):
                return _defining_module(source, original, seen | {package})
            return source if module_file(source) is not None else package
    return package


def defining_module(module: str, name: str) -> str:
    """The module where `module.name` is defined: `module` itself, or for a package the module it re-exports from."""
    if module_file(module) is None:
        raise ValueError(f"{module!r} is not a module of the {PACKAGE} package")
    return _defining_module(module, name) if _is_package(module) else module


def imports(module: str) -> set[str]:
    """The `toyscale` modules `module` imports, each re-exported name traced to the module defining it."""
    found: set[str] = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if module_file(a.name) is not None)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if module_file(source) is None:
                continue
            for alias in node.names:
                if module_file(f"{source}.{alias.name}") is not None:
                    found.add(f"{source}.{alias.name}")
                elif _is_package(source):
                    found.add(_defining_module(source, alias.name))
                else:
                    found.add(source)
    found.discard(module)
    return found


def compute_path(roots: Iterable[str]) -> list[str]:
    """Every `toyscale` module reachable from `roots` by imports, those `off_path` left out, sorted."""
    pending = [r for r in roots if not off_path(r)]
    for root in pending:
        if module_file(root) is None:
            raise ValueError(f"{root!r} is not a module of the {PACKAGE} package")
    reached: set[str] = set()
    while pending:
        module = pending.pop()
        if module in reached:
            continue
        reached.add(module)
        pending.extend(m for m in imports(module) if not off_path(m) and m not in reached)
    return sorted(reached)


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_digest(module: str) -> str:
    """SHA-256 of what `module` computes: its syntax tree, docstrings removed, unparsed (no comments, no layout)."""
    path = module_file(module)
    if path is None:
        raise ValueError(f"{module!r} is not a module of the {PACKAGE} package")
    code = ast.unparse(_without_docstrings(ast.parse(path.read_text(), filename=str(path))))
    return hashlib.sha256(code.encode()).hexdigest()


def fingerprint(roots: Iterable[str], config: object | None = None) -> dict[str, str]:
    """The digest of every module on the compute path of `roots`, and of `repr(config)` when one is given."""
    found = {module: source_digest(module) for module in compute_path(roots)}
    if config is not None:
        found[CONFIG_KEY] = hashlib.sha256(repr(config).encode()).hexdigest()
    return found


def digest(found: Mapping[str, str]) -> str:
    """One SHA-256 over a fingerprint's entries (in name order): equal exactly when the fingerprints are."""
    return hashlib.sha256("".join(f"{k}={v};" for k, v in sorted(found.items())).encode()).hexdigest()


def differences(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """What changed between a recorded fingerprint and the current one, one phrase per module (empty: current)."""
    changes = []
    for name in sorted(set(recorded) | set(current)):
        what = "the configuration" if name == CONFIG_KEY else name
        if name not in current:
            changes.append(f"{what} is no longer on the compute path")
        elif name not in recorded:
            changes.append(f"{what} joined the compute path")
        elif recorded[name] != current[name]:
            changes.append(f"{what} changed")
    return changes


def clear_cache() -> None:
    """Forget parsed modules (after a source file changes within one process, as the tests do)."""
    _tree.cache_clear()
