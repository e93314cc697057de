"""kevolve-amd stands on kevolve and kevolve-triton alone: loading it (and using its targets) never imports the
NVIDIA backend, and no module of it names one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import kevolve_amd

PROBE = """
import json, sys
from kevolve.plugins import get_manager
manager = get_manager()
target = manager.target("mi300x")
facts = target.backend.facts(target.spec)
target.backend.toolchain(target.spec, "triton"), target.backend.classifier(target.spec), target.backend.estimator(target.spec)
target.backend.timing(target.spec), target.backend.profiler(target.spec), target.backend.recipes(target.spec)
print(json.dumps({"targets": manager.targets.names(), "failures": [f.error for f in manager.failures],
                  "packs": manager.docs.packs, "nvidia": sorted(m for m in sys.modules if "nvidia" in m)}))
"""


def test_loading_kevolve_amd_does_not_import_kevolve_nvidia():
    env = {**os.environ, "KEVOLVE_DISABLE_PLUGIN_AUTOLOAD": "1", "KEVOLVE_PLUGINS": "kevolve_triton.plugin,kevolve_amd.plugin"}
    proc = subprocess.run([sys.executable, "-c", PROBE], check=False, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["failures"] == []
    assert {"amd_mi250", "amd_mi300", "amd_mi325", "amd_mi350"} <= set(seen["targets"])
    assert not any(name.startswith("nvidia") for name in seen["targets"])
    assert "amd" in seen["packs"]
    assert not [m for m in seen["nvidia"] if m.startswith("kevolve_nvidia")], seen["nvidia"]


def test_no_module_of_kevolve_amd_imports_an_nvidia_backend():
    modules = sorted(Path(kevolve_amd.__file__).parent.rglob("*.py"))
    assert len(modules) >= 6
    for path in modules:
        text = path.read_text()
        assert not re.search(r"^\s*(from|import)\s+(kevolve_nvidia|triton\.backends\.nvidia)", text, re.MULTILINE), path
