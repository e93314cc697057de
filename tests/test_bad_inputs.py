"""Bad inputs (issue 33): each gets one line saying what is wrong and what to do, exit status 2 from the CLI (a
KevolveError from the API), no traceback, and nothing stored.

The CLI runs in-process (``kevolve.cli.main``): the same code as the command, without a Python start-up per
case."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import torch

import kevolve
from kevolve.cli import main
from kevolve.errors import KevolveError
from kevolve.problems import vetting

MODEL = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        {forward}

def get_inputs():
    return {inputs}

def get_init_inputs():
    return []
"""


def problem_file(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / f"{name}.py"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def model(forward: str = "return x * 2", inputs: str = "[torch.randn(8)]", prelude: str = "") -> str:
    return prelude + MODEL.format(forward=forward, inputs=inputs)


#: (id, argv after `kevolve`, a word the one line must contain: the right cause)
CLI_CASES = [
    ("budget-0", ["optimize", "relu", "--target", "fake", "--budget", "0"], "budget"),
    ("budget-negative", ["optimize", "relu", "--target", "fake", "--budget", "-1"], "budget"),
    ("resume-budget-0", ["optimize", "--resume", "abc", "--budget", "0"], "budget"),
    ("shape-huge", ["optimize", "layer_norm", "--target", "cpu", "--shape", "rows=1000000000000"], "memory"),
    ("shape-80GB", ["optimize", "softmax", "--target", "cpu", "--shape", "rows=200000", "cols=100000"], "memory"),
    ("attr-not-a-number", ["optimize", "layer_norm", "--target", "fake", "--attr", "eps=abc"], "eps"),
    ("attr-list", ["optimize", "layer_norm", "--target", "fake", "--attr", "eps=[1,2]"], "eps"),
    ("attr-zero-buckets", ["optimize", "feature_hash", "--target", "fake", "--attr", "num_buckets=0"], "num_buckets"),
    ("attr-word-buckets", ["optimize", "feature_hash", "--target", "fake", "--attr", "num_buckets=x"], "num_buckets"),
    ("attr-fraction", ["optimize", "feature_hash", "--target", "fake", "--attr", "num_buckets=1.5"], "num_buckets"),
    ("attr-negative-k", ["optimize", "jagged_truncate", "--target", "fake", "--attr", "k=-1"], "k must"),
    ("attr-not-a-bool", ["optimize", "bucketize", "--target", "fake", "--attr", "right=maybe"], "right"),
    ("attr-unknown-choice", ["optimize", "matmul", "--target", "fake", "--attr", "epilogue=nonsense"], "epilogue"),
]

#: (id, problem file text, a word the line must contain)
FILE_CASES = [
    ("hangs-on-import", model(prelude="while True:\n    pass\n"), "did not finish"),
    ("exits-on-import", model(prelude="import sys\nsys.exit(3)\n"), "sys.exit(3)"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 50, "text"),
    ("forward-raises", model(forward="raise ValueError('no forward today')"), "no forward today"),
    ("forward-not-a-tensor", model(forward="return 3"), "forward"),
    ("no-inputs", model(inputs="[]"), "get_inputs"),
]


def stored_sessions(path: Path) -> int:
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return db.execute("SELECT count(*) FROM sessions").fetchone()[0] if "sessions" in tables else 0


def assert_one_line(argv: list[str], cause: str, capsys, store_path: Path) -> None:
    assert main([*argv, "--quiet"] if argv[0] == "optimize" else argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert cause in err, err
    assert stored_sessions(store_path) == 0


@pytest.mark.parametrize("argv,cause", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_bad_cli_input_is_one_line(fake_plugin, capsys, store_path, argv, cause):
    assert_one_line(argv, cause, capsys, store_path)


@pytest.mark.parametrize("text,cause", [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_bad_problem_file_is_one_line(fake_plugin, capsys, store_path, tmp_path, monkeypatch, text, cause):
    monkeypatch.setattr(vetting, "LOAD_TIMEOUT_S", 3.0)
    path = problem_file(tmp_path, "problem", text)
    assert_one_line(["optimize", path, "--target", "fake"], cause, capsys, store_path)


def test_evaluate_checks_the_size_too(fake_plugin, capsys, store_path, tmp_path):
    kernel = tmp_path / "k.cpp"
    kernel.write_text("// never built: the shape is refused first\n")
    assert_one_line(["evaluate", str(kernel), "--op", "softmax", "--target", "cpu", "--shape", "rows=200000",
                     "cols=100000"], "memory", capsys, store_path)


#: (id, a call of the Python API, the argument the message says what it must be)
API_CASES = [
    ("target-int", lambda: kevolve.optimize("relu", target=5), "target"),
    ("target-none", lambda: kevolve.optimize("relu", target=None), "target"),
    ("dtype-int", lambda: kevolve.optimize("relu", target="fake", dtype=5), "dtype"),
    ("store-int", lambda: kevolve.optimize("relu", target="fake", store=123), "store"),
    ("synthesizer-none", lambda: kevolve.optimize("relu", target="fake", synthesizer=None), "synthesizer"),
    ("budget-str", lambda: kevolve.optimize("relu", target="fake", budget="4"), "budget"),
    ("budget-none", lambda: kevolve.optimize("relu", target="fake", budget=None), "budget"),
    ("seed-str", lambda: kevolve.optimize("relu", target="fake", seed="a"), "seed"),
    ("time-budget-str", lambda: kevolve.optimize("relu", target="fake", time_budget_s="10"), "time_budget_s"),
    ("dims-str", lambda: kevolve.optimize("relu", target="fake", dims="rows=5"), "dims"),
    ("baselines-str", lambda: kevolve.optimize("relu", target="fake", baselines="eager"), "baselines"),
    ("attrs-str", lambda: kevolve.optimize("layer_norm", target="fake", attrs="eps=1"), "attrs"),
    ("evaluate-int-file", lambda: kevolve.evaluate(123, "relu", target="fake"), "kernel_file"),
    ("resume-budget-0", lambda: kevolve.resume("abc", budget=0), "budget"),
]


@pytest.mark.parametrize("call,name", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_bad_api_argument_is_one_kevolve_error(fake_plugin, store_path, call, name):
    with pytest.raises(KevolveError) as caught:
        call()
    message = str(caught.value)
    assert f"{name} must" in message and len(message.splitlines()) == 1, message
    assert stored_sessions(store_path) == 0


def test_a_torch_dtype_is_accepted(fake_plugin, fast_harness):
    result = kevolve.optimize("relu", target="fake", budget=1, dtype=torch.bfloat16, harness=fast_harness)
    assert result.problem.dtype == torch.bfloat16
