-- What a kevolve store at schema version 2 (DDL from commit f94dfb5) has beyond version 1: apply v1.sql first.
-- With a trace and a skill for v1.sql's session. The migration tests open it with today's kevolve.
CREATE TABLE IF NOT EXISTS traces (
    session_id TEXT NOT NULL, node_id INTEGER NOT NULL, data TEXT,
    PRIMARY KEY (session_id, node_id),
    FOREIGN KEY (session_id, node_id) REFERENCES nodes(session_id, node_id)
);
CREATE TABLE IF NOT EXISTS skills (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, session_id TEXT REFERENCES sessions(id),
    target TEXT NOT NULL, toolchain TEXT NOT NULL, family TEXT, problem_name TEXT, data TEXT
);
CREATE INDEX IF NOT EXISTS skills_by_family ON skills (target, family);
UPDATE meta SET value = '2' WHERE key = 'schema';
INSERT INTO traces VALUES ('0123456789ab', 1, '{"prompt": "p", "response": "r"}');
INSERT INTO skills (created, session_id, target, toolchain, family, problem_name, data) VALUES (1700000100.0, '0123456789ab', 'fake', 'pyfake 1', 'pointwise', 'relu', '{"lesson": "old"}');
