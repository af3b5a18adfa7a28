-- Team schema v5: a project's commit index, shared by the team: the commits each proxy read
-- from its clone's HEAD for search, so a colleague's commits (on a branch not fetched here,
-- or older than this clone) are searchable on every machine.
--
-- A commit is stored once per project by its hash and never changes, so sending it again
-- adds nothing and needs no write id. Inserts take the project's advisory lock and a version
-- from `mc_version`, like every other change, so the version cursor sees them in commit
-- order.
CREATE TABLE mc_commits (
    project_id   text   NOT NULL,
    sha          text   NOT NULL,
    author       text   NOT NULL,
    committed_ms bigint NOT NULL,
    subject      text   NOT NULL,
    body         text   NOT NULL,
    version      bigint NOT NULL,
    PRIMARY KEY (project_id, sha)
);
CREATE INDEX mc_commits_version ON mc_commits (project_id, version);
