-- The entity graph (seed 000 §3.3): typed entities, allowlisted relations, and the names the search lane matches.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE entities (
    id          uuid PRIMARY KEY,
    entity_type text NOT NULL,
    name        text NOT NULL,
    aliases     jsonb NOT NULL DEFAULT '[]',
    popularity  double precision NOT NULL DEFAULT 0,
    attributes  jsonb NOT NULL DEFAULT '{}',
    -- What was written, so re-ingesting the same row is a no-op.
    content_hash text NOT NULL DEFAULT ''
);
CREATE INDEX entities_type_popularity ON entities (entity_type, popularity DESC, name);

-- One row per name or alias, lowercased: prefix (text_pattern_ops) and trigram (pg_trgm) typeahead.
CREATE TABLE entity_names (
    entity_id uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name      text NOT NULL,
    PRIMARY KEY (entity_id, name)
);
CREATE INDEX entity_names_prefix ON entity_names (name text_pattern_ops);
CREATE INDEX entity_names_trigram ON entity_names USING gin (name gin_trgm_ops);

CREATE TABLE edges (
    src        uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    dst        uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    relation   text NOT NULL,
    attributes jsonb NOT NULL DEFAULT '{}',
    weight     double precision NOT NULL DEFAULT 1,
    PRIMARY KEY (src, relation, dst)
);
-- Outgoing expansion uses the primary key; incoming expansion uses this one.
CREATE INDEX edges_incoming ON edges (dst, relation, src);
