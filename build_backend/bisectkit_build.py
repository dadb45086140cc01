"""bisectkit's build backend: setuptools', with the man pages in editable wheels too.

setuptools leaves ``[tool.setuptools.data-files]`` out of the wheels it builds for
``pip install -e`` (pypa/setuptools#3399), so after the README's ``pip install -e .``
no ``git-bisect-patched(1)`` was installed and ``git bisect-patched --help`` (git runs
``man git-bisect-patched``) found no page. :func:`build_editable` adds each data file
where a regular wheel has it, ``<name>-<version>.data/data/<dir>/<file>`` (listed in
RECORD), so pip installs it into ``<prefix>/<dir>`` and uninstalls it, as for a wheel.
A copy, as every editable install copies data files: ``pip install -e .`` again after
regenerating the pages. Every other hook is setuptools' own.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the other hooks, unchanged)

# Fixed, so the same checkout builds the same wheel (zip needs a date from 1980 on).
_DATE = (1980, 1, 1, 0, 0, 0)


def build_editable(wheel_directory: str, config_settings: dict[str, object] | None = None,
                   metadata_directory: str | None = None) -> str:
    """PEP 660's hook: setuptools' editable wheel, plus the data files."""
    name: str = _setuptools.build_editable(wheel_directory, config_settings,
                                           metadata_directory)
    add_data_files(Path(wheel_directory, name), data_files(Path("pyproject.toml")))
    return name


def data_files(pyproject: Path) -> dict[str, list[str]]:
    """``[tool.setuptools.data-files]``: install directory -> source files."""
    import tomllib  # Python 3.11 and newer, as bisectkit requires

    with pyproject.open("rb") as f:
        config = tomllib.load(f)
    files: dict[str, list[str]] = config["tool"]["setuptools"].get("data-files", {})
    return files


def add_data_files(wheel: Path, files: dict[str, list[str]]) -> None:
    """Add ``files`` to ``wheel``'s data directory (those not in it yet: a setuptools that
    adds them itself is left alone), rewriting the wheel atomically."""
    with zipfile.ZipFile(wheel) as old:
        names = old.namelist()
        record = next(n for n in names if n.count("/") == 1 and n.endswith(".dist-info/RECORD"))
        data = record.split("/")[0].removesuffix(".dist-info") + ".data/data"
        added = {f"{data}/{target}/{Path(source).name}": Path(source).read_bytes()
                 for target, sources in files.items() for source in sources}
        added = {arcname: content for arcname, content in added.items() if arcname not in names}
        if not added:
            return
        lines = old.read(record).decode("utf-8").splitlines()
        partial = wheel.with_name(wheel.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as new:
            for arcname, content in added.items():
                info = zipfile.ZipInfo(arcname, _DATE)
                info.external_attr = 0o644 << 16
                new.writestr(info, content, zipfile.ZIP_DEFLATED)
                lines.insert(-1 if lines and lines[-1].startswith(record) else len(lines),
                             f"{arcname},{_hash(content)},{len(content)}")
            for info in old.infolist():
                if info.filename != record:
                    new.writestr(info, old.read(info))
            new.writestr(old.getinfo(record), "\n".join(lines) + "\n")
    os.replace(partial, wheel)


def _hash(content: bytes) -> str:
    """A RECORD hash: ``sha256=`` and the urlsafe base64 digest without padding."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")
