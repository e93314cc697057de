"""The plugin contract: registration through hooks, broken plugins, target resolution, `kevolve targets`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kevolve
from kevolve.errors import UnknownTargetError
from kevolve.plugins import build_manager, get_manager, reset_manager


def test_fake_backend_registers_in_process(fake_plugin):
    assert {"fake", "fake_tiny"} <= set(fake_plugin.targets.names())
    assert fake_plugin.target("FK").spec.name == "fake"  # aliases are case-insensitive
    statuses = {s.name: s for s in kevolve.targets()}
    assert statuses["fake"].usable and statuses["fake"].distribution == "kevolve-fake"


def test_broken_plugin_is_reported_not_fatal(monkeypatch):
    monkeypatch.setenv("KEVOLVE_PLUGINS", "broken_plugin,fake_backend")
    manager = build_manager()
    assert "fake" in manager.targets.names()
    failure = next(f for f in manager.failures if f.plugin == "broken_plugin")
    assert "broken on purpose" in failure.error


def test_missing_plugin_module_is_reported(monkeypatch):
    monkeypatch.setenv("KEVOLVE_PLUGINS", "no_such_plugin_module")
    manager = build_manager()
    assert any("ModuleNotFoundError" in f.error for f in manager.failures)


def test_known_target_not_installed_names_distribution(monkeypatch):
    monkeypatch.setenv("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("KEVOLVE_PLUGINS", raising=False)
    with pytest.raises(UnknownTargetError, match="pip install kevolve-nvidia"):
        build_manager().target("nvidia_h100")


def test_unknown_target_suggests_close_names(fake_plugin):
    with pytest.raises(UnknownTargetError, match="Did you mean fake"):
        fake_plugin.target("fakee")


def test_core_alone_has_no_targets_but_has_ops(monkeypatch):
    monkeypatch.setenv("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "1")
    manager = build_manager()
    assert manager.targets.names() == []
    assert len(manager.ops.names()) >= 20


def _cli(*args, **env):
    return subprocess.run([sys.executable, "-m", "kevolve.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_targets_cli_with_cpu_plugin():
    done = _cli("targets", "--json")
    data = json.loads(done.stdout)
    cpu = next(t for t in data["targets"] if t["name"] == "cpu")
    assert cpu["distribution"] == "kevolve-cpu" and cpu["usable"] is True


def test_targets_cli_without_cpu_plugin():
    done = _cli("targets", KEVOLVE_DISABLE_PLUGIN_AUTOLOAD="1")
    assert done.returncode == 0
    assert "no targets installed" in done.stdout and "pip install kevolve-cpu" in done.stdout
    done = _cli("optimize", "softmax", "--target", "cpu", KEVOLVE_DISABLE_PLUGIN_AUTOLOAD="1")
    assert done.returncode == 2 and "pip install kevolve-cpu" in done.stderr


def test_unusable_target_says_why(fake_plugin, monkeypatch):
    import fake_backend

    monkeypatch.setattr(fake_backend.FakeBackend, "usable", lambda self, t: (False, "no fake device: plug it in"))
    statuses = {s.name: s for s in kevolve.targets()}
    assert not statuses["fake"].usable and "plug it in" in statuses["fake"].reason
    with pytest.raises(kevolve.KevolveError, match="plug it in"):
        kevolve.optimize("relu", target="fake")


def test_every_hook_is_documented():
    from kevolve import hookspecs

    hooks = [name for name in dir(hookspecs) if name.startswith("kevolve_")]
    assert len(hooks) >= 4
    for name in hooks:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), f"{name} has no docstring"


def teardown_module():
    reset_manager()


def test_dynamic_torch_call_is_rejected_even_when_the_text_hides_it(fake_plugin, fast_harness):
    """The scanner misses ``sys.modules["tor" + "ch"]``; the dispatch recorder in the worker does not."""
    from kevolve.harness.pipeline import evaluate_candidate
    from kevolve.problems.catalog import CatalogProblem
    from kevolve.synthesis.base import Candidate

    source = ("import sys\nimport numpy as np\n"
              "def kernel(inputs, outputs):\n"
              "    lib = sys.modules['tor' + 'ch']\n"
              "    outputs[0][:] = lib.relu(lib.from_numpy(inputs[0])).numpy()\n")
    problem = CatalogProblem(fake_plugin.ops.get("relu"))
    ev = evaluate_candidate(Candidate(source, "pyfake"), problem, "fake", fast_harness)
    assert ev.status == "rejected" and "calls torch to compute" in ev.reason and "relu" in ev.reason


def test_result_faster_than_the_roofline_is_implausible(fake_plugin, fast_harness):
    result = kevolve.optimize("relu", target="fake_tiny", budget=2, harness=fast_harness)
    assert not result.correct
    assert all(n.evaluation.status == "rejected" and "implausible" in n.evaluation.reason for n in result.nodes)


def test_a_recipe_supports_its_families_in_the_dtypes_it_declares():
    """The base ``supports``: a recipe that lists ``dtypes`` declines a problem of its family in any other dtype,
    and one that lists none takes every dtype."""
    from types import SimpleNamespace

    import torch

    from kevolve.synthesis.recipe import Recipe

    class Rows(Recipe):
        families = ("row_norm",)
        dtypes = (torch.float32, torch.bfloat16)
        space = render = None  # never called here

    problem = lambda family, dtype: SimpleNamespace(family=family, dtype=dtype)  # noqa: E731
    assert Rows().supports(problem("row_norm", torch.bfloat16))
    assert not Rows().supports(problem("row_norm", torch.float64))
    assert not Rows().supports(problem("pointwise", torch.float32))
    Rows.dtypes = ()
    assert Rows().supports(problem("row_norm", torch.float64))


def test_conformance_recipes_start_from_the_kernel_of_their_layouts():
    """``conformance_kernel`` hands a conformance recipe the kernel spec of a layout it owns and nothing else (a
    catalog problem, another layout); ``all_dtypes_in`` checks inputs and outputs alike."""
    from types import SimpleNamespace

    from kevolve.conformance.kernel import ConformanceProblem, KernelSpec, conformance_kernel

    spec = KernelSpec(op="pad", inputs=(("x", "float32"), ("before", "int64")), outputs=("bfloat16",), expr=None,
                      layout="pad")
    problem = ConformanceProblem(spec)
    assert conformance_kernel(problem, ("pad", "resize")) is spec
    assert conformance_kernel(problem, ("resize",)) is None
    assert conformance_kernel(SimpleNamespace(family="pointwise", kernel=spec), ("pad",)) is None
    assert spec.all_dtypes_in(("float32", "int64", "bfloat16"))
    assert not spec.all_dtypes_in(("float32", "int64"))  # the output is bfloat16
