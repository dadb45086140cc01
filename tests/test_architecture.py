"""The shape of the code, checked: packages in one direction of flow, no cycles.

The packages, top to bottom (a module may import its own package or any package
below it, never one above; nothing may form a cycle, between packages or modules):

    app          the entry points and the one error -> exit-code ladder
    commands     one module per command (or family of session commands)
    ui           console, live panel, observers, report formats: what the user sees
    actions      the compiler-actions level: kinds, listings, the limit bisection
    pipeline     the one owner of a run: lock, journal, steps, verify, results, outputs
    strategies   candidates and how to materialise one (patch stack, submodules, pins)
    store        what lives in .git/bisectkit: session, waiting state, cache and key, logs
    cli          argv grammar, option types, typed requests, pre-checks of commands
    execute      the pty runner, the built-in build and repro, classification
    safety       lock, journal and mover, recovery, signals, processes, atomic files
    plugin       hook specifications, the plugin manager, the typed facade
    patches      the patch stack: analysis, replay rules, patch ids, upstream, status
    git          everything that talks to git; git.shapes: partial, shallow, sparse
    engine       the pure bisection: decisions and searches
    base         model (shared values), errors, text (words), safetext

The UI sits above the pipeline, so "the pipeline never prints" is structural: no
package below ``ui`` can reach the console. This test is the map CONTRIBUTING.md
refers to; moving a module to another package is a design decision, made here.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bisectkit"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("app", ("__main__", "app")),
    ("commands", ("commands", "commands.*")),
    ("ui", ("ui", "ui.*")),
    ("actions", ("actions", "actions.*")),
    ("pipeline", ("pipeline", "pipeline.*")),
    ("strategies", ("strategies", "strategies.*")),
    ("store", ("store", "store.*")),
    ("cli", ("cli", "cli.*")),
    ("execute", ("execute", "execute.*")),
    ("safety", ("safety", "safety.*")),
    ("plugin", ("plugin", "plugin.*")),
    ("patches", ("patches", "patches.*")),
    ("git", ("git", "git.*")),
    ("engine", ("engine", "engine.*")),
    ("base", ("model", "model.*", "errors", "text", "safetext")),
]

#: Packages that may write to the terminal: everything below ui hands its words up.
LOUD = ("app", "commands", "commands.*", "ui", "ui.*")
#: Third-party libraries confined to their own package.
CONFINED = {"pygit2": ("git", "git.*"),
            "pexpect": ("execute", "execute.*"),
            "rich": ("ui", "ui.*"),
            "argparse": ("cli", "cli.*", "commands", "commands.*", "app")}

#: A module longer than this is worth a look (a warning, not a failure: a module is
#: as big as its concept, and splitting one to meet a number hides it).
WARN_MODULE_LINES = 450
MAX_FUNCTION_LINES = 50
#: Files that are mostly data (message tables): their length is their tables'.
DATA_FILES = {"plugins/iree_devices.py"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


def _layer(module: str) -> int:
    for i, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if module == pattern or (pattern.endswith(".*") and
                                     module.startswith(pattern[:-1])):
                return i
    raise AssertionError(f"bisectkit.{module} is in no layer of tests/test_architecture.py")


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """bisectkit modules imported by ``path`` (``TYPE_CHECKING`` imports included:
    a type import upward is still a dependency upward)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "bisectkit" and \
                node.level == 0:
            # ``from bisectkit import engine`` imports a module; ``from bisectkit import
            # Outcome`` uses the facade, which internal modules must not.
            names = [f"bisectkit.{a.name}" for a in node.names if a.name in modules]
            if len(names) < len(node.names):
                found.add("")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if not name.startswith("bisectkit."):
                continue
            mod = name.removeprefix("bisectkit.")
            while mod and mod not in modules:
                mod = mod.rpartition(".")[0]
            if mod:
                found.add(mod)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(p, modules) - {m} for m, p in modules.items()}


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        _layer(module)


def test_no_module_imports_upward() -> None:
    upward = []
    for module, deps in _graph().items():
        for dep in deps:
            if dep == "":
                upward.append(f"bisectkit.{module} imports the bisectkit facade "
                              "(import the defining module)")
            elif _layer(dep) < _layer(module):
                upward.append(f"bisectkit.{module} ({LAYERS[_layer(module)][0]}) imports "
                              f"bisectkit.{dep} ({LAYERS[_layer(dep)][0]})")
    assert upward == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep == "":
                continue
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []


def _third_party(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _matches(module: str, patterns: tuple[str, ...]) -> bool:
    return any(module == p or (p.endswith(".*") and module.startswith(p[:-1]))
               for p in patterns)


def test_libraries_stay_in_their_module() -> None:
    leaks = [f"bisectkit.{m} imports {lib}" for m, p in _modules().items()
             for lib, owners in CONFINED.items()
             if lib in _third_party(p) and not _matches(m, owners)]
    assert leaks == []


def test_only_the_top_packages_print() -> None:
    """Below ``ui`` nothing writes to the terminal: words are returned, or handed to a hook."""
    printing = re.compile(r"\bprint\(|sys\.std(out|err)\.write")
    loud = [f"bisectkit.{m}:{n}: {line.strip()}" for m, p in _modules().items()
            if not _matches(m, LOUD)
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if printing.search(line.split("#")[0])]
    assert loud == []


def _sources() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *(ROOT / "plugins").glob("*.py")])


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_functions_are_small(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if lines > WARN_MODULE_LINES and rel not in DATA_FILES:
        warnings.warn(f"{rel}: {lines} lines; does it still hold one concept?", stacklevel=1)
    problems = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > MAX_FUNCTION_LINES:
                problems.append(f"{rel}:{node.lineno}: {node.name}() has {size} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
    assert problems == []


def test_every_package_says_its_job() -> None:
    """Each package's ``__init__`` opens with a one-line docstring: the map reads from it."""
    silent = [str(init.relative_to(ROOT)) for init in sorted(PACKAGE.rglob("__init__.py"))
              if not (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "")
              .strip()]
    assert silent == []


def test_packages_are_at_most_two_levels_deep() -> None:
    deep = [m for m in _modules() if m.count(".") > 2]
    assert deep == []


def _package(module: str) -> str:
    return module.partition(".")[0]


def test_no_import_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        graph.setdefault(_package(module), set()).update(
            _package(d) for d in deps if d and _package(d) != _package(module))
    cycles: list[str] = []
    for start in sorted(graph):
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            node = todo.pop()
            if node == start:
                cycles.append(start)
                break
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
    assert cycles == []


def _non_public_imports(source: str, where: str) -> list[str]:
    """Imports in ``source`` of anything but the public names of ``bisectkit`` (its ``__all__``)."""
    import bisectkit

    private = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("bisectkit."):
                private.append(f"{where}: from {node.module} import ...")
            elif node.module == "bisectkit":
                private += [f"{where}: bisectkit.{a.name} is not public"
                            for a in node.names if a.name not in bisectkit.__all__]
        elif isinstance(node, ast.Import):
            private += [f"{where}: import {a.name}" for a in node.names
                        if a.name.startswith("bisectkit.")]
    return private


def test_bundled_plugins_use_only_the_public_api() -> None:
    """Plugins import ``bisectkit`` (the facade), never its modules: those may move."""
    private = [problem for path in sorted((ROOT / "plugins").glob("*.py"))
               for problem in _non_public_imports(path.read_text(encoding="utf-8"), path.name)]
    assert private == []


def test_readme_examples_use_only_the_public_api() -> None:
    """What README.md shows plugin authors is the public API, and each example parses."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    assert any("bisectkit" in block for block in blocks), "README has no python example"
    private = [problem for i, block in enumerate(blocks, 1)
               for problem in _non_public_imports(block, f"README.md python block {i}")]
    assert private == []


def test_the_public_api_is_importable() -> None:
    """Every name in ``bisectkit.__all__`` exists (a typo there would break every plugin)."""
    import bisectkit

    assert [name for name in bisectkit.__all__ if not hasattr(bisectkit, name)] == []
