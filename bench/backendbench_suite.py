"""BackendBench's own OpInfo suite on kevolve's BackendBench export, in a virtualenv where kevolve is not
importable: does the export load and pass there, as its files claim?

    python bench/backendbench_suite.py --backendbench MIRROR.git [--commit SHA] [--target cpu] [--store PATH]

Steps: ``kevolve export --format backendbench`` of the latest conformance run on the target (run ``kevolve
conformance --target T --store PATH`` first); a fresh virtualenv with torch and the few packages BackendBench's
modules import, BackendBench installed from its public source at the pinned commit (``git archive`` of a local
clone or mirror, so the machine needs no access to GitHub); then, in that virtualenv, BackendBench's
``DirectoryBackend`` on the export and its ``OpInfoTestSuite`` on the CPU in float32, every correctness test of
every overload the export holds (``eval_correctness``). Writes ``<out>/<target>/backendbench.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from layout import RESULTS, result_path

#: BackendBench at this commit (github.com/meta-pytorch/BackendBench, 2026-11)
PINNED = "66e0dbc"
#: what BackendBench's modules import on the way to the directory backend and the OpInfo suite (its own
#: dependencies include LLM clients and datasets this run does not use)
RUNTIME = ["numpy", "click", "expecttest", "pytest", "anthropic", "tenacity", "requests", "tqdm", "pyarrow", "datasets",
           "pandas", "huggingface_hub"]

RUNNER = r'''
import importlib.util, json, sys
import torch
assert importlib.util.find_spec("kevolve") is None, "kevolve is importable here: the export must run without it"
from BackendBench.backends.directory import DirectoryBackend
from BackendBench.eval import eval_correctness
from BackendBench.suite.opinfo import OpInfoTestSuite
from BackendBench.utils import extract_operator_name

backend = DirectoryBackend(sys.argv[1])
loaded = sorted(extract_operator_name(str(op)) for op in backend.compiled_kernels)
rows = []
for test in OpInfoTestSuite("opinfo_cpu_float32", "cpu", torch.float32, filter=loaded):
    if test.op not in backend:
        continue
    score, results = eval_correctness(test.op, backend[test.op], test.correctness_tests)
    failed = [r for r in results if not r.is_correct]
    rows.append({"op": extract_operator_name(str(test.op)), "tests": len(results),
                 "passed": len(results) - len(failed),
                 "first_failure": (failed[0].error_msg or f"max abs error {failed[0].max_abs_error}")[:300]
                 if failed else ""})
json.dump({"loaded": loaded, "rows": rows, "torch": torch.__version__}, open(sys.argv[2], "w"), indent=1)
'''


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backendbench", required=True, help="a git clone or mirror of meta-pytorch/BackendBench")
    parser.add_argument("--commit", default=PINNED)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--store", default=None, help="the store whose conformance results are exported")
    parser.add_argument("--work", default=None, help="where the export and the virtualenv go (default: a temp dir)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="backendbench-"))
    export, venv, source = work / "export", work / "venv", work / "BackendBench"
    store = ["--store", args.store] if args.store else []
    run([sys.executable, "-m", "kevolve", "export", "--format", "backendbench", str(export), "--target",
         args.target, *store])
    clone = Path(args.backendbench)
    git = ["git", f"--git-dir={clone / '.git' if (clone / '.git').exists() else clone}"]
    commit = run([*git, "rev-parse", args.commit], capture_output=True, text=True).stdout.strip()
    source.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run([*git, "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    import torch

    run([python, "-m", "pip", "install", "-q", f"torch=={torch.__version__.split('+')[0]}", *RUNTIME])
    run([python, "-m", "pip", "install", "-q", "--no-deps", str(source)])
    (work / "runner.py").write_text(RUNNER)
    result = work / "result.json"
    run([python, str(work / "runner.py"), str(export), str(result)], cwd=work)
    data = json.loads(result.read_text())
    exported = sorted(p.name for p in export.iterdir() if p.is_dir())
    manifest = json.loads((export / "kevolve_export.json").read_text())
    ops = len(manifest["covered"]) + len(manifest["uncovered"])
    info = {"target": args.target, "backendbench": commit, "torch": data["torch"], "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    passing = [r for r in data["rows"] if r["passed"] == r["tests"]]
    lines = [f"# BackendBench's OpInfo suite on kevolve's `{args.target}` export", "",
             f"`python bench/backendbench_suite.py {' '.join(sys.argv[1:])}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             (f"Operators covered by the export (every computing ATen call of their OpInfo samples answered right "
              f"by its files, checked by kevolve before writing): {len(manifest['covered'])} of {ops}."), "",
             (f"Exported overloads: {len(exported)}; loaded by BackendBench's DirectoryBackend in a virtualenv "
              f"without kevolve: {len(data['loaded'])}; given OpInfo tests on the CPU in float32: "
              f"{len({r['op'] for r in data['rows']})} (in {len(data['rows'])} groups, one per OpInfo op and "
              f"overload); groups whose every test passed: {len(passing)} of {len(data['rows'])}; tests passed: "
              f"{sum(r['passed'] for r in data['rows'])} of {sum(r['tests'] for r in data['rows'])}."), "",
             "| overload | tests | passed | first failure |", "|---|---|---|---|"]
    first = lambda r: (r["first_failure"].splitlines() or [""])[0][:160]
    lines += [f"| `{r['op']}` | {r['tests']} | {r['passed']} | {first(r)} |" for r in data["rows"]]
    untested = sorted(set(data["loaded"]) - {r["op"] for r in data["rows"]})
    if untested:
        lines += ["", f"Loaded but given no OpInfo test by the suite ({len(untested)}): "
                  + ", ".join(f"`{o}`" for o in untested)]
    lines += ["", "Overloads served by more than one operator's kernels: " + "; ".join(
        f"`{name}`: {', '.join(by)}" for name, by in sorted(manifest["served_by"].items()) if len(by) > 1), "",
        f"Operators not covered ({len(manifest['uncovered'])}):", ""]
    lines += [f"- `{op}`: {why[:200]}" for op, why in sorted(manifest["uncovered"].items())]
    result_path(args.out, "backendbench", ".md", args.target).write_text("\n".join(lines) + "\n")
    result_path(args.out, "backendbench", ".json", args.target).write_text(
        json.dumps({"info": info, "exported": exported, "export": manifest, **data}, indent=1) + "\n")
    print("\n".join(lines[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
