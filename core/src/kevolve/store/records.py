"""What the store hands back: sessions and nodes as plain records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kevolve.harness.evaluation import Evaluation
from kevolve.search.config import SearchConfig


@dataclass
class NodeRecord:
    node_id: int
    parent_id: int | None
    memory_op: str
    synthesizer: str
    recipe: str
    language: str
    parameters: dict[str, Any]
    source: str
    source_hash: str
    note: str
    evaluation: Evaluation
    #: the synthesizer's trace: prompt, raw response, tokens (empty for synthesizers that keep none)
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass
class SessionRecord:
    id: str
    problem_key: str
    problem_name: str
    family: str
    problem_spec: dict[str, Any]
    target: str
    toolchain: str
    seed: int
    #: read from older sessions too, whose stored settings lack the newer keys (see SearchConfig.from_dict)
    config: SearchConfig
    #: running, done, failed, interrupted, or dead: stored as running but its process is gone
    status: str
    stop_reason: str
    best_node: int | None
    best_fitness: float
    created: float
    updated: float
    #: the process that runs (or last ran) the session, and when it last said it is alive
    owner_pid: int | None = None
    owner_host: str | None = None
    heartbeat: float | None = None
