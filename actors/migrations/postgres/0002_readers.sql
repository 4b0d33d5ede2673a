-- Who may read an entity (a document's node included): reader keys such as "tenant:alpha" and "group:finance",
-- or none for an entity shared with every tenant (crate::access). Reads match them with `?|`.
ALTER TABLE entities ADD COLUMN readers jsonb NOT NULL DEFAULT '[]';
-- Owned entities only: a traversal checks each edge's ends with `NOT EXISTS` on this, which costs almost nothing
-- while few entities are owned.
CREATE INDEX entities_owned ON entities (id) WHERE readers <> '[]'::jsonb;
