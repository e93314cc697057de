"""Write ``tests/slow_tests.txt``, the tests the fast tier (``pytest -m "not slow"``) leaves out, from a full
run's timings: ``python -m pytest -q -n 3 --durations=0 tests backends/*/tests > LOG``, then
``python tests/list_slow_tests.py LOG``. Its lines are pytest's node ids, relative to the repository root.
A test function is slow when one of its cases took ``--seconds`` or more (setup, call and teardown together)."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LIST = Path(__file__).with_name("slow_tests.txt")


def slow_functions(log: str, seconds: float) -> list[str]:
    per_case: dict[str, float] = defaultdict(float)
    for match in re.finditer(r"(?m)^([\d.]+)s (?:call|setup|teardown)\s+(\S+)", log):
        per_case[match.group(2)] += float(match.group(1))
    return sorted({case.split("[")[0] for case, spent in per_case.items() if spent >= seconds})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("log", type=Path)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    found = slow_functions(args.log.read_text(), args.seconds)
    LIST.write_text("".join(f"{name}\n" for name in found))
    print(f"{len(found)} slow test functions -> {LIST}")


if __name__ == "__main__":
    main()
