-- Schema v29: the files the dreamer pinned for each project (`pin_key_files`).
--
-- The agent's most re-read files, ranked from the project's raw logs, each with the text
-- `m[0]` shows (the whole file, or its first lines with the count of lines left out) and
-- the digest of the whole file when it was read. A run replaces a project's rows at once,
-- so a file that is gone or no longer read is no longer pinned; the head reads them only
-- when it is rebuilt anyway (never a bust).
CREATE TABLE key_files (
    project_id   TEXT NOT NULL,
    rank         INTEGER NOT NULL CHECK (rank >= 0),
    path         TEXT NOT NULL,
    reads        INTEGER NOT NULL CHECK (reads >= 0),
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    text         TEXT NOT NULL,
    cut_lines    INTEGER NOT NULL CHECK (cut_lines >= 0),
    pinned_ms    INTEGER NOT NULL,
    PRIMARY KEY (project_id, path),
    UNIQUE (project_id, rank)
) STRICT;
