"""A session's search settings are a typed SearchConfig, in the store as the JSON object sessions always had."""

from __future__ import annotations

import json

from kevolve.search.config import SearchConfig
from kevolve.store import Store

#: the settings of a session as kevolve stored them before ``knowledge`` and ``skills`` existed
OLD_SETTINGS = {"budget": 3, "time_budget_s": None, "target_speedup": 1.5, "search": "evolution",
                "synthesizer": "template", "baselines": ["eager", "compile"], "batch": 2, "stall": 12}


def new_session(store: Store, config: SearchConfig) -> str:
    return store.create_session(problem_key="relu:k", problem_name="relu", family="pointwise",
                                problem_spec={"kind": "catalog", "op": "relu"}, target="fake",
                                toolchain="pyfake 1", seed=0, config=config)


def test_a_session_keeps_its_typed_settings(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    config = SearchConfig(budget=7, synthesizer="template+template", baselines=("eager", "max-autotune"),
                          knowledge=False)
    assert store.session(new_session(store, config)).config == config


def test_settings_an_older_kevolve_stored_are_read_with_the_newer_defaults(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    session = new_session(store, SearchConfig())
    with store.transaction() as db:
        db.execute("UPDATE sessions SET config=? WHERE id=?", (json.dumps(OLD_SETTINGS), session))
    config = store.session(session).config
    assert config == SearchConfig(budget=3, target_speedup=1.5, search="evolution", baselines=("eager", "compile"))
    assert config.knowledge and config.skills
    assert config.to_dict() == {**OLD_SETTINGS, "knowledge": True, "skills": True}
