-- Schema v15: the compartment the historian published before its episode was seen to end.
-- It is rendered like any other (its messages leave the prompt at once), and the next run
-- reads its range again with what followed and replaces it. At most one per session: the
-- last compartment of its history.
CREATE TABLE provisional_compartments (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    start_ordinal INTEGER NOT NULL CHECK (start_ordinal >= 0)
) STRICT, WITHOUT ROWID;
