"""Fixtures shared by the Triton recipe tests: they run on the NVIDIA targets through the real harness, which on
a machine without a GPU means ahead-of-time compilation for sm_90 plus correctness through the Triton
interpreter."""

from __future__ import annotations

import pytest

pytest.importorskip("kevolve_triton")
pytest.importorskip("kevolve_nvidia")

from kevolve.harness.pipeline import HarnessConfig  # noqa: E402
from kevolve.plugins import get_manager  # noqa: E402
from triton_cases import TARGET  # noqa: E402


@pytest.fixture(scope="module")
def facts():
    return get_manager().target(TARGET).spec.facts


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """One call per check shape: these tests judge the recipes' kernels, which compute the same answer at every
    call (the harness's second call, against cached answers, is tested by the cheat tests); the interpreter,
    under the launcher's call checks, took up to 150 s a case with two."""
    return HarnessConfig(timeout_s=300, calls_per_shape=1, workdir=str(tmp_path_factory.mktemp("triton-builds")))
