"""The committed results' layout (bench/layout.py): where a bench script's files go, and that every path into
bench/results or bench/notes that the repository's text names exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
layout = pytest.importorskip("layout")


@pytest.mark.parametrize("stem, suffix, target, expected", [
    ("op_overhead", ".md", "nvidia_h100", "nvidia_h100/op_overhead.md"),
    ("nvidia_h100_op_overhead", ".md", "cpu", "nvidia_h100/op_overhead.md"),  # the stem's target wins
    ("nvidia_h200_models", ".json", "nvidia_h100", "nvidia_h200/models.json"),  # a folder bench/results has
    ("kernels", ".json", "cpu", "cpu/kernels.json"),
    ("conformance_interpreter", ".md", "amd_mi300", "amd_mi300/conformance_interpreter.md"),
    ("programs", ".md", "mtia_sim_next", "mtia_sim_next/programs.md"),  # a target with no folder yet
    ("llm_economy", ".md", None, "any/llm_economy.md"),
])
def test_result_path_puts_each_result_in_its_targets_folder(tmp_path, stem, suffix, target, expected):
    path = layout.result_path(tmp_path, stem, suffix, target)
    assert path == tmp_path / expected and path.parent.is_dir()


def test_every_named_results_or_notes_path_exists():
    """A link left behind by a move: every ``bench/results/...`` or ``bench/notes/...`` file path in the tracked
    text (docs, README, changelog, docstrings, the results and notes themselves) names a file that is there
    (``FILE.json#TABLE`` names the table of a file that keeps several)."""
    files = subprocess.run(["git", "ls-files", "*.md", "*.py", "*.yml", "*.toml"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    named = re.compile(r"bench/(?:results|notes)/[\w./-]*\.(?:md|json|txt|log)\b")
    missing = {f"{name} (in {file})" for file in files if (ROOT / file).is_file()
               for name in named.findall((ROOT / file).read_text()) if not (ROOT / name).is_file()}
    assert not missing, sorted(missing)
