-- Team schema v4: a project's smart notes (`ctx_note` with a condition), shared by the team:
-- a note one agent leaves for the project resurfaces in a colleague's session once the
-- condition holds. Session notes stay on their machine with their session.
--
-- A note is named by `origin`, the write id of the change that added it: every proxy that
-- caches the note knows it by that name, whatever local id its own store gave it, so a
-- change made on any machine reaches the same note. Changes take the project's advisory lock
-- and a version from `mc_version`, like memories, and are followed by the same cursor.
CREATE TABLE mc_notes (
    origin            text   PRIMARY KEY,
    project_id        text   NOT NULL,
    session_id        text,
    content           text   NOT NULL CHECK (length(btrim(content)) > 0),
    surface_condition text   NOT NULL,
    status            text   NOT NULL CHECK (status IN ('active', 'pending', 'dismissed')),
    created_ms        bigint NOT NULL,
    updated_ms        bigint NOT NULL,
    version           bigint NOT NULL
);
CREATE INDEX mc_notes_version ON mc_notes (project_id, version);
