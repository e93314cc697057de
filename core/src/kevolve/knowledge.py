"""The knowledge base: docs packs from every installed plugin, retrieved by the search's current signals.

A docs pack is a directory of Markdown files. Each file starts with TOML front matter between ``+++`` lines:

    +++
    title = "Vectorize the inner loop"
    category = "guidance"            # correctness | guidance | hardware
    targets = ["cpu"]                # empty or absent: every target
    languages = ["cpp"]              # empty or absent: every language
    families = ["pointwise"]         # op families it speaks to; empty: all
    diagnoses = ["memory-bound"]     # diagnosis classes it helps with; empty: all
    [hints]                          # machine-readable advice the template synthesizer uses
    vector_width = [8, 16]
    +++
    Prose for people and LLM synthesizers.

Selection by signals is exact (a passage tagged for another target is never retrieved); ranking inside the
selection favours passages that name more of the signals, then query-word overlap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import tomllib

CATEGORIES = ("correctness", "guidance", "hardware")


@dataclass(frozen=True)
class Passage:
    pack: str
    path: str
    title: str
    category: str
    text: str
    targets: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    diagnoses: tuple[str, ...] = ()
    hints: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Signals:
    target: str = ""
    language: str = ""
    family: str = ""
    diagnosis: str = ""
    query: str = ""


def parse_passage(pack: str, path: str, content: str) -> Passage:
    match = re.match(r"\A\+\+\+\n(.*?)\n\+\+\+\n?(.*)\Z", content, re.DOTALL)
    if not match:
        raise ValueError(f"{pack}/{path}: a docs-pack file must start with TOML front matter between +++ lines")
    meta = tomllib.loads(match.group(1))
    category = meta.get("category", "guidance")
    if category not in CATEGORIES:
        raise ValueError(f"{pack}/{path}: category {category!r} is not one of {CATEGORIES}")
    return Passage(
        pack=pack, path=path, title=meta.get("title", path), category=category, text=match.group(2).strip(),
        targets=tuple(meta.get("targets", ())), languages=tuple(meta.get("languages", ())),
        families=tuple(meta.get("families", ())), diagnoses=tuple(meta.get("diagnoses", ())),
        hints=dict(meta.get("hints", {})),
    )


def _walk(root: Traversable | Path, prefix: str = ""):
    for child in sorted(root.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".md"):
            yield f"{prefix}{child.name}", child


class DocsRegistry:
    """Every passage of every installed pack. Handed to the ``kevolve_register_docs`` hook."""

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        self.packs: list[str] = []
        self.errors: list[str] = []

    def add_pack(self, name: str, root: Traversable | Path) -> None:
        self.packs.append(name)
        for path, entry in _walk(root):
            try:
                self.passages.append(parse_passage(name, path, entry.read_text(encoding="utf-8")))
            except (ValueError, tomllib.TOMLDecodeError) as exc:
                self.errors.append(str(exc))

    def retrieve(self, signals: Signals, limit: int = 8, categories: tuple[str, ...] = CATEGORIES) -> list[Passage]:
        words = set(re.findall(r"[a-z0-9_]+", signals.query.lower()))
        scored = []
        for order, passage in enumerate(self.passages):
            if passage.category not in categories or not _selected(passage, signals):
                continue
            specificity = sum(
                bool(tags) and value in tags
                for tags, value in ((passage.targets, signals.target), (passage.languages, signals.language),
                                    (passage.families, signals.family), (passage.diagnoses, signals.diagnosis))
            )
            overlap = len(words & set(re.findall(r"[a-z0-9_]+", (passage.title + " " + passage.text).lower())))
            scored.append((-specificity, -overlap, order, passage))
        return [p for *_, p in sorted(scored, key=lambda s: s[:3])[:limit]]

    def hints(self, signals: Signals) -> dict[str, Any]:
        """Machine-readable hints of every selected passage; more specific passages win on conflicts."""
        merged: dict[str, Any] = {}
        for passage in reversed(self.retrieve(signals, limit=len(self.passages) or 1)):
            merged.update(passage.hints)
        return merged


def _selected(passage: Passage, signals: Signals) -> bool:
    """A passage applies when each of its tag lists is empty or contains the signal. A signal that is unknown
    (empty) does not exclude tagged passages, except the target: target-specific facts never leak across."""
    if passage.targets and signals.target not in passage.targets:
        return False
    for tags, value in ((passage.languages, signals.language), (passage.families, signals.family),
                        (passage.diagnoses, signals.diagnosis)):
        if tags and value and value not in tags:
            return False
    if passage.diagnoses and not signals.diagnosis:
        return False
    return True
