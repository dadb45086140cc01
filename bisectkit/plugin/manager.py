"""Plugin discovery and the plugin manager (built in a function, never at import time).

Order, later wins for ``firstresult`` hooks:

1. built-ins (classification, build, repro, console, step logs);
2. ``-p no:NAME`` blocks a plugin by name before anything below loads;
3. the ``bisectkit`` entry-point group (off with ``BISECTKIT_DISABLE_PLUGIN_AUTOLOAD=1``);
4. ``-p NAME`` (a bundled plugin from ``plugins/`` or an importable module),
   ``-p PATH.py``, then ``BISECTKIT_PLUGINS`` (comma-separated, same forms);
5. git config ``bisectkit.plugins`` (comma- or space-separated, may repeat).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import pkgutil
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pluggy

from bisectkit.errors import BadInput
from bisectkit.model import PROJECT
from bisectkit.plugin import hookspecs

#: Bundled plugins live in the repo's top-level ``plugins/``, installed as this package.
BUNDLED_PACKAGE = "bisectkit_plugins"
ENTRY_POINT_GROUP = "bisectkit"
AUTOLOAD_OFF = "BISECTKIT_DISABLE_PLUGIN_AUTOLOAD"
ENV_PLUGINS = "BISECTKIT_PLUGINS"
#: The origin of the built-in plugins (``bisectkit plugins`` shows it).
BUILTIN_ORIGIN = "built-in"




@dataclass
class PluginRequest:
    """The plugin choices of one command line, before anything is imported."""

    names: list[tuple[str, str]]  # (spec, origin)
    blocked: list[str]


def scan_argv(argv: Sequence[str]) -> list[str]:
    """``-p``/``--plugin`` values, up to ``--`` (plugins must be known before parsing)."""
    found: list[str] = []
    it = iter(argv)
    for word in it:
        if word == "--":
            break
        if word in ("-p", "--plugin"):
            value = next(it, None)
            if value is not None:
                found.append(value)
        elif word.startswith("--plugin="):
            found.append(word.split("=", 1)[1])
        elif word.startswith("-p") and len(word) > 2:
            found.append(word[2:])
    return found


def request(argv_plugins: Sequence[str], env: dict[str, str],
            config_values: Iterable[str]) -> PluginRequest:
    """Collect plugin specs and ``no:`` blocks from ``-p``, the environment and git config."""
    specs: list[tuple[str, str]] = []
    blocked: list[str] = []
    sources = [("-p", [argv_plugins])]
    sources.append((ENV_PLUGINS, [_split(env.get(ENV_PLUGINS, ""))]))
    sources.append(("git config bisectkit.plugins", [_split(v) for v in config_values]))
    for origin, groups in sources:
        for group in groups:
            for spec in group:
                if spec.startswith("no:"):
                    blocked.append(spec[3:])
                else:
                    specs.append((spec, origin))
    return PluginRequest(specs, blocked)


def _split(value: str) -> list[str]:
    return [v for v in re.split(r"[,\s]+", value) if v]


def plugin_name(spec: str) -> str:
    """The name a spec registers under (and that ``no:NAME`` blocks)."""
    if spec.endswith(".py") or os.sep in spec:
        return Path(spec).stem
    return spec


def make_plugin_manager(builtins: Sequence[tuple[str, object]], req: PluginRequest,
                        env: dict[str, str]) -> tuple[pluggy.PluginManager, dict[str, str]]:
    """Register built-ins, entry points and requested plugins in the documented order."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    origins: dict[str, str] = {}
    for name in req.blocked:
        pm.set_blocked(name)
    for name, plugin in builtins:
        _register(pm, plugin, name, BUILTIN_ORIGIN, origins)
    if env.get(AUTOLOAD_OFF, "") not in ("1", "true", "yes"):
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                         key=lambda e: e.name):
            if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
                continue
            dist = ep.dist.name if ep.dist else "?"
            try:
                plugin = ep.load()
            except Exception as exc:
                raise BadInput(f"plugin '{ep.name}' (entry point of {dist}) failed to load: "
                               f"{type(exc).__name__}: {exc}") from exc
            _register(pm, plugin, ep.name, f"entry point ({dist})", origins)
    for spec, origin in req.names:
        name = plugin_name(spec)
        if pm.is_blocked(name) or pm.has_plugin(name):
            continue
        module, where = _import(spec)
        _register(pm, module, name, f"{origin} ({where})", origins)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise BadInput(f"plugin '{_name_of(pm, exc.plugin)}': {exc}") from exc
    return pm, origins


def _register(pm: pluggy.PluginManager, plugin: object, name: str, origin: str,
              origins: dict[str, str]) -> None:
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise BadInput(f"plugin '{name}' ({origin}): {exc}") from exc
    except ValueError as exc:  # already registered under another name
        raise BadInput(f"plugin '{name}' ({origin}): {exc}") from exc
    origins[name] = origin


def _name_of(pm: pluggy.PluginManager, plugin: object) -> str:
    return pm.get_name(plugin) or repr(plugin)


def _import(spec: str) -> tuple[ModuleType, str]:
    """Import a plugin given as a path, a bundled plugin name or a module name."""
    try:
        if spec.endswith(".py") or os.sep in spec:
            path = Path(spec).expanduser().resolve()
            if not path.is_file():
                raise BadInput(f"plugin '{spec}': no such file")
            mod_name = f"bisectkit_user_plugin_{plugin_name(spec)}"
            loader_spec = importlib.util.spec_from_file_location(mod_name, path)
            assert loader_spec is not None and loader_spec.loader is not None
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[mod_name] = module
            loader_spec.loader.exec_module(module)
            return module, str(path)
        bundled = f"{BUNDLED_PACKAGE}.{spec}"
        if importlib.util.find_spec(BUNDLED_PACKAGE) is not None and \
                importlib.util.find_spec(bundled) is not None:
            return importlib.import_module(bundled), "bundled"
        return importlib.import_module(spec), "module"
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(f"plugin '{spec}' failed to import: {type(exc).__name__}: {exc}") from exc


def bundled() -> list[str]:
    """The names of the bundled plugins (``-p NAME``); none where they are not installed."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)
                  if not m.name.startswith("_"))


def load_bundled(name: str) -> ModuleType | None:
    """Bundled plugin ``name``, imported (registered nowhere); None if it fails to import."""
    try:
        return importlib.import_module(f"{BUNDLED_PACKAGE}.{name}")
    except Exception:  # said when it is loaded with -p: here it only cannot be named
        return None


def source_file(plugin: object) -> str | None:
    """The file a plugin (a module, or an object of a class) was loaded from."""
    path = getattr(plugin, "__file__", None) or getattr(
        sys.modules.get(type(plugin).__module__), "__file__", None)
    return path if isinstance(path, str) else None


def source_files(pm: pluggy.PluginManager, origins: dict[str, str]) -> dict[str, str]:
    """The source file of every loaded plugin that is not bisectkit itself (real path ->
    what it is), whatever loaded it: ``-p``, BISECTKIT_PLUGINS, git config, entry points."""
    files: dict[str, str] = {}
    for name, plugin in pm.list_name_plugin():
        path = source_file(plugin) if plugin is not None else None
        if path and origins.get(name) != BUILTIN_ORIGIN:
            files.setdefault(os.path.realpath(path), f"plugin {name} ({origins.get(name)})")
    return files


def describe(pm: pluggy.PluginManager, origins: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, origin, hooks) of every loaded plugin, in load order."""
    rows = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        rows.append((name, origins.get(name, "?"), ", ".join(hooks)))
    return rows
