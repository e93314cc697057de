"""Fixtures shared by the Triton recipe tests: they run on the NVIDIA targets through the real harness, which on
a machine without a GPU means ahead-of-time compilation for sm_90 plus correctness through the Triton
interpreter."""

from __future__ import annotations

import pytest

pytest.importorskip("kevolve_triton")
pytest.importorskip("kevolve_nvidia")

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate  # noqa: E402
from kevolve.plugins import get_manager  # noqa: E402
from kevolve.problems.catalog import CatalogProblem  # noqa: E402
from kevolve.synthesis.base import Candidate  # noqa: E402

TARGET = "nvidia_h100"


@pytest.fixture(scope="module")
def facts():
    return get_manager().target(TARGET).spec.facts


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return HarnessConfig(timeout_s=300, workdir=str(tmp_path_factory.mktemp("triton-builds")))


def catalog_problem(op: str, dtype: str, dims: dict[str, int] | None = None, **attrs) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=dims, dtype=dtype, attrs=attrs or None)


def recipe_for(recipes, prob):
    matches = [r for r in recipes if r.supports(prob)]
    assert len(matches) >= 1, prob.name
    return matches[0]


def evaluate(source: str, params: dict, prob, config: HarnessConfig, target: str = TARGET):
    return evaluate_candidate(Candidate(source, "triton", params), prob, target, config)
