//! One malloc arena for the proxy (`serve`, and `run`, which hosts one): the process
//! re-executes itself once with `MALLOC_ARENA_MAX=1` before it does anything else.
//!
//! glibc gives each thread that allocates an arena of its own (up to eight per core), and
//! memory freed in an arena is reused by that arena's threads only. A proxied call moves
//! between threads (the runtime's workers, the blocking pool, a pass thread), so the
//! multi-megabyte bodies of a long session, freed on one thread, stay resident in arenas
//! the next call's threads never allocate from. `bench memory --sessions 1` measured a
//! peak of 68–78 MB with the default arenas and 55–57 MB with one, for the same added
//! latency: the small allocations that make up most calls come from each thread's cache
//! without taking the arena's lock.
//!
//! glibc reads the setting once, as the process starts, and setting it from inside takes
//! `mallopt` (an unsafe call, which this workspace forbids), hence the re-execution: the
//! same program, arguments and process id, with one more variable. A limit the user set
//! (the variable itself, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`) is left as it is,
//! and a re-execution that fails leaves the process running with the default arenas.
//! Other platforms' allocators are left as they are (the module is built for glibc only).
//!
//! The setting is the proxy's, not the user's: `run` launches the agent with the
//! environment it was started with, so the re-execution also sets a marker that says the
//! limit is ours, and [`give_back_environment`] takes both away from a child's.

use std::ffi::OsStr;

/// The variable glibc reads the limit from.
const ARENA_MAX_VAR: &str = "MALLOC_ARENA_MAX";
/// Set beside [`ARENA_MAX_VAR`] by the re-execution: the limit was set here, not by the user.
const SET_HERE_VAR: &str = "MAGIC_CONTEXT_SET_MALLOC_ARENA_MAX";

/// Whether the process should re-execute itself to set the limit, given the values of
/// `MALLOC_ARENA_MAX` and `GLIBC_TUNABLES` it started with.
fn needs_limit(arena_max: Option<&OsStr>, tunables: Option<&OsStr>) -> bool {
    let tuned = tunables.is_some_and(|tunables| {
        tunables
            .to_string_lossy()
            .split(':')
            .any(|tunable| tunable.trim_start().starts_with("glibc.malloc.arena_max"))
    });
    arena_max.is_none() && !tuned
}

/// Re-executes this process with one malloc arena, unless its environment already sets a
/// limit; returns only if it does not re-execute (or the re-execution failed).
pub fn use_one_arena() {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    let arena_max = std::env::var_os(ARENA_MAX_VAR);
    let tunables = std::env::var_os("GLIBC_TUNABLES");
    if !needs_limit(arena_max.as_deref(), tunables.as_deref()) {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            tracing::debug!(%error, "cannot find this program to re-execute it with one malloc arena");
            return;
        }
    };
    let mut args = std::env::args_os();
    let mut command = Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    // `exec` returns only on failure (the program was replaced on disk, say).
    let error = command
        .args(args)
        .env(ARENA_MAX_VAR, "1")
        .env(SET_HERE_VAR, "1")
        .exec();
    tracing::debug!(%error, "cannot re-execute with one malloc arena; going on with glibc's default arenas");
}

/// Takes the limit this process set on itself out of `command`'s environment, so a program
/// it launches (the agent `run` starts) allocates as it would have without magic-context. A
/// limit the user set is left in.
pub fn give_back_environment(command: &mut tokio::process::Command) {
    if std::env::var_os(SET_HERE_VAR).is_some() {
        command.env_remove(ARENA_MAX_VAR).env_remove(SET_HERE_VAR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_limit_only_where_the_user_set_none() {
        let os = |value: &'static str| Some(OsStr::new(value));
        assert!(needs_limit(None, None));
        assert!(needs_limit(None, os("glibc.malloc.tcache_count=0")));
        assert!(!needs_limit(os("4"), None));
        assert!(!needs_limit(os(""), None));
        assert!(!needs_limit(None, os("glibc.malloc.arena_max=2")));
        assert!(!needs_limit(
            None,
            os("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=8")
        ));
    }
}
