"""How well does an LLM search spend requests and tokens? (issue 39)

A scripted model answers through the real OpenAI client and protocol, served by the local stand-in the tests
use (tests/llm/protocol_server.py): each answer is the next of a fixed pool of kernels -- good, slow,
duplicate (a kernel it already gave), broken (a compile error) and no code at all -- whatever the prompt says.
The stand-in counts tokens as characters / 4, as the tests do. For each synthesizer (the LLM alone, and with
``+template``) one ``kevolve optimize softmax --target cpu`` search runs; the script counts the requests the
server received (and how many were byte-identical to an earlier one), the tokens it charged, the tokens the
store recorded and the trajectory export carries, evaluated and correct candidates and the best speedup.

    python bench/llm_economy.py [--budget 8] [--out FILE.md]

Writes ``bench/results/any/llm_economy.md`` and ``.json`` unless ``--out`` names another file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from layout import RESULTS, result_path  # noqa: E402
from protocol_server import ProtocolServer  # noqa: E402

import kevolve  # noqa: E402
from kevolve.cli import main  # noqa: E402
from kevolve.store import Store  # noqa: E402

GOOD = (ROOT / "backends" / "cpu" / "tests" / "kernels" / "softmax_ok.cpp").read_text()
FAST = GOOD.replace("    for (int64_t r = 0; r < rows; ++r) {", "    #pragma omp parallel for\n"
                    "    for (int64_t r = 0; r < rows; ++r) {")
SLOW = GOOD.replace("for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;",
                    "for (int rep = 0; rep < 16; ++rep) for (int64_t c = 0; c < cols; ++c) "
                    "m = xr[c] > m ? xr[c] : m;")
BROKEN = GOOD.replace("return 0;", "return 0")
#: the pool, in the order the scripted model gives it (then again from the start)
POOL = [("good", GOOD), ("duplicate", GOOD), ("slow", SLOW), ("broken", BROKEN), ("good", FAST),
        ("duplicate", FAST), ("no code", None)]


def answer(source: str | None) -> str:
    return "I would restructure the loops." if source is None else f"Here is the kernel.\n\n```cpp\n{source}```\n"


def run(synthesizer: str, budget: int, workdir: Path) -> dict:
    server = ProtocolServer("openai", api_key=None).start()
    answers: list[str] = []

    def respond(body: dict) -> str:
        answers.append(answer(POOL[len(answers) % len(POOL)][1]))
        return answers[-1]

    server.responder = respond
    os.environ["KEVOLVE_OPENAI_BASE_URL"] = server.url
    store = workdir / f"{synthesizer.replace(':', '_').replace('+', '_')}.sqlite"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = main(["optimize", "softmax", "--target", "cpu", "--synthesizer", synthesizer, "--budget",
                         str(budget), "--store", str(store), "--quiet", "--json", "--shape", "rows=256",
                         "cols=1024"])
    finally:
        server.stop()
    result = json.loads(out.getvalue())
    bodies = [json.dumps(r.json, sort_keys=True) for r in server.requests if r.json]
    nodes = [n for n in Store(store).nodes(result["session"]) if n.memory_op != "final"]
    llm = [n for n in nodes if n.trace.get("usage")]
    stored_tokens = sum(n.trace["usage"]["input_tokens"] + n.trace["usage"]["output_tokens"] for n in llm)
    exported = workdir / "t.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["export", "--format", "trajectories", str(exported), "--store", str(store)])
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    export_tokens = sum(int((r.get("usage") or {}).get("input_tokens", 0))
                        + int((r.get("usage") or {}).get("output_tokens", 0)) for r in records)
    # what the stand-in charged (prompt characters / 4 in, each completion's characters / 4 out: its own rule)
    charged = sum(a["usage"]["total_tokens"] for a in server.answers)
    correct = [n for n in nodes if n.evaluation.status == "ok"]
    speedup = round(float(result.get("speedup") or result.get("best", {}).get("fitness") or 0.0), 4)
    return {
        "synthesizer": synthesizer, "exit_code": code, "requests": len(bodies),
        "identical_requests": len(bodies) - len(set(bodies)), "evaluated": len(nodes),
        "correct": len(correct), "best_speedup": speedup, "charged_tokens": charged, "stored_tokens": stored_tokens,
        "export_tokens": export_tokens, "stop": result.get("stop_reason", ""),
        "requests_per_evaluated": round(len(bodies) / max(len(nodes), 1), 3),
        "requests_per_correct": round(len(bodies) / max(len(correct), 1), 3),
        "tokens_per_correct": round(stored_tokens / max(len(correct), 1)),
        "tokens_per_unit_speedup": round(stored_tokens / speedup) if speedup > 0 else None,
    }


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--out", type=Path, default=result_path(RESULTS, "llm_economy", ".md"))
    args = parser.parse_args()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for synthesizer in ("openai:scripted", "openai:scripted+template"):
            rows.append(run(synthesizer, args.budget, Path(tmp)))
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
            "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "kevolve": kevolve.__version__,
            "command": f"python bench/llm_economy.py --budget {args.budget}",
            "pool": [kind for kind, _ in POOL]}
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    columns = ["synthesizer", "requests", "identical_requests", "evaluated", "correct", "best_speedup",
               "requests_per_evaluated", "requests_per_correct", "tokens_per_correct", "tokens_per_unit_speedup",
               "charged_tokens", "stored_tokens", "export_tokens", "stop"]
    lines = ["# LLM economy: requests and tokens per candidate (issue 39)", "",
             *(f"- {k}: {v}" for k, v in meta.items()), "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main_cli()
