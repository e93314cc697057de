"""kevolve.testing: the tutorial's backend, written into a temporary folder from the tutorial page, passes the
contract suite through the two lines its docs show; each check fails on a copy of that backend with one defect.
The built-in backends run the same suite from their own folders (backends/cpu/tests, backends/amd/tests,
backends/mtia_sim/tests)."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
from kevolve.testing import CHECKS, ContractFailure, Subject, plugin_session

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
#: the cache folder of this session: pytester points HOME at its own folder, where the harness's native helper
#: (cached under ~/.cache/kevolve/native) would be compiled again, for 8 s
CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
TUTORIAL = ROOT / "docs/plugins/tutorial-backend.md"
TOY = "docs/plugins/kevolve-toy/"


def write_toy(folder: Path, package: str = "kevolve_toy", edits: dict[str, tuple[str, str]] | None = None) -> Path:
    """The tutorial's plugin as the page shows it (its code blocks include these files whole; ``__init__.py``
    "holds only a docstring"), as ``package``, with ``edits`` (file -> (text, replacement)) applied; its ``src``."""
    shown = re.findall(rf'^--8<-- "{TOY}(.+)"$', TUTORIAL.read_text(), re.MULTILINE)
    assert {"pyproject.toml", "src/kevolve_toy/backend.py", "src/kevolve_toy/plugin.py",
            "src/kevolve_toy/docs_pack/numpy_contract.md"} <= set(shown), shown
    files = {name: (ROOT / TOY / name).read_text() for name in shown}
    files["src/kevolve_toy/__init__.py"] = '"""kevolve-toy: a tutorial backend."""\n'
    for name, (old, new) in (edits or {}).items():
        assert old in files[name], f"{name} no longer contains {old!r}: update this test's defect"
        files[name] = files[name].replace(old, new)
    for name, text in files.items():
        path = folder / name.replace("kevolve_toy", package)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("kevolve_toy", package))
    return folder / "src"


def test_the_tutorial_backend_passes_the_contract_suite(pytester, monkeypatch):
    """The two lines of docs/plugins/testing.md, run by pytest in a project of their own with the kevolve pytest
    plugin loaded by its entry point: every check passes on the toy target, none is skipped."""
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE)
    monkeypatch.syspath_prepend(write_toy(pytester.path / "kevolve-toy"))
    pytester.makepyfile(test_toy_contract=textwrap.dedent("""
        from kevolve.testing import BackendContract

        class TestContract(BackendContract):
            plugin = "kevolve_toy.plugin"
    """))
    result = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(CHECKS))
    result.stdout.fnmatch_lines_random([f"*TestContract::test_{name}[[]toy[]] PASSED*" for name in CHECKS])


def test_the_suite_runs_on_a_plugin_named_on_the_command_line(pytester, monkeypatch):
    """``pytest --pyargs kevolve.testing.suite --kevolve-backend MODULE``: no test file of one's own (the runner
    check, which the test above runs, left out here for time)."""
    monkeypatch.syspath_prepend(write_toy(pytester.path / "kevolve-toy", "kevolve_toy_cli"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--pyargs", "kevolve.testing.suite",
                                          "--kevolve-backend", "kevolve_toy_cli.plugin", "-k", "not runner")
    result.assert_outcomes(passed=len(CHECKS) - 1, deselected=1)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--pyargs", "kevolve.testing.suite")
    result.assert_outcomes(skipped=len(CHECKS))


def method_before(anchor: str, method: str) -> tuple[str, str]:
    """An edit adding ``method`` (written at column 0) to ``ToyBackend`` just before the line ``anchor``."""
    return anchor, textwrap.indent(textwrap.dedent(method).strip() + "\n\n", "    ") + anchor


BACKEND = "src/kevolve_toy/backend.py"

# One defect per check, each one edit of the tutorial's files: the check named fails, with this evidence.
DEFECTS = {
    "usable": (BACKEND, ("return NumpyToolchain().available()", 'return False, ""'), "says no without a reason"),
    "facts": (BACKEND, method_before("    def usable(self, target: TargetSpec)", """
        def facts(self, target):
            import dataclasses

            return dataclasses.replace(target.facts, memory=())
        """), "no memory level"),
    "toolchains": (BACKEND, ('return f"numpy {numpy.__version__}"', 'return ""'), "version() returned ''"),
    "builds": (BACKEND, ("artifact=str(path)", 'artifact=""'), "not a BuildResult"),
    "broken_source": (BACKEND, ("path = self.write_python_file(source, workdir)", textwrap.dedent("""\
        from kevolve.errors import CompileError
                try:
                    path = self.write_python_file(source, workdir)
                except CompileError as exc:
                    raise CompileError(exc.args[0]) from None  # a defect: the repro command is dropped""")),
                      "carries no repro command"),
    "runner": (BACKEND, ("fn([t.numpy() for t in inputs], [t.numpy() for t in outputs])",
                         ("fn([t.numpy() for t in inputs], [t.numpy() for t in outputs])\n"
                          "            outputs[0].numpy()[:1] += 1  # a defect: the first element is off by one")),
               "wrong_result at correctness"),
    "classifier": (BACKEND, method_before("    def runner(self, target: TargetSpec)", """
        def classifier(self, target):
            from kevolve.backend import RooflineClassifier
            from kevolve.diagnosis import Diagnosis

            class Vague(RooflineClassifier):
                def classify(self, metrics, facts, source):
                    return Diagnosis("slow", "it is slow", metrics, source)

            return Vague()
        """), "Diagnosis(kind='slow'"),
    "docs_pack": ("src/kevolve_toy/docs_pack/numpy_contract.md", ("contract = true", "contract = yes"), "do not load"),
    "recipes": ("src/kevolve_toy/recipes.py", ("return super().supports(problem) and problem.name in UFUNCS",
                                              "return False"), "supports a catalog op"),
}


def test_every_check_has_a_defect_that_fails_it():
    assert set(DEFECTS) == set(CHECKS)


@pytest.mark.parametrize("check", list(DEFECTS))
def test_each_check_fails_on_a_backend_with_its_defect(check, tmp_path, monkeypatch):
    """The toy with one defect fails that check with the evidence; the same check passes on the toy as the
    tutorial writes it just before (so the failure is the defect's; for the runner, also that the harness's
    worker loads the plugins of this moment, not those of when its zygote started)."""
    name, edit, evidence = DEFECTS[check]
    good, bad = f"kevolve_toy_ok_{check}", f"kevolve_toy_{check}"
    monkeypatch.syspath_prepend(write_toy(tmp_path / "good", good))
    monkeypatch.syspath_prepend(write_toy(tmp_path / "bad", bad, {name: edit}))
    for package in (good, bad):
        with plugin_session(f"{package}.plugin") as manager:
            subject = Subject(f"{package}.plugin", manager, tmp_path / "builds")
            assert subject.targets() == ["toy"]
            if package == good:
                CHECKS[check](subject, "toy")
            else:
                with pytest.raises(ContractFailure, match=re.escape(evidence)) as failure:
                    CHECKS[check](subject, "toy")
                assert "target toy (ToyBackend)" in str(failure.value)


def test_a_plugin_that_fails_to_load_is_named_with_its_error(tmp_path, monkeypatch):
    from kevolve.testing.subject import PluginLoadError

    monkeypatch.syspath_prepend(write_toy(tmp_path, "kevolve_toy_import", {
        "src/kevolve_toy/plugin.py": ("from importlib import resources", "import no_such_module_here")}))
    with (pytest.raises(PluginLoadError, match="kevolve_toy_import.plugin failed to load: ModuleNotFoundError"),
          plugin_session("kevolve_toy_import.plugin")):
        pass


def test_check_backend_reports_every_failure_outside_pytest(tmp_path, monkeypatch):
    from kevolve.testing import check_backend

    name, edit, _ = DEFECTS["docs_pack"]
    monkeypatch.syspath_prepend(write_toy(tmp_path, "kevolve_toy_script", {name: edit}))
    with pytest.raises(ContractFailure, match=r"1 contract check\(s\) failed:\ndocs_pack: target toy"):
        check_backend("kevolve_toy_script.plugin", workdir=tmp_path / "builds")


def test_a_target_not_usable_here_is_checked_where_it_can_be(tmp_path, monkeypatch):
    """A target whose device is not here still keeps its promises about answers, facts and docs; the checks that
    need the machine say why they cannot run (pytest shows them skipped with that reason)."""
    from kevolve.testing import NotApplicable

    monkeypatch.syspath_prepend(write_toy(tmp_path, "kevolve_toy_away", {
        BACKEND: ("return NumpyToolchain().available()", 'return False, "no toy device here: plug one in"')}))
    with plugin_session("kevolve_toy_away.plugin") as manager:
        subject = Subject("kevolve_toy_away.plugin", manager, tmp_path / "builds")
        for name in ("usable", "facts", "toolchains", "classifier", "docs_pack", "recipes"):
            CHECKS[name](subject, "toy")
        for name in ("builds", "broken_source", "runner"):
            with pytest.raises(NotApplicable, match="toy is not usable here: no toy device here: plug one in"):
                CHECKS[name](subject, "toy")
