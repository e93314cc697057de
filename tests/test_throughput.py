"""Where a search's time goes: each evaluation's seconds per stage, charged from the progress reports it already
makes, and the session's candidates per hour with each stage's share, kept in the store and printed by `show`."""

from __future__ import annotations

import kevolve
from kevolve.harness.throughput import StageClock, session_throughput, stage_of, throughput_line


def test_the_time_between_two_reports_is_charged_to_the_first_ones_stage():
    now = [0.0]
    seen: list[str] = []
    clock = StageClock(seen.append, clock=lambda: now[0])
    for at, report in [(0.5, "compile"), (1.0, "build"), (3.0, "load"), (3.5, "correctness {'n': 8}"),
                       (4.0, "timing"), (6.0, "timing again: the last timing was disturbed"), (8.0, "profile")]:
        now[0] = at
        clock(report)
    now[0] = 8.25
    # scan 0.5 (check); compile+build 2.5; load+correctness 1.0; two timings 4.0; profile 0.25
    assert clock.split() == {"build": 2.5, "check": 1.5, "time": 4.0, "profile": 0.25}
    assert seen[0] == "compile" and len(seen) == 7  # every report is passed on
    assert stage_of("timing again: x") == "time" and stage_of("something new") == "check"


def test_a_sessions_throughput_is_candidates_per_hour_and_each_stages_share_of_its_wall_time():
    got = session_throughput([{"build": 3.0, "time": 1.0}, {"build": 1.0, "check": 1.0}], 2, 10.0)
    assert got["candidates_per_hour"] == 720.0
    assert got["shares"] == {"build": 0.4, "check": 0.1, "time": 0.1, "profile": 0.0, "search and other": 0.4}
    assert throughput_line(got) == ("throughput: 720 candidates/hour (2 in 10 s); build 40%, check 10%, time 10%, "
                                    "profile 0%, search and other 40%")
    assert throughput_line(session_throughput([], 0, 0.0)) == ""


def test_overlapping_evaluations_share_out_their_summed_time_and_say_how_many_ran_at_once():
    got = session_throughput([{"build": 6.0, "time": 2.0}, {"build": 6.0, "time": 2.0, "wait": 2.0}], 2, 9.0)
    assert got["shares"] == {"build": 0.6667, "check": 0.0, "time": 0.2222, "profile": 0.0, "wait": 0.1111,
                             "search and other": 0.0}
    assert got["overlap"] == 2.0 and got["candidates_per_hour"] == 800.0
    assert "(2 in 9 s, 2.0 evaluations at once)" in throughput_line(got)


def test_a_stored_session_keeps_each_evaluations_stages_and_shows_its_throughput(fake_plugin, fast_harness,
                                                                                  store_path):
    result = kevolve.optimize("relu", target="fake", budget=3, harness=fast_harness)
    stored = kevolve.session_result(result.session)
    assert [n.evaluation.stage_s for n in stored.nodes] == [n.evaluation.stage_s for n in result.nodes]
    assert all(n.evaluation.stage_s.get("build", 0) > 0 and n.evaluation.stage_s.get("time", 0) > 0
               for n in stored.nodes)
    throughput = stored.throughput
    assert throughput["candidates"] == 3 and throughput["candidates_per_hour"] > 0
    shares = throughput["shares"]  # each rounded to 4 places: their sum may pass 1 by half a unit each
    assert 0 < sum(shares.values()) <= 1 + 0.00005 * len(shares) + 1e-9
    assert "candidates/hour" in stored.summary() and stored.to_json()["throughput"] == throughput
