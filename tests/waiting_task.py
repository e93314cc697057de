"""A harness task (``{"entry": "waiting_task:run"}``) that says it waits for its device for ``wait_s`` seconds,
then works for ``work_s``: what a worker queued behind another candidate's timing reports (harness/worker.py)."""

from __future__ import annotations

import time

from kevolve.harness.throughput import WAITING_FOR_DEVICE


def run(task: dict, report) -> dict:
    report(WAITING_FOR_DEVICE)
    time.sleep(task["wait_s"])
    report("timing")
    time.sleep(task["work_s"])
    return {"status": "ok"}
