"""The environment variables a build or repro can be seen to read (part of the cache key).

Found with cheap regexes, in the ``--build`` text, the repro words (and the
shell words inside them), and the text of every script those words name:

- shell and make: ``$VAR``, ``${VAR}``, ``${VAR:-default}`` (any ``${VAR...}``),
  ``${#VAR}``, ``$(VAR)``;
- CMake and Perl: ``$ENV{VAR}``, ``ENV{VAR}``; Ruby: ``ENV["VAR"]``, ``ENV.fetch("VAR")``;
- Python: ``os.environ["VAR"]``, ``environ.get("VAR")``, ``os.getenv("VAR")``,
  ``environ.setdefault``/``pop``; C and C++: ``getenv("VAR")``;
- JavaScript: ``process.env.VAR``, ``process.env["VAR"]``.

What they cannot see (a variable read by a program the commands do not name,
``dict(os.environ)``, a name built at run time) is declared with
``--cache-env NAME`` or ``git config bisectkit.cacheEnv NAME``. Variables
bisectkit sets at each step (``BISECTKIT_*``) and those the shell sets
itself or that only say where the user stood (:data:`NOT_INPUTS`) are never
part of the key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_FORMS = re.compile("|".join([  # the first alternative that matches at a place wins
    r"(?:\$|\b)ENV(?:\.fetch\s*\(|\s*[\[{])\s*['\"]?" + _NAME,  # $ENV{VAR}, ENV["VAR"]
    r"\$" + _NAME,                                   # $VAR
    r"\$\{#?" + _NAME,                               # ${VAR}, ${VAR:-x}, ${#VAR}
    r"\$\(" + _NAME + r"\)",                         # make's $(VAR)
    r"\benviron(?:\.(?:get|setdefault|pop))?\s*[\[(]\s*[bfr]?['\"]" + _NAME,  # Python
    r"\bgetenv\s*\(\s*[bfr]?['\"]" + _NAME,          # getenv("VAR"), os.getenv('VAR')
    r"\bprocess\.env(?:\.|\[\s*['\"])" + _NAME,      # process.env.VAR
]))

#: Set by the shell itself, or saying only where the user stood (``PWD``, ``SHLVL``,
#: ``_``): their values in bisectkit's environment are not what the commands see.
NOT_INPUTS = frozenset({
    "_", "PWD", "OLDPWD", "SHLVL", "RANDOM", "SRANDOM", "LINENO", "SECONDS", "PPID",
    "BASHPID", "EPOCHSECONDS", "EPOCHREALTIME", "OPTIND", "OPTARG", "REPLY", "PIPESTATUS",
    "FUNCNAME", "HISTCMD",
})
#: Set by bisectkit at every step (``BISECTKIT_COMMIT``...): a per-step value, not an input.
OWN_PREFIX = "BISECTKIT_"
#: Scripts are read up to this much; a file with a NUL byte near its start is a binary.
TEXT_LIMIT = 4 << 20
_SNIFF = 8192


def names_in(text: str) -> set[str]:
    """Environment variable names ``text`` reads, by the forms above."""
    found = {name for match in _FORMS.finditer(text) for name in match.groups() if name}
    return {n for n in found if n not in NOT_INPUTS and not n.startswith(OWN_PREFIX)
            and not n.startswith("BASH_")}


def names_in_files(paths: Iterable[Path]) -> set[str]:
    """Names read by the text files among ``paths`` (binaries and unreadable files: none)."""
    names: set[str] = set()
    for path in paths:
        try:
            with open(path, "rb") as fh:
                data = fh.read(TEXT_LIMIT)
        except OSError:
            continue  # its digest in the key says "unreadable" already
        if b"\0" not in data[:_SNIFF]:
            names |= names_in(data.decode("utf-8", "replace"))
    return names


def valid_name(name: str) -> bool:
    """Is ``name`` usable as an environment variable name (for ``--cache-env``)?"""
    return bool(re.fullmatch(_NAME, name))


def env_part(names: Iterable[str], environ: Mapping[str, str]) -> dict[str, str | None]:
    """name -> sha256 of its value (``None``: not set; an empty value has a digest), for
    the key: values are hashed, so secrets never reach ``verdicts.json`` in clear."""
    return {name: (hashlib.sha256(environ[name].encode("utf-8", "surrogateescape"))
                   .hexdigest() if name in environ else None)
            for name in sorted(set(names))}
