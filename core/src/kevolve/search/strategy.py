"""Search strategies: which node to expand next and with which memory operator.

- MCTS (UCT): descend from the root by upper confidence bounds, widening a node while its visit count grows;
- evolution: tournament selection over the best correct nodes, mutation or crossover.
Both fall back to *restart* when the loop reports a stall. Decisions use only the seeded RNG and the tree, so
the same seed and the same evaluations give the same tree.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod

from kevolve.search.tree import ROOT, Node, Tree
from kevolve.synthesis import base


class Strategy(ABC):
    name = ""

    @abstractmethod
    def select(self, tree: Tree, rng: random.Random, stalled: bool) -> tuple[int, str]:
        """(node to expand, memory operator)."""


def _operator_for(tree: Tree, node: Node, rng: random.Random) -> str:
    if node.fitness <= 0:
        # a failed node is built on only to repair it: crossover or a comparison would carry its fault along
        # (and word it as a strength to combine)
        return base.INHERIT
    siblings = [s for s in tree.siblings(node.id) if s.fitness > 0]
    best = tree.best()
    choices = [(base.INHERIT, 0.55)]
    if len(siblings) >= 2:
        choices.append((base.SIBLINGS, 0.25))
    if best is not None and best.id != node.id and node.candidate and best.candidate \
            and best.candidate.recipe == node.candidate.recipe:
        choices.append((base.COMBINE, 0.2))
    total = sum(w for _, w in choices)
    pick = rng.random() * total
    for op, weight in choices:
        pick -= weight
        if pick <= 0:
            return op
    return choices[-1][0]


class MCTS(Strategy):
    name = "mcts"

    def __init__(self, exploration: float = 0.7, widening: float = 0.5) -> None:
        self.exploration = exploration
        self.widening = widening

    def select(self, tree: Tree, rng: random.Random, stalled: bool) -> tuple[int, str]:
        if not tree.root.children:
            return ROOT, base.SEED
        if stalled:
            return ROOT, base.RESTART
        node = tree.root
        while True:
            children = [tree.nodes[c] for c in node.children]
            limit = max(1, math.ceil((node.visits + 1) ** self.widening))
            if node.id != ROOT and (not children or len(children) < limit):
                return node.id, _operator_for(tree, node, rng)
            if not children:
                return ROOT, base.RESTART
            log_n = math.log(max(node.visits, 1))
            node = max(children, key=lambda c: (c.value / max(c.visits, 1)
                                                 + self.exploration * math.sqrt(log_n / max(c.visits, 1)), -c.id))
            if node.fitness <= 0 and not node.children:
                # a failed leaf: expanding it means moving away from what broke, which inherit does
                return node.id, base.INHERIT


class Evolution(Strategy):
    name = "evolution"

    def __init__(self, population: int = 8, tournament: int = 3) -> None:
        self.population = population
        self.tournament = tournament

    def select(self, tree: Tree, rng: random.Random, stalled: bool) -> tuple[int, str]:
        if not tree.root.children:
            return ROOT, base.SEED
        pool = sorted((n for n in tree.evaluated() if n.fitness > 0), key=lambda n: (-n.fitness, n.id))
        pool = pool[: self.population]
        if stalled or not pool:
            return ROOT, base.RESTART
        contenders = [pool[rng.randrange(len(pool))] for _ in range(self.tournament)]
        parent = max(contenders, key=lambda n: (n.fitness, -n.id))
        return parent.id, base.COMBINE if rng.random() < 0.3 else base.INHERIT


STRATEGIES = {"mcts": MCTS, "evolution": Evolution}
