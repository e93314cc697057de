"""The knowledge base: docs packs from every installed plugin, retrieved by the search's current signals.

A docs pack is a directory of Markdown files. Each file starts with TOML front matter between ``+++`` lines:

    +++
    title = "Vectorize the inner loop"
    category = "guidance"            # correctness | guidance | hardware
    targets = ["cpu"]                # empty or absent: every target
    languages = ["cpp"]              # empty or absent: every language
    families = ["pointwise"]         # op families it speaks to; empty: all
    dtypes = ["bfloat16"]            # problem dtypes it speaks to; empty: all
    diagnoses = ["memory-bound"]     # diagnosis classes it helps with; empty: all
    contract = false                 # true: the kernel file contract of its languages, always given in full
    [hints]                          # machine-readable advice the template synthesizer uses
    vector_width = [8, 16]
    +++
    Prose for people and LLM synthesizers.

Selection by signals is exact (a passage tagged for another target is never retrieved). Inside the selection,
passages are ranked by how many signals their tags name (specificity) plus their lexical relevance to the
signals' words (BM25 over title and text, scaled to 0..1), and, where a local embedding model is configured
(``KEVOLVE_EMBEDDING_MODEL``, a sentence-transformers model available offline), its cosine similarity too.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import tomllib
from rank_bm25 import BM25Okapi

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
    dtypes: tuple[str, ...] = ()
    hints: dict[str, Any] = field(default_factory=dict)
    contract: bool = False


@dataclass(frozen=True)
class Signals:
    target: str = ""
    language: str = ""
    family: str = ""
    diagnosis: str = ""
    #: the problem's dtype ("float32"): a page about bfloat16 or integer arithmetic is no help to a float32 kernel
    dtype: str = ""
    #: free words: the problem's name, the last compile or correctness error, a person's question
    query: str = ""

    def words(self) -> list[str]:
        return tokenize(" ".join((self.family, self.diagnosis, self.query)))


@dataclass(frozen=True)
class Hit:
    """One retrieved passage and why: the tags that matched, its lexical score, the words it shares."""

    passage: Passage
    score: float
    matched_tags: tuple[str, ...]
    bm25: float
    matched_words: tuple[str, ...]
    similarity: float | None = None


#: texts -> unit-length vectors; supplied by a local embedding model
Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]

_STOPWORDS = frozenset("a an and are as at be by for from in into is it its of on or that the this to with".split())


def tokenize(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS]


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
        dtypes=tuple(meta.get("dtypes", ())),
        hints=dict(meta.get("hints", {})), contract=bool(meta.get("contract", False)),
    )


def pack_files(root: Traversable | Path, prefix: str = "") -> Iterator[tuple[str, Traversable | Path]]:
    """(path inside the pack, file) of every Markdown file under a pack's root, in a stable order."""
    for child in sorted(root.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            yield from pack_files(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".md"):
            yield f"{prefix}{child.name}", child


class KnowledgeBase:
    """Every passage of every installed pack, and retrieval over them. The packs come in through
    :class:`kevolve.registry.DocsRegistry`, which the ``kevolve_register_docs`` hook is handed."""

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        #: optional semantic ranker; None: lexical ranking only
        self.embedder: Embedder | None = None
        #: how passages are ranked here, in words (``kevolve docs search`` shows it)
        self.ranking = "lexical (BM25)"
        self._bm25: BM25Okapi | None = None
        self._vectors: list[Sequence[float]] | None = None

    def add(self, passages: Sequence[Passage]) -> None:
        self.passages.extend(passages)
        self._bm25 = self._vectors = None

    def drop(self, packs: Collection[str]) -> None:
        """Forget the passages of ``packs`` (their plugin failed after registering them)."""
        self.passages = [p for p in self.passages if p.pack not in packs]
        self._bm25 = self._vectors = None

    def search(self, signals: Signals, limit: int = 8, categories: tuple[str, ...] = CATEGORIES) -> list[Hit]:
        """The passages the signals select, best first, each with the reasons for its rank."""
        selected = [(i, p) for i, p in enumerate(self.passages)
                    if p.category in categories and not p.contract and _selected(p, signals)]
        if not selected:
            return []
        words = signals.words()
        lexical = self._lexical_scores(words)
        top = max((lexical[i] for i, _ in selected), default=0.0)
        similarity = self._similarities(" ".join(words)) if self.embedder is not None and words else None
        hits = []
        for i, passage in selected:
            tags = tuple(value for tags, value in ((passage.targets, signals.target),
                                                   (passage.languages, signals.language),
                                                   (passage.families, signals.family),
                                                   (passage.diagnoses, signals.diagnosis)) if tags and value in tags)
            bm25 = lexical[i] / top if top > 0 else 0.0
            score = len(tags) + bm25
            sim = None
            if similarity is not None:
                sim = similarity[i]
                score += max(sim, 0.0)
            shared = sorted(set(words) & set(tokenize(passage.title + " " + passage.text)))
            hits.append((-score, i, Hit(passage, score, tags, bm25, tuple(shared), sim)))
        return [hit for *_, hit in sorted(hits, key=lambda h: h[:2])[:limit]]

    def retrieve(self, signals: Signals, limit: int = 8, categories: tuple[str, ...] = CATEGORIES) -> list[Passage]:
        return [hit.passage for hit in self.search(signals, limit, categories)]

    def contract(self, target: str, language: str) -> list[Passage]:
        """The kernel file contract for a language on a target: every ``contract`` passage that applies."""
        signals = Signals(target=target, language=language)
        return [p for p in self.passages if p.contract and (not p.languages or language in p.languages)
                and _selected(p, signals)]

    def hints(self, signals: Signals) -> dict[str, Any]:
        """Machine-readable hints of every selected passage; more specific passages win on conflicts."""
        merged: dict[str, Any] = {}
        for passage in reversed(self.retrieve(signals, limit=len(self.passages) or 1)):
            merged.update(passage.hints)
        return merged

    def _lexical_scores(self, words: list[str]) -> list[float]:
        if not words:
            return [0.0] * len(self.passages)
        if self._bm25 is None:
            self._bm25 = BM25Okapi([tokenize(p.title + " " + p.text) or ["empty"] for p in self.passages])
        return [max(float(v), 0.0) for v in self._bm25.get_scores(words)]

    def _similarities(self, query: str) -> list[float]:
        assert self.embedder is not None
        if self._vectors is None:
            self._vectors = list(self.embedder([p.title + "\n" + p.text for p in self.passages]))
        (q,) = self.embedder([query])
        return [_cosine(q, v) for v in self._vectors]


def disabled_packs() -> set[str]:
    """Pack names in ``KEVOLVE_DISABLE_DOCS_PACKS`` (comma-separated): left out of the knowledge base, e.g. to
    measure what a backend's documents are worth."""
    return {name.strip() for name in os.environ.get("KEVOLVE_DISABLE_DOCS_PACKS", "").split(",") if name.strip()}


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def local_embedder() -> tuple[Embedder | None, str]:
    """The embedding ranker named by ``KEVOLVE_EMBEDDING_MODEL`` (a sentence-transformers model on this disk),
    or None with the reason retrieval stays lexical."""
    name = os.environ.get("KEVOLVE_EMBEDDING_MODEL", "")
    if not name:
        return None, ("lexical (BM25) ranking; set KEVOLVE_EMBEDDING_MODEL to a local sentence-transformers model "
                      "to add embeddings")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None, (f"KEVOLVE_EMBEDDING_MODEL={name} is set but sentence-transformers is not installed; "
                      "lexical ranking")
    try:
        model = SentenceTransformer(name, local_files_only=True)
    except Exception as exc:  # a model that is not on this disk must not stop a search
        return None, f"cannot load embedding model {name!r} offline ({type(exc).__name__}: {exc}); lexical ranking"
    return (lambda texts: model.encode(list(texts), normalize_embeddings=True).tolist()), f"BM25 + embeddings ({name})"


def _selected(passage: Passage, signals: Signals) -> bool:
    """A passage applies when each of its tag lists is empty or contains the signal. A signal that is unknown
    (empty) does not exclude tagged passages, except the target: target-specific facts never leak across."""
    if passage.targets and signals.target not in passage.targets:
        return False
    for tags, value in ((passage.languages, signals.language), (passage.families, signals.family),
                        (passage.diagnoses, signals.diagnosis), (passage.dtypes, signals.dtype)):
        if tags and value and value not in tags:
            return False
    if passage.diagnoses and not signals.diagnosis:
        return False
    return True
