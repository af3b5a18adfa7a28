-- Schema v19: the user's profile, what the head says about the person the agent works for.
--
-- The historian records user observations per scope ("Prefers short answers.") and counts
-- how often each is seen again; one seen often enough is promoted here, once, and from then
-- on is the user's to edit or remove (`magic-context profile`). A removed line stays, marked,
-- so it is never promoted again from the same observation. Profile lines hold across
-- projects: they describe the user, not the code.
CREATE TABLE user_profile (
    id              INTEGER PRIMARY KEY,
    text            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('active', 'removed')),
    observation_key TEXT UNIQUE,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
) STRICT;
