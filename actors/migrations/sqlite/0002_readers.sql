-- Who may read an entity (a document's node included): a JSON array of reader keys such as "tenant:alpha" and
-- "group:finance", or '[]' for an entity shared with every tenant (crate::access).
ALTER TABLE entities ADD COLUMN readers TEXT NOT NULL DEFAULT '[]';
-- Owned entities only: a traversal checks each edge's ends with `NOT EXISTS` on this.
CREATE INDEX entities_owned ON entities (id) WHERE readers <> '[]';
