-- Who may read an entity (a document's node included): reader keys such as "tenant:alpha" and "group:finance",
-- or none for an entity shared with every tenant (crate::access). Reads match them with `?|`.
ALTER TABLE entities ADD COLUMN readers jsonb NOT NULL DEFAULT '[]';
