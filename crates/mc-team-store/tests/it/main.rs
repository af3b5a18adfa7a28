//! Integration tests of the team store against a real PostgreSQL.
//!
//! `MC_TEST_PG_URL` names a server the tests may create databases on (`.ci/postgres-scratch
//! start` prints it; `.ci/run` sets it). When it is set, a server that does not answer fails
//! the tests; only when it is absent do they print that they were skipped. Tests that stop
//! and restart a server start their own cluster from `MC_TEST_PG_BIN`.

#[cfg(test)]
mod cluster;
#[cfg(test)]
mod commits;
#[cfg(test)]
mod concurrency;
#[cfg(test)]
mod failure;
#[cfg(test)]
mod leases;
#[cfg(test)]
mod maintenance;
#[cfg(test)]
mod notes;
#[cfg(test)]
mod support;
#[cfg(test)]
mod usage;
#[cfg(test)]
mod writes;
