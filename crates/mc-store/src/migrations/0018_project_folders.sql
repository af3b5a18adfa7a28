-- Schema v18: the folder each project was last seen in.
--
-- A project's id is what the store needs (`git:<root commit>`, the same under any clone, or
-- `path:<hash>`), but people know their projects by folder: `status` run elsewhere showed
-- only ids. The proxy writes the folder it identified a project from, once per folder it
-- meets; the newest wins. Nothing but naming reads it.
CREATE TABLE project_folders (
    project TEXT PRIMARY KEY,
    folder  TEXT NOT NULL,
    seen_ms INTEGER NOT NULL
) STRICT;
