"""The program bench's problem set: KernelBench-format files under ``bench/problems/single`` (one operator) and
``bench/problems/fused`` (chains of 3-8 operators), and each one at CPU-test sizes.

Every file keeps its sizes in upper-case module constants read only inside ``get_inputs``/``get_init_inputs``
(at call time), at the sizes people run on a GPU, and a ``SMALL`` dict of the same constants at sizes a 2-core
CPU handles in seconds. :func:`small_copy` writes the file with ``globals().update(SMALL)`` appended: the same
problem, smaller, and a file of its own, so the store keys the two sizes apart.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent / "problems"
KINDS = ("single", "fused")
SHRINK = "\n\n# bench/problem_set.py: the same problem at its CPU-test sizes\nglobals().update(SMALL)\n"


def problem_files(kinds: tuple[str, ...] = KINDS) -> list[Path]:
    """Every problem file of the given kinds, sorted by kind then name."""
    return [path for kind in kinds for path in sorted((ROOT / kind).glob("*.py"))]


def kind_of(path: Path) -> str:
    """``single`` or ``fused``: the folder the file lives in."""
    return Path(path).parent.name


def label(path: Path) -> str:
    """``single/matmul_square``: how tables and progress lines name a problem."""
    return f"{kind_of(path)}/{Path(path).stem}"


def small_copy(path: Path, directory: Path) -> Path:
    """``path`` at its ``SMALL`` sizes, written under ``directory`` (rewritten only when its text changed, so a
    resumed run finds the same file and the store its earlier sessions)."""
    text = Path(path).read_text()
    if "\nSMALL = " not in text:
        raise ValueError(f"{path} defines no SMALL sizes; add SMALL = {{...}} with CPU-test values of its constants")
    copy = Path(directory) / kind_of(path) / Path(path).name
    copy.parent.mkdir(parents=True, exist_ok=True)
    if not copy.is_file() or copy.read_text() != text + SHRINK:
        copy.write_text(text + SHRINK)
    return copy
