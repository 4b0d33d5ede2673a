-- The entity graph (seed 000 §3.3), as in the Postgres schema. UUIDs are stored as lowercase hyphenated text,
-- whose order is the same as Postgres' uuid order, so both backends sort ties alike.
CREATE TABLE entities (
    id          TEXT PRIMARY KEY NOT NULL,
    entity_type TEXT NOT NULL,
    name        TEXT NOT NULL,
    aliases     TEXT NOT NULL DEFAULT '[]',
    popularity  REAL NOT NULL DEFAULT 0,
    attributes  TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL DEFAULT ''
);
CREATE INDEX entities_type_popularity ON entities (entity_type, popularity DESC, name);

CREATE TABLE entity_names (
    entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    PRIMARY KEY (entity_id, name)
);
-- Prefix search: `name >= ? AND name < ?` ranges use this index.
CREATE INDEX entity_names_prefix ON entity_names (name);

CREATE TABLE edges (
    src        TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    dst        TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    relation   TEXT NOT NULL,
    attributes TEXT NOT NULL DEFAULT '{}',
    weight     REAL NOT NULL DEFAULT 1,
    PRIMARY KEY (src, relation, dst)
) WITHOUT ROWID;
CREATE INDEX edges_incoming ON edges (dst, relation, src);
