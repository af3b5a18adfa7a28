//! The checks every small-window run of a real client makes (see the scenarios
//! `codex_small_window` and `opencode_small_window`): the client finished the script, no call
//! over the window reached the provider, the proxy cut the conversation, the cache-read
//! share held, and every tool result is in the store. The client's own compaction is
//! checked by each scenario, in its client's terms.

use super::client_run::ClientRun;
use super::seq_steps::{FELL_THROUGH, FINAL_ANSWER};
use super::store_check;

/// Asserts the shared checks of `run` at `window_tokens`, failing with `diagnostics`.
pub fn assert_managed_run(
    run: &ClientRun,
    window_tokens: u64,
    min_cache_read_share: f64,
    diagnostics: &str,
) {
    assert!(
        run.status.success() && run.stdout.contains(FINAL_ANSWER),
        "{} did not finish with the script's final answer ({}; `{FELL_THROUGH}` means a \
         scripted turn's `when` did not match)\n{diagnostics}",
        run.client,
        run.status,
    );
    assert_eq!(
        run.tool_results.len(),
        run.scripted_tool_calls,
        "one tool result per scripted step\n{diagnostics}"
    );
    for call in &run.ledger {
        assert!(
            call.status == 200 && call.prompt_tokens <= window_tokens,
            "upstream call {} ({:?}) of {} tokens answered {} at the {window_tokens} \
             window\n{diagnostics}",
            call.seq,
            call.label,
            call.prompt_tokens,
            call.status,
        );
    }
    assert!(
        run.shrinking_main_calls() > 0,
        "no main call shrank: the proxy never cut the conversation\n{diagnostics}"
    );
    let share = run.cache_read_share();
    assert!(
        share >= min_cache_read_share,
        "cache-read share {share:.3} from the second main call on, below \
         {min_cache_read_share}\n{diagnostics}"
    );
    store_check::assert_tool_results_stored(&run.store_path(), &run.tool_results);
}
