-- Schema v5: the learned ratio between a model's own token counts and the engine's estimate,
-- one row per model, so a restarted proxy plans in the provider's tokens from its first call.
CREATE TABLE token_corrections (
    model TEXT PRIMARY KEY NOT NULL,
    permille INTEGER NOT NULL CHECK (permille > 0),
    samples INTEGER NOT NULL CHECK (samples >= 0),
    updated_ms INTEGER NOT NULL
) STRICT;
