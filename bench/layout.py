"""Where the benchmark scripts write their results: one folder per target under ``--out``.

``bench/results/<target>/<name>.md`` (and ``.json``), e.g. ``bench/results/nvidia_h100/op_overhead.md``; results of
no one target (a scripted LLM, every AMD target at once) go to ``bench/results/any/``. A run on a lent machine
writes the same layout under its ``$OUT``, so that its files copy into ``bench/results`` as they are. Every script
composes its output path with :func:`result_path`; ``bench/results/README.md`` is the index.
"""

from __future__ import annotations

from pathlib import Path

#: the committed results
RESULTS = Path(__file__).resolve().parent / "results"
#: the folder of results that belong to no one target
ANY = "any"


def result_path(out: str | Path, stem: str, suffix: str = ".md", target: str | None = None, *,
                make: bool = True) -> Path:
    """The file a script writes for ``stem`` under ``out`` (``bench/results`` or a run's ``$OUT``):
    ``out/<target>/<name><suffix>``, its folder made unless ``make`` is false. A stem that starts with a target's
    name and ``_`` goes to that target's folder without the prefix (``nvidia_h100_op_overhead`` ->
    ``out/nvidia_h100/op_overhead.md``); a target is ``target`` or one that ``bench/results`` has a folder for
    (``nvidia_h200_models`` -> ``nvidia_h200/models.md`` from a run whose ``--target`` was nvidia_h100, on an H200).
    Any other stem goes to ``target``'s folder as it is (``op_overhead``), or to ``out/any`` without a target."""
    out = Path(out)
    known = {p.name for p in RESULTS.iterdir() if p.is_dir() and p.name != ANY} if RESULTS.is_dir() else set()
    if target:
        known.add(target)
    prefixed = [t for t in known if stem.startswith(f"{t}_") and len(stem) > len(t) + 1]
    if prefixed:
        folder = max(prefixed, key=len)
        stem = stem[len(folder) + 1:]
    else:
        folder = target or ANY
    path = out / folder / f"{stem}{suffix}"
    if make:
        path.parent.mkdir(parents=True, exist_ok=True)
    return path
