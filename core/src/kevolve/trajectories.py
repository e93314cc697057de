"""Trajectory export: every search node as one JSON line, for post-training smaller models with RL.

A record holds what the synthesizer saw (the prompt as sent), what it answered (the raw response), the
candidate that became, and the reward the harness measured (fitness, correctness, status with its reason and
its own evidence, e.g. a compile error's log; timings, diagnosis), plus the tokens it cost. The schema is
``kevolve/schemas/trajectory.schema.json`` (JSON Schema 2020-12); the final re-timing of a session's best node is not a synthesis step and is left out.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from kevolve.harness.evaluation import evidence_text
from kevolve.store import NodeRecord, SessionRecord, Store

#: 2: the prompt under ``prompt`` (was ``context``) and each node's failure evidence in ``reward.evidence``
SCHEMA_VERSION = 2


def schema() -> dict[str, Any]:
    return json.loads(resources.files("kevolve").joinpath("schemas/trajectory.schema.json").read_text())


def record(session: SessionRecord, node: NodeRecord) -> dict[str, Any]:
    ev, trace = node.evaluation, node.trace
    prompt = trace.get("prompt")
    usage = trace.get("usage") or {}
    timed = "eager" in ev.speedups
    return {
        "schema_version": SCHEMA_VERSION, "session": session.id, "node": node.node_id, "parent": node.parent_id,
        "memory_op": node.memory_op, "synthesizer": node.synthesizer, "target": session.target,
        "toolchain": session.toolchain,
        "problem": {"name": session.problem_name, "family": session.family, "key": session.problem_key,
                    "spec": session.problem_spec},
        "prompt": prompt if prompt else None,
        "response": trace.get("response") if "response" in trace else None,
        "candidate": {"language": node.language, "source": node.source, "parameters": node.parameters,
                      "recipe": node.recipe, "note": node.note},
        "reward": {
            "fitness": ev.fitness,
            "fitness_kind": "none" if not ev.correct else
            ("speedup over eager" if timed else "modeled fraction of the roofline"),
            "correct": ev.correct, "status": ev.status, "stage": ev.stage, "reason": ev.reason,
            "evidence": evidence_text(ev),
            "kernel_seconds": ev.timings["kernel"].median if "kernel" in ev.timings else None,
            "speedups": {k: {"median": v.median, "low": v.low, "high": v.high} for k, v in ev.speedups.items()},
            "diagnosis": {"kind": ev.diagnosis.kind, "summary": ev.diagnosis.summary,
                          "metrics": ev.diagnosis.metrics} if ev.diagnosis else None,
        },
        "usage": {key: int(usage.get(key, 0)) for key in ("input_tokens", "output_tokens", "attempts")},
    }


def export(store: Store, out: TextIO, sessions: list[str] | None = None, target: str | None = None) -> int:
    """Write the records of the chosen sessions (default: all) to ``out``; returns how many."""
    chosen = [store.session(s) for s in sessions] if sessions else store.all_sessions()
    count = 0
    for session in chosen:
        if target and session.target != target:
            continue
        for node in store.nodes(session.id):
            if node.memory_op == "final":
                continue
            out.write(json.dumps(record(session, node), default=str) + "\n")
            count += 1
    return count


def export_file(store: Store, path: str | Path, sessions: list[str] | None = None, target: str | None = None) -> int:
    """Export to ``path`` through a temporary file, so a failed export never leaves half a file behind."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as out:
        count = export(store, out, sessions, target)
    partial.replace(path)
    return count
