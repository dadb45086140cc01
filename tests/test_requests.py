"""The translators between the command line and typed requests, in-process (no git)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bisectkit import strategies
from bisectkit.cli import requests
from bisectkit.commands.registry import build_parser
from bisectkit.errors import BadInput
from bisectkit.model import (
    AdvanceRequest,
    IntegrateRequest,
    Rules,
    RunOptions,
    StackRequest,
    StartRequest,
    SubmoduleRequest,
    Terms,
)


def _start(*words: str, default_submodule: str | None = None) -> StartRequest:
    args = build_parser(git_mode=True).parse_args(["start", *words])
    given = requests.given(args, strategies.options(), lambda alternative: default_submodule)
    return strategies.request_from(given)


def _run_options(words: list[str], root: Path) -> RunOptions:
    args = build_parser(git_mode=True).parse_args(["run", *words])
    return requests.run_options(args, root, None, False, requests.PluginState())


def test_start_requests_are_typed() -> None:
    assert _start("--submodule", "third_party/llvm", "B", "G1", "G2") == SubmoduleRequest(
        "third_party/llvm", "B", ("G1", "G2"))
    assert _start("--integrate", "--submodule", "a", "--submodule", "b", "B", "G") == \
        IntegrateRequest("B", ("G",), ("a", "b"))
    assert _start("--stack", "--at", "X", default_submodule="sub") == StackRequest("sub", "X")
    assert _start("--find-fix", "--on-conflict", "drop", "B", "G",
                  default_submodule="sub") == SubmoduleRequest(
        "sub", "B", ("G",), on_conflict="drop", terms=Terms("broken", "fixed", True))
    assert _start("--advance", "--to", "T", "--linear", "--on-conflict", "drop",
                  default_submodule="sub") == AdvanceRequest("sub", to="T", linear=True,
                                                             on_conflict="drop")


@pytest.mark.parametrize("words", [
    ["--submodule", "s", "--upstream", "u", "--on-conflict", "drop", "--all-parents", "B", "G"],
    ["--integrate", "--all-parents", "--submodule", "a", "--submodule", "b", "B", "G1", "G2"],
    ["--submodule", "s", "--stack", "--at", "X"],
    ["--advance", "--submodule", "s", "--to", "T", "--linear"],
    ["--find-fix", "--submodule", "s", "B", "G"],
])
def test_a_request_is_written_back_as_the_start_it_came_from(words: list[str]) -> None:
    request = _start(*words)
    again = strategies.start_argv(request)
    assert again[0] == "start" and _start(*again[1:]) == request


@pytest.mark.parametrize(("words", "error"), [
    (["--stack", "--submodule", "s", "--at", "X", "B", "G"], "--stack takes one --submodule"),
    (["--submodule", "s", "--at", "X", "B", "G"], "--at goes with --stack"),
    (["--integrate", "--on-conflict", "drop", "B", "G"], "--on-conflict goes with a submodule"),
    (["--submodule", "s", "B"], "no --good REV: give a good revision, older than --bad"),
    (["--find-fix", "--submodule", "s", "B"], "no --good REV: give a broken revision"),
    (["--submodule", "a", "--submodule", "b", "B", "G"], "--submodule is given more than once"),
    (["B", "G"], "say what to bisect"),
    (["--term-old", "x", "--term-new", "x", "--submodule", "s", "B", "G"], "must differ"),
    (["--find-fix", "--term-old", "fixed", "--submodule", "s", "B", "G"],
     "can't change the meaning of the term 'fixed'"),
    (["--find-fix", "--term-new", "broken", "--submodule", "s", "B", "G"],
     "can't change the meaning of the term 'broken'"),
    (["--term-old", "bad", "--submodule", "s", "B", "G"], "the term 'bad' (it names the new"),
    (["--term-new", "old", "--submodule", "s", "B", "G"], "the term 'old' (it names the old"),
    (["--find-fix", "--term-new", "bad", "--submodule", "s", "B", "G"], "'bad' (it names the old"),
    (["--integrate", "--at", "X", "B", "G"], "--at goes with --stack"),
    (["--stack", "--integrate", "--at", "X"], "--stack takes one --submodule"),
    (["--stack", "--at", "X", "--on-conflict", "drop"], "--on-conflict goes with a submodule"),
    (["--advance", "--stack", "--at", "X"], "an advance takes no good/bad revisions, --stack"),
    (["--advance", "--integrate"], "an advance takes no good/bad revisions"),
    (["--advance", "B"], "an advance takes no good/bad revisions"),
    (["--advance", "--find-fix"], "an advance has no --find-fix"),
    (["--advance", "--all-parents"], "an advance has no --all-parents"),
    (["--advance", "--submodule", "a", "--submodule", "b"], "advance one submodule at a time"),
    # An option of a strategy not chosen is refused, never silently ignored.
    (["--submodule", "s", "--to", "X", "B", "G"], "--to goes with --advance"),
    (["--stack", "--at", "X", "--linear"], "--linear goes with --advance"),
])
def test_bad_start_requests_are_refused_in_one_line(words: list[str], error: str) -> None:
    with pytest.raises(BadInput, match=error.replace("(", r"\(").replace("[", r"\[")):
        _start(*words)


def test_a_term_may_be_a_mark_word_of_its_own_side() -> None:
    assert _start("--term-old", "old", "--term-new", "bad", "--submodule", "s", "B",
                  "G").terms == Terms("old", "bad")
    assert _start("--find-fix", "--term-old", "bad", "--term-new", "good", "--submodule", "s",
                  "B", "G").terms == Terms("bad", "good", True)


def test_run_options_survive_a_round_trip_through_argv(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    words = ["--build", "true", "--bad-if=-crash", "--skip-if", "device lost", "--timeout",
             "2.5", "--timeout-verdict", "bad", "--keep-output", "1K", "--no-verify",
             "--max-env-skips", "0", "--no-cache", "--cache-env", "CC", "--cache-env=$CXX",
             "--cache-env", "CC", "--scheduler", "tcp://127.0.0.1:8786",
             "--no-workers-timeout", "60", "--", "sh", "-c", "exit 1"]
    opts = _run_options(words, tmp_path)
    assert opts.parallel.no_workers_timeout == 60
    assert opts.repro == (sh, "-c", "exit 1")
    assert opts.cache_env == ("CC", "CXX")
    assert opts.rules == Rules(bad_if=("-crash",), skip_if=("device lost",))
    assert (opts.timeout, opts.timeout_verdict, opts.keep_output) == (2.5, "bad", 1024)
    assert (opts.verify_ends, opts.max_env_skips, opts.use_cache) == (False, 0, False)
    again = _run_options(requests.run_options_argv(opts), tmp_path)
    # --no-cache is a choice of this run, not of how a step is tested: not written back;
    # the repro given as a path is resolved (a symlinked sh becomes its target).
    assert Path(again.repro[0]) == Path(sh).resolve()
    assert again == RunOptions(**{**vars(opts), "use_cache": True, "repro": again.repro})


def test_run_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="repro not found: no-such-repro-here"):
        _run_options(["--", "no-such-repro-here"], tmp_path)
    with pytest.raises(BadInput, match="invalid --bad-if regex"):
        _run_options(["--bad-if", "(", "--", "sh"], tmp_path)
    with pytest.raises(BadInput, match="--build: command not found: no-such-tool"):
        _run_options(["--build", "no-such-tool -j8", "--", "sh"], tmp_path)
    with pytest.raises(BadInput, match="no repro command given"):
        _run_options([], tmp_path)
    with pytest.raises(BadInput, match="--no-workers-timeout goes with --scheduler"):
        _run_options(["--no-workers-timeout", "5", "--", "sh"], tmp_path)


def test_run_flags_refuse_unwritable_outputs(tmp_path: Path) -> None:
    parse = build_parser(git_mode=True).parse_args
    flags = requests.run_flags(parse(["run", "--json", "-", "--report", str(tmp_path / "r.md"),
                                      "--", "sh"]))
    assert flags.output_files() == [str(tmp_path / "r.md")]
    with pytest.raises(BadInput, match="--trace .*: directory .* does not exist"):
        requests.run_flags(parse(["run", "--trace", str(tmp_path / "no" / "t.json"), "--",
                                  "sh"]))


@pytest.mark.parametrize(("terms", "words"), [
    (Terms(), []),
    (Terms.of(find_fix=True), ["--find-fix"]),
    (Terms("before", "after"), ["--term-old", "before", "--term-new", "after"]),
    (Terms("broken", "works", True), ["--find-fix", "--term-new", "works"]),
])
def test_terms_are_written_back_as_given(terms: Terms, words: list[str]) -> None:
    assert requests.terms_argv(terms) == words
    if words:
        assert _start(*words, "B", "G", default_submodule="s").terms == terms
