-- A kevolve store at schema version 1, as kevolve wrote it (DDL from commit fc75d9d),
-- with one finished session. The migration tests open it with today's kevolve.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created REAL, updated REAL,
    problem_key TEXT NOT NULL, problem_name TEXT, family TEXT, problem_spec TEXT,
    target TEXT NOT NULL, toolchain TEXT NOT NULL, seed INTEGER, config TEXT,
    status TEXT, stop_reason TEXT, best_node INTEGER, best_fitness REAL
);
CREATE INDEX IF NOT EXISTS sessions_by_key ON sessions (problem_key, target, toolchain);
CREATE INDEX IF NOT EXISTS sessions_by_name ON sessions (problem_name, target, toolchain);
CREATE TABLE IF NOT EXISTS nodes (
    session_id TEXT NOT NULL REFERENCES sessions(id), node_id INTEGER NOT NULL, parent_id INTEGER,
    memory_op TEXT, synthesizer TEXT, recipe TEXT, language TEXT, parameters TEXT, source TEXT,
    source_hash TEXT, note TEXT, created REAL,
    PRIMARY KEY (session_id, node_id)
);
CREATE TABLE IF NOT EXISTS evaluations (
    session_id TEXT NOT NULL, node_id INTEGER NOT NULL, status TEXT, stage TEXT, fitness REAL, data TEXT,
    PRIMARY KEY (session_id, node_id),
    FOREIGN KEY (session_id, node_id) REFERENCES nodes(session_id, node_id)
);
INSERT INTO meta VALUES ('schema', '1');
INSERT INTO sessions VALUES ('0123456789ab', 1700000000.0, 1700000100.0, 'relu:float32:n=1024:old', 'relu', 'pointwise', '{"kind": "catalog", "op": "relu", "dims": {"n": 1024}, "dtype": "float32", "attrs": {}}', 'fake', 'pyfake 1', 0, '{"budget": 1}', 'done', 'budget: 1 candidates evaluated', 1, 2.0);
INSERT INTO nodes VALUES ('0123456789ab', 1, 0, 'seed', 'template', 'fake.relu', 'pyfake', '{"speed": 2}', 'COST = 0.5', 'abc123', 'an old node', 1700000050.0);
INSERT INTO evaluations VALUES ('0123456789ab', 1, 'ok', 'done', 2.0, '{"status": "ok", "stage": "done", "reason": "", "evidence": {}, "timings": {"kernel": {"median": 0.5, "p10": 0.5, "p90": 0.51, "samples": 5}, "eager": {"median": 1.0, "p10": 1.0, "p90": 1.01, "samples": 5}}, "speedups": {"eager": {"median": 2.0, "low": 1.98, "high": 2.02}}, "resources": {}, "diagnosis": null, "build_command": "", "wall_s": 0.1}');
