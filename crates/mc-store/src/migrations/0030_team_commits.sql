-- Schema v30: the commit index shared through the team store.
--
-- A proxy stores the commits of its project's HEAD as it reads them for search; with a team
-- store, its sync sends the ones the team store has not had from it yet and copies in the
-- team's, so a colleague's commits (on a branch not fetched here, or made before this clone)
-- are searchable too. `team_sent` marks a row the team store already holds: sent from here,
-- or copied from it. Without a team store every row stays unsent, and a team store set later
-- receives them all.
ALTER TABLE commits ADD COLUMN team_sent INTEGER NOT NULL DEFAULT 0;

CREATE INDEX commits_team_unsent ON commits (id) WHERE team_sent = 0;
