"""Plugin discovery, blocking, entry points, a plugin replacing the repro, step logs, docs."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli, snapshot

from bisectkit.plugin import hookspecs

ROOT = Path(__file__).resolve().parents[1]
GOOD_IF = "device .* not found"


def run_args(world: World, *extra: str, repro: tuple[str, ...] = ("./repro.sh",)) -> list[str]:
    return ["run", *extra, "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
            "--good-if", GOOD_IF, "--", *repro]


def verdict_plugin(path: Path, verdict: str) -> Path:
    """A plugin that classifies every step as ``verdict``."""
    path.write_text(textwrap.dedent(f"""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_classify(step, outcome):
            step.reason = "{path.stem} says {verdict}"
            return "{verdict}"
    """))
    return path


def entry_point_dist(site: Path, name: str = "ep") -> Path:
    """A tiny installed distribution declaring a ``bisectkit`` entry point."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{name}_plugin.py").write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_step_start(step):
            print(f"entry-point plugin saw step {step.index}")
    """))
    dist = site / f"{name}_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[bisectkit]\n{name} = {name}_plugin\n")
    return site


def plugin_names(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line and not line.startswith(" ")]


def test_discovery_order_and_origins(world: World, tmp_path: Path):
    site = entry_point_dist(tmp_path / "site")
    a = verdict_plugin(tmp_path / "a.py", "good")
    b = verdict_plugin(tmp_path / "b.py", "good")
    c = verdict_plugin(tmp_path / "c.py", "good")
    world.git(world.superproject, "config", "bisectkit.plugins", str(c))
    env = {"PYTHONPATH": str(site), "BISECTKIT_PLUGINS": str(b)}
    r = cli(world, "plugins", "-p", str(a), extra_env=env)
    assert r.returncode == 0, r.stderr
    assert plugin_names(r.stdout) == ["exit-status", "rules", "build", "repro", "console",
                                      "step-log", "markdown-report", "chrome-trace",
                                      "json-result", "ep", "a", "b", "c"]
    assert "from:  entry point (ep-plugin)" in r.stdout
    # A long path breaks its line: read the lines joined.
    assert flat(f"from:  -p ({a})") in flat(r.stdout)
    assert flat(f"from:  BISECTKIT_PLUGINS ({b})") in flat(r.stdout)
    assert flat(f"from:  git config bisectkit.plugins ({c})") in flat(r.stdout)
    assert "hooks: bisectkit_step_start" in r.stdout

    blocked = cli(world, "plugins", "-p", "no:ep", "-p", "no:step-log", "-p", "no:b",
                  "-p", str(a), extra_env=env)
    assert plugin_names(blocked.stdout) == ["exit-status", "rules", "build", "repro", "console",
                                            "markdown-report", "chrome-trace", "json-result",
                                            "a", "c"]
    no_autoload = cli(world, "plugins", extra_env={**env, "BISECTKIT_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "ep" not in plugin_names(no_autoload.stdout)


def test_later_plugins_win(world: World, tmp_path: Path):
    bad = verdict_plugin(tmp_path / "always_bad.py", "bad")
    good = verdict_plugin(tmp_path / "always_good.py", "good")
    # --no-verify: an all-bad (all-good) classifier is the point here, not a mistake.
    r = cli(world, *run_args(world, "-p", str(bad), "--no-verify"))
    assert f"{world.sha(1)} is the first bad commit" in r.stdout, r.stdout + r.stderr
    r = cli(world, *run_args(world, "-p", str(bad), "--no-verify"),
            extra_env={"BISECTKIT_PLUGINS": str(good)})
    assert f"{world.sha(300)} is the first bad commit" in r.stdout, r.stdout + r.stderr
    assert "always_good says good" in r.stdout


def test_entry_point_plugin_runs_at_every_step(world: World, tmp_path: Path):
    site = entry_point_dist(tmp_path / "site")
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--json", str(out)), extra_env={"PYTHONPATH": str(site)})
    assert r.returncode == 0, r.stderr
    steps = json.loads(out.read_text())["steps"]
    for step in steps:
        assert f"entry-point plugin saw step {step['index']}" in r.stdout


def readme_plugin() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```python\n(# my_repro\.py.*?)```", text, re.S)
    assert match, "README lost its example plugin"
    return match.group(1)


def test_readme_plugin_replaces_the_repro(world: World, tmp_path: Path):
    code = readme_plugin()
    assert len(code.strip().splitlines()) <= 20
    plugin = tmp_path / "my_repro.py"
    plugin.write_text(code)
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = cli(world, "run", "-p", str(plugin), "--submodule", SUBMODULE, "--good", world.sha(0),
            "--bad", world.sha(300), "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    assert {s["reason"] for s in steps} == {"bug.txt says 'ok'", "bug.txt says 'miscompile'"}
    assert snapshot(world) == before


def test_no_repro_and_no_repro_plugin_is_refused(world: World):
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0),
            "--bad", world.sha(300))
    assert r.returncode == 2
    assert "no repro command given" in r.stderr


@pytest.mark.parametrize("content, words", [
    ("import nonexistent_module_xyz\n", "failed to import: ModuleNotFoundError"),
    ("def broken(:\n", "failed to import: SyntaxError"),
    ("from bisectkit import hookimpl\n\n@hookimpl\ndef bisectkit_no_such_hook(step):\n"
     "    pass\n", "unknown hook 'bisectkit_no_such_hook'"),
    ("from bisectkit import hookimpl\n\n@hookimpl\ndef bisectkit_classify(stepp, outcome):\n"
     "    pass\n", "stepp"),
])
def test_broken_plugins_are_one_error_naming_them(world: World, tmp_path: Path, content: str,
                                                  words: str):
    plugin = tmp_path / "broken_plugin.py"
    plugin.write_text(content)
    before = snapshot(world)
    r = cli(world, *run_args(world, "-p", str(plugin)))
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "broken_plugin" in lines[0] and words in lines[0]
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()


def test_unknown_plugin_name(world: World):
    r = cli(world, *run_args(world, "-p", "no_such_plugin_anywhere"))
    assert r.returncode == 2
    assert "plugin 'no_such_plugin_anywhere' failed to import" in r.stderr


def test_blocking_the_console_observer_silences_the_pipeline_but_not_the_answer(world: World):
    """The pipeline never prints: its step headers, patch actions and progress lines
    reach the terminal through the ``console`` observer, so ``-p no:console`` (as the
    README says) silences them with the verdict lines and the summary. The answer,
    printed by the command itself, stays."""
    args = ("run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
            "--good-if", "device .* not found", "--check-stack")
    loud = cli(world, *args, "--", "./repro.sh")
    assert loud.returncode == 0, loud.stderr
    progress = [f"[step 1] testing {world.sha(150)[:12]} upstream commit 150",
                "    21 files written",
                f"checking {world.sha(200)[:12]} without the patch stack",
                f"[step 1] {world.sha(150)[:12]} good", "summary:"]
    for line in progress:
        assert line in loud.stdout
    quiet = cli(world, *args, "-p", "no:console", "--", "./repro.sh")
    assert quiet.returncode == 0, quiet.stderr
    for line in progress:
        assert line not in quiet.stdout
    assert f"{world.sha(200)} is the first bad commit" in quiet.stdout


def test_plugin_options_reach_the_plugin_and_the_cache_key(world: World, tmp_path: Path):
    plugin = tmp_path / "threshold.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        state = {}

        @hookimpl
        def bisectkit_addoption(parser):
            parser.add_argument("--needle", default="miscompile")

        @hookimpl
        def bisectkit_configure(config):
            state["needle"] = config.option.needle

        @hookimpl
        def bisectkit_classify(step, outcome):
            step.reason = f"looked for {state['needle']}"
            return "bad" if state["needle"] in outcome.output else "good"
    """))
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "-p", str(plugin), "--needle", "miscompiled",
                             "--json", str(out)))
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stderr
    steps = json.loads(out.read_text())["steps"]
    assert all(s["reason"] == "looked for miscompiled" for s in steps)
    # Same trees, different plugin option: nothing may come from the cache.
    r = cli(world, *run_args(world, "-p", str(plugin), "--needle", "no such text",
                             "--no-verify", "--json", str(out)))
    steps = json.loads(out.read_text())["steps"]
    assert all(s["source"] == "run" for s in steps)
    assert f"{world.sha(300)} is the first bad commit" in r.stdout
    assert "--needle" in cli(world, "run", "-p", str(plugin), "-h").stdout


def test_show_step_prints_kept_output(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--json", str(out)))
    assert r.returncode == 0
    steps = json.loads(out.read_text())["steps"]
    first = cli(world, "show-step", "1")
    assert first.returncode == 0
    assert first.stdout.startswith(f"# step 1: {steps[0]['commit']} good")
    assert "# --- build ---\nbuilt against" in first.stdout
    assert "HAL device 'vulkan' not found" in first.stdout
    assert Path(steps[0]["log"]).read_text() == first.stdout
    last = len(steps)
    assert "miscompiled" in cli(world, "show-step", str(last)).stdout
    missing = cli(world, "show-step", "99")
    assert missing.returncode == 2
    assert f"steps with output: {', '.join(str(i) for i in range(1, last + 1))}" in missing.stderr


def test_timeout_verdict_option(world: World, tmp_path: Path):
    repro = tmp_path / "hang.sh"
    repro.write_text(f'#!/bin/sh\n[ "$BISECTKIT_COMMIT" = {world.sha(150)} ] && sleep 30\n'
                     "exec ./repro.sh\n")
    repro.chmod(0o755)
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--timeout", "1", "--timeout-verdict", "bad",
                             "--json", str(out), repro=(str(repro),)))
    assert r.returncode == 0, r.stderr
    first = json.loads(out.read_text())["steps"][0]
    assert (first["commit"], first["verdict"], first["reason"]) == (
        world.sha(150), "bad", "timed out after 1 s")
    # 150 now looks bad, so the bisect converges below it: the wrong answer, as asked.
    assert f"{world.sha(150)} is the first bad commit" in r.stdout


def test_every_hook_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    hooks = [n for n in dir(hookspecs) if n.startswith("bisectkit_")]
    assert len(hooks) >= 8
    for name in hooks:
        assert f"`{name}(" in readme, f"{name} is not documented in the README"
        doc = getattr(hookspecs, name).__doc__ or ""
        assert ":param" in doc, f"{name} has no documented parameters"
    firstresult = [n for n in hooks if "Stops at first non-None result." in
                   (getattr(hookspecs, n).__doc__ or "")]
    assert sorted(firstresult) == ["bisectkit_build", "bisectkit_classify", "bisectkit_repro"]


def test_end_of_run_hooks_get_the_documented_dicts(world: World, tmp_path: Path):
    """``bisectkit_run_done`` and ``bisectkit_session_finish`` get JSON dicts (copies), as
    the README documents them: a plugin indexing them works, and cannot change the result."""
    plugin = tmp_path / "summary.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_run_done(steps, terms):
            bad = sum(1 for s in steps if s["verdict"] == "bad")
            print(f"plugin summary: {bad} {terms['new']}")
            steps[0]["verdict"] = "tampered"

        @hookimpl
        def bisectkit_session_finish(result):
            print(f"plugin result: {result['status']} {result['first_bad']}")
    """))
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "-p", str(plugin), "--json", str(out)))
    assert r.returncode == 0, r.stderr
    assert re.search(r"plugin summary: \d+ bad", r.stdout), r.stdout
    assert f"plugin result: found {world.sha(200)}" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    assert "tampered" not in {s["verdict"] for s in steps}


def test_a_plugin_that_raises_at_the_end_costs_none_of_the_output_files(world: World,
                                                                        tmp_path: Path):
    """The output formats are built-in ``bisectkit_session_finish`` plugins that go first:
    a user's plugin raising there stops the command (exit 3) after ``--json``, ``--trace``
    and ``--report`` are written; it got the same result and the trace."""
    plugin = tmp_path / "late.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_session_finish(result, trace):
            spans = sum(1 for e in trace["traceEvents"] if e["name"] == "repro")
            print(f"plugin saw {result['status']} and {spans} repro spans")
            raise RuntimeError("disk quota of the results server")
    """))
    out = {name: tmp_path / f"out.{name}" for name in ("json", "trace", "md")}
    r = cli(world, *run_args(world, "-p", str(plugin), "--json", str(out["json"]),
                             "--trace", str(out["trace"]), "--report", str(out["md"])))
    assert r.returncode == 3, r.stderr
    assert "late" in r.stderr and "bisectkit_session_finish" in r.stderr
    result = json.loads(out["json"].read_text())
    assert result["status"] == "found" and result["first_bad"] == world.sha(200)
    repros = [e for e in json.loads(out["trace"].read_text())["traceEvents"]
              if e["name"] == "repro"]
    assert len(repros) == sum(1 for s in result["steps"] if s["reason"] != "cached") > 0
    assert f"plugin saw found and {len(repros)} repro spans" in r.stdout
    assert world.sha(200)[:12] in out["md"].read_text()


def test_a_plugin_that_calls_sys_exit_cannot_turn_an_aborted_run_into_exit_0(world: World,
                                                                           tmp_path: Path):
    """``sys.exit(0)`` in a plugin's ``bisectkit_session_finish`` is a plugin that raised
    (exit 3, named): on a run that stopped it used to replace the stop, and the command
    said nothing and exited 0, "first bad commit found" to the script that called it."""
    plugin = tmp_path / "quitter.py"
    plugin.write_text(textwrap.dedent("""
        import sys
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_session_finish(result, trace):
            sys.exit(0)
    """))
    out = tmp_path / "out.json"
    before = snapshot(world)
    r = cli(world, *run_args(world, "-p", str(plugin), "--json", str(out),
                             repro=("sh", "-c", "exit 130")))
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "exit 130" in r.stderr and "restored" in r.stderr + r.stdout
    assert json.loads(out.read_text())["status"] == "aborted"
    assert snapshot(world) == before
    # On a run that answered, it is the plugin's failure: exit 3 naming it, not exit 0.
    r = cli(world, *run_args(world, "-p", str(plugin), "--json", str(out)))
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "quitter" in r.stderr and "bisectkit_session_finish" in r.stderr
    assert json.loads(out.read_text())["first_bad"] == world.sha(200)
    assert snapshot(world) == before


def test_a_plugin_that_raises_when_the_steps_are_over_costs_no_output_file(world: World,
                                                                          tmp_path: Path):
    """A plugin raising in ``bisectkit_run_done`` stops the command (exit 3, named) once
    the answer is shown and ``--json`` and ``--trace`` are written."""
    plugin = tmp_path / "summing.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_run_done(steps, terms):
            raise RuntimeError("the dashboard is down")
    """))
    out = {name: tmp_path / f"out.{name}" for name in ("json", "trace")}
    r = cli(world, *run_args(world, "-p", str(plugin), "--json", str(out["json"]),
                             "--trace", str(out["trace"])))
    assert r.returncode == 3, r.stderr
    assert "summing" in r.stderr and "bisectkit_run_done" in r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert json.loads(out["json"].read_text())["first_bad"] == world.sha(200)
    assert json.loads(out["trace"].read_text())["traceEvents"]


def test_an_output_whose_writer_is_blocked_is_refused(world: World, tmp_path: Path):
    """``-p no:json-result`` with ``--json FILE`` would end the run without the file asked
    for: one line, exit 2, nothing touched; blocking a format not asked for is fine."""
    before = snapshot(world)
    r = cli(world, *run_args(world, "-p", "no:json-result", "--json", str(tmp_path / "r.json")))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "bisectkit: error: --json is written by the built-in plugin 'json-result', which "
        "-p no:json-result blocks; drop one of the two"]
    assert snapshot(world) == before and not (tmp_path / "r.json").exists()
    r = cli(world, *run_args(world, "-p", "no:chrome-trace", "--json", str(tmp_path / "r.json")))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "found"
