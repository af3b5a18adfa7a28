//! The proxy's shared state: what every stage of a call reads (settings, the store, the
//! caches a request reuses). Its routes are in [`crate::router`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use mc_dreamer::InFlightCalls;
use mc_engine::{Engine, SessionCache};
use tokio::sync::Semaphore;

use crate::chat_incremental::RecentChats;
use crate::dreamer_credentials::DreamerCredentials;
use crate::encoded_head::EncodedHeads;
use crate::encoded_list::EncodedList;
use crate::fixed_tokens::FixedTokens;
use crate::last_good::LastGood;
use crate::pass_threads::PassThreads;
use crate::project::ProjectResolver;
use crate::project_docs::DocsReader;
use crate::reported_usage::ReportedUsage;
use crate::responses_incremental::RecentResponses;
use crate::settings::ProxySettings;
use crate::store_slot::{Reopen, StoreSlot};
use crate::tokens::TokenEstimator;
use crate::windows::ProvenWindows;
use mc_agent_tools::anthropic_walks::RecentWalks;
use mc_agent_tools::chat_walks::ChatWalks;
use mc_agent_tools::responses_walks::ResponsesWalks;
use mc_wire::anthropic_incremental::RecentRequests;

/// What every request handler shares.
pub struct App {
    /// How the proxy runs.
    pub settings: ProxySettings,
    /// The engine over the store, or why the store could not be opened: managed requests are
    /// then refused, never forwarded unmanaged (DESIGN §7), and the store is opened again
    /// when one arrives.
    pub store: Arc<StoreSlot>,
    /// The upstream HTTP client (connection pools per upstream).
    pub client: reqwest::Client,
    /// Token estimates for planning.
    pub tokens: Arc<TokenEstimator>,
    /// Recent upstream bodies, for the busy-store rule.
    pub last_good: LastGood,
    /// Project identities.
    pub projects: ProjectResolver,
    /// Windows proven by overflow errors, per model.
    pub proven_windows: ProvenWindows,
    /// Recent Anthropic requests, so follow-ups decode only their new messages.
    pub recent_requests: RecentRequests,
    /// Recent Chat requests, so follow-ups decode only their new messages.
    pub recent_chats: RecentChats,
    /// Recently managed Responses requests, so a follow-up decodes only its new items.
    pub recent_responses: RecentResponses,
    /// Recent walks putting the agent tools' exchanges back, so follow-ups are prepared by
    /// their new messages only.
    pub recent_walks: RecentWalks,
    /// The same for Chat Completions requests.
    pub(crate) chat_walks: ChatWalks,
    /// The same for Responses requests.
    pub(crate) responses_walks: ResponsesWalks,
    /// Whether a task is indexing stored messages for search ([`crate::search_index_start`]).
    pub search_indexing: Arc<AtomicBool>,
    /// When the latest pass (or agent-tool preparation) took its permit, in Unix ms: how
    /// long the proxy has been quiet, for background work.
    last_pass_started_ms: AtomicI64,
    /// Per session, the encoded conversation of its last upstream Anthropic request, so the
    /// next encodes only what changed.
    pub encoded_messages: SessionCache<EncodedList>,
    /// Upstream requests encoded around their messages, per client head and pass edits.
    pub encoded_heads: EncodedHeads,
    /// Passes that may run at once. Passes queue on the store's one writer anyway; without
    /// a bound, a burst of calls would hold a thread each while waiting for it, and every
    /// thread that counts tokens keeps its own tokenizer cache (about 1.2 MB).
    pub pass_permits: Arc<Semaphore>,
    /// How many permits `pass_permits` started with; read once, as the standard library
    /// reads the cgroup files on every call and the background tasks ask whether a pass
    /// is running many times a second.
    pass_limit: usize,
    /// The threads passes run on, no more than the passes that ran at once.
    pub pass_threads: PassThreads,
    /// Per session, the prompt size its latest successful call reported: what the next pass
    /// plans with, ahead of the stored copy the ledger thread writes.
    pub recent_usage: SessionCache<ReportedUsage>,
    /// Estimated tokens of each distinct system prompt and tools.
    pub fixed_tokens: FixedTokens,
    /// The projects' docs as last read, for `m[0]`.
    pub project_docs: DocsReader,
    /// The endpoints each project's newest call used, lent to the dreamer.
    pub dreamer_credentials: Arc<DreamerCredentials>,
    /// The managed calls in flight, per project and credential, which a dreamer run on the
    /// same credential waits for.
    pub dreamer_calls: Arc<InFlightCalls>,
    /// Whether a stateful Responses call was seen (and said so in the log) yet.
    stateful_noted: AtomicBool,
}

impl App {
    /// State for `settings` over `engine`; when the store could not be opened, `reopen`
    /// (if any) opens it again on a later call ([`StoreSlot`]).
    pub fn new(
        settings: ProxySettings,
        engine: Result<Engine, String>,
        reopen: Option<Reopen>,
    ) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(30))
            .read_timeout(settings.upstream_idle_timeout)
            // Redirects would replay a prompt (and its key) to another origin.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let budget = settings.cache_budget;
        let store = Arc::new(StoreSlot::new(engine, reopen, settings.historian_retry));
        let pass_limit = concurrent_passes();
        Ok(Self {
            settings,
            client,
            tokens: Arc::new(TokenEstimator::with_memo_bytes(budget.token_memo())),
            last_good: LastGood::new(budget.last_good()),
            projects: ProjectResolver::default(),
            proven_windows: ProvenWindows::default(),
            recent_requests: RecentRequests::new(budget.recent_requests()),
            recent_chats: RecentChats::new(budget.recent_requests()),
            recent_responses: RecentResponses::new(budget.recent_requests()),
            recent_walks: RecentWalks::new(budget.prepared_walks()),
            chat_walks: ChatWalks::new(budget.prepared_walks()),
            responses_walks: ResponsesWalks::new(budget.prepared_walks()),
            search_indexing: Arc::new(AtomicBool::new(false)),
            last_pass_started_ms: AtomicI64::new(0),
            encoded_messages: SessionCache::with_budget(budget.encoded_messages()),
            encoded_heads: EncodedHeads::default(),
            pass_permits: Arc::new(Semaphore::new(pass_limit)),
            pass_limit,
            pass_threads: PassThreads::default(),
            recent_usage: SessionCache::with_budget(budget.recent_usage()),
            fixed_tokens: FixedTokens::default(),
            project_docs: DocsReader::default(),
            dreamer_credentials: Arc::default(),
            dreamer_calls: Arc::default(),
            store,
            stateful_noted: AtomicBool::new(false),
        })
    }

    /// Notes a Responses call that leans on history stored at the provider (`reason` names
    /// how), which goes up unmanaged: a warning the first time, so the user learns why the
    /// session is not managed, then a debug line per call.
    pub fn note_stateful(&self, reason: &str) {
        if self.stateful_noted.swap(true, Ordering::Relaxed) {
            tracing::debug!(reason, "a stateful Responses call; forwarded unmanaged");
        } else {
            tracing::warn!(
                reason,
                "a Responses call uses history stored at the provider, which the proxy cannot \
                 rewrite: such calls are forwarded unmanaged. Send the whole conversation with \
                 `store: false` (Codex, OpenCode and Pi do) to have it managed."
            );
        }
    }
}

impl App {
    /// The engine over the open store, or why the store is not open.
    pub fn engine(&self) -> Result<&Arc<Engine>, String> {
        self.store.engine()
    }

    /// Notes that a pass (or an agent-tool preparation) took its permit now.
    pub fn note_pass_started(&self) {
        self.last_pass_started_ms
            .store(crate::clock::now_ms(), Ordering::Relaxed);
    }

    /// Whether no request is being planned and none started in the last `quiet_ms`.
    pub fn quiet_for(&self, quiet_ms: i64) -> bool {
        let since = crate::clock::now_ms() - self.last_pass_started_ms.load(Ordering::Relaxed);
        !self.passes_running() && since >= quiet_ms
    }

    /// Whether a request is being planned now (a pass holds a permit).
    pub fn passes_running(&self) -> bool {
        self.pass_permits.available_permits() < self.pass_limit
    }
}

/// Two passes per core: one can decode, count and render while another holds the store.
fn concurrent_passes() -> usize {
    std::thread::available_parallelism().map_or(4, |cores| cores.get() * 2)
}
