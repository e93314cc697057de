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
    return HarnessConfig(timeout_s=300, workdir=str(tmp_path_factory.mktemp("triton-builds")))
