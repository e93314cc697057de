"""Languages are the backends' knowledge: each toolchain says what its kernel files look like
(``Toolchain.form``), core tells a file's language and checks an LLM's answer from that, and names no language
itself (issue 37, part 4)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kevolve
from kevolve.api import guess_language
from kevolve.delivery.runtime import DISPATCH_KEYS
from kevolve.plugins import get_manager


@pytest.mark.parametrize("target,name,source,language", [
    ("cpu", "k.cpp", "int x;", "cpp"),
    ("cpu", "k.cc", "int x;", "cpp"),
    ("cpu", "k.py", "import numba\n", "numba"),
    ("cpu", "k.py", "def kernel(): pass\n", "numba"),  # the only language of the target that is Python
    ("cpu", "k.txt", "", None),
    ("nvidia_h100", "k.py", "import triton\n", "triton"),
    ("nvidia_h100", "k.py", "import cupy\n", "cuda"),
    ("nvidia_h100", "k.py", "def kernel(): pass\n", None),  # two Python languages and no import to tell them
    ("nvidia_h100", "k.cpp", "int x;", None),
])
def test_a_files_language_comes_from_the_targets_toolchains(target, name, source, language):
    assert guess_language(Path(name), source, get_manager().target(target)) == language


def test_core_names_no_language():
    """No string in core's code is a language's name or the import that marks its files: a new language is a
    backend's toolchain, never an edit to core."""
    forms = {lang: form for registered in get_manager().targets.all()
             for lang, form in registered.language_forms().items()}
    assert {"cpp", "numba", "triton", "cuda"} <= set(forms)
    # "cuda" is also PyTorch's device type, which core speaks of as torch does (devices, dispatch keys)
    words = (set(forms) - set(DISPATCH_KEYS)) | {form.imports for form in forms.values() if form.imports}
    core = Path(kevolve.__file__).parent
    named = sorted(f"{path.relative_to(core)}:{node.lineno}: {node.value!r}"
                   for path in core.rglob("*.py")
                   for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words)
    assert not named, named
