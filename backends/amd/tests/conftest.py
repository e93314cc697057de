"""Fixtures for the AMD backend tests. No AMD GPU and no ROCm here: kernels are compiled ahead of time for the
target's gfx architecture, checked through the Triton interpreter and ranked by the static cost model."""

from __future__ import annotations

import pytest

pytest.importorskip("kevolve_triton")
pytest.importorskip("kevolve_amd")
pytest.importorskip("triton.backends.amd")

from kevolve.harness.pipeline import HarnessConfig


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """One correctness call per check shape (the interpreter is slow), a build cache private to the module."""
    return HarnessConfig(timeout_s=300, calls_per_shape=1, workdir=str(tmp_path_factory.mktemp("amd-builds")))
