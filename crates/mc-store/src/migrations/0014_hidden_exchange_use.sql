-- Schema v14: when each hidden exchange was last put back into a request. Anchors hash a
-- conversation, not a session, so nothing else says when an exchange is no longer needed:
-- one that no request has passed for a long time (the conversation ended or was rewound
-- away) is deleted by its age since last use. Existing exchanges count as used when stored.
ALTER TABLE hidden_exchanges ADD COLUMN last_used_ms INTEGER NOT NULL DEFAULT 0;

UPDATE hidden_exchanges SET last_used_ms = created_ms;

CREATE INDEX hidden_exchanges_by_last_use ON hidden_exchanges (last_used_ms);
