"""The environment variables a build or repro can be seen to read (part of the cache key).

Found with cheap regexes, in the ``--build`` text, the repro words (and the
shell words inside them), and the text of every script those words name (and
of the files those scripts source or include, see
:mod:`bisectkit.store.commandinputs`):

- shell: ``$VAR``, ``${VAR}``, ``${VAR:-default}`` (any ``${VAR...}``),
  ``${#VAR}``, ``${!VAR}`` (``VAR`` only: the variable it names is not
  known), ``printenv VAR...``, ``[[ -v VAR ]]``/``test -v VAR``;
- make: ``$(VAR)``, ``${VAR}``, ``ifdef VAR``/``ifndef VAR``,
  ``$(origin VAR)``/``$(flavor VAR)``/``$(value VAR)`` (and, when a command
  runs make, :data:`MAKE_VARIABLES`);
- CMake and Perl: ``$ENV{VAR}``, ``ENV{VAR}``; Ruby: ``ENV["VAR"]``,
  ``ENV.fetch("VAR")``, ``ENV.key?("VAR")`` (``has_key?``, ``include?``,
  ``member?``); Tcl: ``$::env(VAR)``, ``$env(VAR)``; awk: ``ENVIRON["VAR"]``;
- Python: ``os.environ["VAR"]``, ``environ.get("VAR")``, ``os.getenv("VAR")``,
  ``environ.setdefault``/``pop``, ``"VAR" in os.environ``, ``os.environb``,
  ``os.getenvb``; C and C++: ``getenv("VAR")``, ``secure_getenv``,
  ``_wgetenv``; Go: ``os.Getenv("VAR")``, ``os.LookupEnv``; Rust:
  ``env::var("VAR")``, ``var_os``, ``env!``/``option_env!``;
- JavaScript: ``process.env.VAR``, ``process.env["VAR"]``,
  ``{VAR, OTHER: x} = process.env``, ``Deno.env.get("VAR")``.

What they cannot see (a variable read by a program the commands do not name,
``dict(os.environ)``, a name built at run time, the variable ``${!VAR}``
names) is declared with ``--cache-env NAME`` or ``git config
bisectkit.cacheEnv NAME``. Variables bisectkit sets at each step
(``BISECTKIT_*``) and those the shell sets itself or that only say where the
user stood (:data:`NOT_INPUTS`) are never part of the key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_Q = r"\s*[bfrBL]?['\"`]"  # an opening quote, with a Python, C or JS prefix
_FORMS = re.compile("|".join([  # the first alternative that matches at a place wins
    # $ENV{VAR}, ENV["VAR"], ENV.fetch("VAR"), ENV.key?("VAR")
    r"(?:\$|\b)ENV(?:\.(?:fetch|key\?|has_key\?|include\?|member\?)\s*\(?|\s*[\[{])\s*['\"]?"
    + _NAME,
    r"\$" + _NAME,                                   # $VAR
    r"\$\{[#!]?" + _NAME,                            # ${VAR}, ${VAR:-x}, ${#VAR}, ${!VAR}
    r"\$\((?:origin|flavor|value)\s+" + _NAME,      # make's $(origin VAR)
    r"\$\(" + _NAME + r"\)",                         # make's $(VAR)
    r"^[ \t]*ifn?def\s+" + _NAME,                    # make's ifdef VAR
    r"(?:\[\[?|\btest)\s+-v\s+" + _NAME,             # [[ -v VAR ]], test -v VAR
    r"\$(?:::)?env\(" + _NAME,                       # Tcl's $::env(VAR)
    r"\bENVIRON\s*\[" + _Q + _NAME,                  # awk's ENVIRON["VAR"]
    r"\benvironb?(?:\.(?:get|setdefault|pop))?\s*[\[(]" + _Q + _NAME,  # Python
    r"['\"]" + _NAME + r"['\"]\s+(?:not\s+)?in\s+(?:os\.)?environb?\b",  # "VAR" in os.environ
    r"\b(?:secure_|_w)?getenvb?\s*\(" + _Q + _NAME,  # getenv("VAR"), os.getenv('VAR')
    r"\b(?:Getenv|LookupEnv)\s*\(" + _Q + _NAME,    # Go
    r"\b(?:env::var(?:_os)?|(?:option_)?env!)\s*\(" + _Q + _NAME,  # Rust
    r"\bprocess\.env(?:\.|\[" + _Q + r")" + _NAME,  # process.env.VAR
    r"\bDeno\.env\.get\s*\(" + _Q + _NAME,           # Deno
]), re.MULTILINE)
#: Forms that name several variables: ``printenv A B``, ``const {A, B: b} = process.env``.
_PRINTENV = re.compile(r"\bprintenv((?:[ \t]+[A-Za-z_][A-Za-z0-9_]*)+)")
_DESTRUCTURED = re.compile(r"\{([^{}]*)\}\s*=\s*process\.env\b")

#: What make reads from the environment without a makefile naming it: the variables of
#: its implicit rules (``CC``, ``CFLAGS``...) and its own (``MAKEFLAGS``, ``MAKEFILES``).
MAKE_VARIABLES = frozenset({
    "AR", "AS", "CC", "CXX", "CPP", "FC", "M2C", "PC", "CO", "GET", "LEX", "YACC", "LINT",
    "MAKEINFO", "TEX", "TEXI2DVI", "WEAVE", "CWEAVE", "TANGLE", "CTANGLE", "RM",
    "ARFLAGS", "ASFLAGS", "CFLAGS", "CXXFLAGS", "COFLAGS", "CPPFLAGS", "FFLAGS", "GFLAGS",
    "LDFLAGS", "LDLIBS", "LFLAGS", "YFLAGS", "PFLAGS", "RFLAGS", "LINTFLAGS", "TARGET_ARCH",
    "MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS", "MAKEFILES",
})
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
    for match in _PRINTENV.finditer(text):
        found.update(match.group(1).split())
    for match in _DESTRUCTURED.finditer(text):
        # ``{A, B: b, C = "x", ...rest}``: the names before ``:`` and ``=``.
        for item in match.group(1).split(","):
            name = re.match(r"\s*" + _NAME + r"\s*(?:[:=]|$)", item)
            if name:
                found.add(name.group(1))
    return {n for n in found if n not in NOT_INPUTS and not n.startswith(OWN_PREFIX)
            and not n.startswith("BASH_")}


def read_text(path: Path) -> str | None:
    """The text of a file (up to :data:`TEXT_LIMIT`); None for a binary or an unreadable
    file (its digest in the key says "unreadable" already)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(TEXT_LIMIT)
    except OSError:
        return None
    return None if b"\0" in data[:_SNIFF] else data.decode("utf-8", "replace")


def names_in_files(paths: Iterable[Path]) -> set[str]:
    """Names read by the text files among ``paths`` (binaries and unreadable files: none)."""
    names: set[str] = set()
    for path in paths:
        text = read_text(path)
        if text is not None:
            names |= names_in(text)
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
