"""The documentation keeps up with the code (datasette-style meta-tests).

Every hook in ``kevolve/hookspecs.py`` has a section in ``docs/plugins/hooks.md`` that shows its specification
exactly; every command and option of the command line is in ``docs/cli.md``; the README stays a short front page
that keeps its two commands. The sources are read as text and parsed with ``ast`` (nothing is imported), so
these tests take milliseconds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKSPECS = ROOT / "core/src/kevolve/hookspecs.py"
HOOKS_PAGE = ROOT / "docs/plugins/hooks.md"
CLI_PAGE = ROOT / "docs/cli.md"
README = ROOT / "README.md"

#: the README's two commands, character for character: CI and other tooling run them from the README
RUN_COMMAND = ("python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 ./core ./backends/cpu "
               "&& kevolve optimize softmax --target cpu --budget 12")
TEST_COMMAND = ("python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 ./core ./backends/cpu "
                "./backends/triton './backends/nvidia[cuda]' ./backends/amd ./backends/mtia_sim ./providers/anthropic "
                "./providers/openai pytest pytest-xdist jsonschema && python -m pytest -q -n 3 --dist worksteal "
                "--durations=30 tests backends/*/tests")
README_MAX_LINES = 150


def hookspecs() -> dict[str, str]:
    """Hook name -> its specification as written in hookspecs.py (decorator, signature, docstring)."""
    source = HOOKSPECS.read_text()
    specs = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "hookspec" for d in node.decorator_list):
            specs[node.name] = "@hookspec\n" + ast.get_source_segment(source, node)
    return specs


HOOKS = hookspecs()


def test_hookspecs_are_found():
    assert HOOKS, f"no @hookspec functions found in {HOOKSPECS}: did the hook file move?"


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hook_is_documented_with_its_specification(hook):
    page = HOOKS_PAGE.read_text()
    assert re.search(rf"^## {hook}$", page, re.M), f"{HOOKS_PAGE.relative_to(ROOT)} has no section `## {hook}`"
    signature = HOOKS[hook].splitlines()[1]
    assert signature in page, (f"{HOOKS_PAGE.relative_to(ROOT)} does not show the signature of {hook} as "
                               f"hookspecs.py has it:\n{signature}")
    assert HOOKS[hook] in page, (f"{HOOKS_PAGE.relative_to(ROOT)} does not show the specification of {hook} "
                                 f"exactly as hookspecs.py has it; copy it into the section:\n{HOOKS[hook]}")


def test_hooks_page_documents_no_hook_that_does_not_exist():
    documented = re.findall(r"^## (kevolve_\w+)$", HOOKS_PAGE.read_text(), re.M)
    assert sorted(documented) == sorted(HOOKS), f"sections {documented} vs hooks {sorted(HOOKS)}"


def cli_definitions() -> tuple[set[str], set[str]]:
    """(subcommand names, option strings) from every ``add_parser`` / ``add_argument`` call in core's sources."""
    commands, options = set(), set()
    for path in (ROOT / "core/src/kevolve").rglob("*.py"):
        source = path.read_text()
        if "add_argument(" not in source and "add_parser(" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            literals = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if node.func.attr == "add_parser" and literals:
                commands.add(literals[0])
            elif node.func.attr == "add_argument":
                options.update(s for s in literals if s.startswith("--"))
    return commands, options


def test_every_command_and_option_is_in_the_cli_reference():
    commands, options = cli_definitions()
    assert commands and options, "no argparse definitions found under core/src/kevolve"
    page = CLI_PAGE.read_text()
    headings = "\n".join(line for line in page.splitlines() if line.startswith("## "))
    missing_commands = sorted(c for c in commands if not re.search(rf"\b{re.escape(c)}\b", headings))
    missing_options = sorted(o for o in options if not re.search(rf"{re.escape(o)}(?![\w-])", page))
    assert not missing_commands, f"{CLI_PAGE.relative_to(ROOT)} has no section for the commands {missing_commands}"
    assert not missing_options, f"{CLI_PAGE.relative_to(ROOT)} does not document the options {missing_options}"


def test_readme_is_a_short_front_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; keep it under {README_MAX_LINES} and move the detail into docs/")


def test_readme_keeps_the_two_commands():
    text = README.read_text()
    assert re.search(r"^## The two commands$", text, re.M), "README.md lost its '## The two commands' section"
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)\n```$", section, re.M | re.S)
    assert blocks == [RUN_COMMAND, TEST_COMMAND], (
        "the two commands of README.md changed; CI and other tooling run them as written. Found:\n"
        + "\n".join(blocks))
