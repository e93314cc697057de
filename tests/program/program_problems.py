"""Where the program tests' KernelBench files live (a module of its own: ``conftest`` is not unique across test
folders when the whole suite runs)."""

from pathlib import Path

PROBLEMS = Path(__file__).parent / "problems"
