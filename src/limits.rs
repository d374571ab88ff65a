//! Every bound Baton enforces, in one place, each with the reason for its value.
//!
//! A bound that is not here is a bug: loops, queues, retries and records all
//! have one, so that no caller can make an object do unbounded work.

/// Longest `key`, `group` or `revision`, in UTF-8 bytes: the public contract's
/// limit, large enough for a repo/branch/label triple, small enough that a
/// row per waiter stays far below the Durable Object's 2 MB per value.
pub const IDENT_BYTES_MAX: usize = 512;

/// Longest Workflow instance id, in characters: the Workflows platform's own limit.
pub const INSTANCE_ID_CHARS_MAX: usize = 100;

/// Longest `inputHash`, in characters: the contract's limit; room for a hex
/// SHA-512 digest, which is the longest hash a caller is likely to send.
pub const INPUT_HASH_CHARS_MAX: usize = 128;

/// Longest `TURN_EVENT_TYPE`, in characters (contract §1b): a grant's own
/// event type is `TURN_EVENT_TYPE`, `-`, the key's 16-hex-digit digest, `-`
/// and its registration number (at most 16 digits, a safe JS integer), and
/// must stay within the Workflows platform's 100 characters for an event type.
pub const TURN_EVENT_TYPE_CHARS_MAX: usize = 64;

/// Longest Workflow event type, in characters: the Workflows platform's limit.
pub const EVENT_TYPE_CHARS_MAX: usize = 100;

/// Most waiters one key holds. The contract's cost target (§1c) is a call
/// behind 10,000 waiters; twice that leaves room for bursts above it while
/// bounding a superseding enqueue's work (and its reply: 20,000 ids of 100
/// characters is 2 MB, under the RPC limit). Beyond it a key is being used
/// as a work queue, and enqueue says so.
pub const WAITERS_PER_KEY_MAX: u32 = 20_000;

/// Most superseded ids a key remembers so that a late starter still learns it
/// was superseded. As many as a full queue, so one supersede of a full queue is
/// remembered whole; the oldest are forgotten first.
pub const SUPERSEDED_REMEMBERED_MAX: u32 = 20_000;

/// Most waiters one `release` (or alarm) skips as dead before it stops and
/// leaves the rest to the holder-check alarm. Each skip costs a Workflow
/// status call, and a Durable Object invocation has a subrequest budget;
/// 32 keeps one call well inside it while clearing any realistic run of
/// crashed waiters.
pub const WAKE_ATTEMPTS_PER_CALL_MAX: u32 = 32;

/// Most superseded instances one enqueue terminates itself. The object
/// spends at most this many subrequests in the call; the caller gets every
/// id, and the holder-check alarm terminates the rest (each is owed its
/// termination until done, [`TERMINATIONS_PER_ALARM_MAX`] an alarm).
pub const TERMINATIONS_PER_CALL_MAX: usize = 256;

/// Most owed terminations one holder-check alarm works through. Each costs
/// a status call and, for an instance still running, a terminate: 32 keep
/// an alarm's subrequests (with the holder checks beside them) well inside
/// its budget, and the alarm comes back every `HOLDER_CHECK_MS` while any
/// is owed.
pub const TERMINATIONS_PER_ALARM_MAX: u32 = 32;

/// Most keys one holder-check alarm examines. One object normally serves one
/// key; the bound keeps an object that was handed many keys from spending its
/// whole alarm budget on status calls.
pub const KEYS_CHECKED_PER_ALARM_MAX: u32 = 64;

/// Most keys whose summary (counts and holders, up to
/// [`HOLDERS_PER_KEY_MAX`] of them) one Coordinator object keeps in memory
/// between decisions. One object normally serves one key; an object handed
/// many keys drops them all when full and reloads each with one read.
pub const KEY_SUMMARIES_KEPT_MAX: usize = 64;

/// Default period of the holder-check alarm, in milliseconds (contract default).
pub const HOLDER_CHECK_MS_DEFAULT: u64 = 5_000;

/// Shortest holder-check period accepted from configuration, in milliseconds:
/// below this the alarm would spend the object's time on status calls.
pub const HOLDER_CHECK_MS_MIN: u64 = 100;

/// Longest holder-check period accepted from configuration (one day): longer
/// would leave a dead holder blocking its key for longer than any Workflow
/// step timeout.
pub const HOLDER_CHECK_MS_MAX: u64 = 86_400_000;

/// Largest integer that survives a trip through a JS number (2^53 - 1).
pub const JS_SAFE_INTEGER_MAX: u64 = (1 << 53) - 1;

/// Default `SERIAL_WAITER_TIMEOUT_MS`: a deploy waiting an hour behind a live
/// one is stuck, not queued (the contract's default, §2).
pub const SERIAL_WAITER_TIMEOUT_MS_DEFAULT: u64 = 3_600_000;

/// Default `SERIAL_HEARTBEAT_EXPIRY_MS`: a holder silent for 10 minutes is
/// taken to be dead, long enough to ride out a slow step between heartbeats.
pub const SERIAL_HEARTBEAT_EXPIRY_MS_DEFAULT: u64 = 600_000;

/// Finished executions kept per group for `serialInspect`'s `recent`; older
/// rows are deleted as new ones arrive, so a group's rows stay bounded.
pub const SERIAL_RECENT_PER_GROUP_MAX: u32 = 50;

/// Most waiters one group holds. With newest-wins there is normally one; only
/// many arrivals at the same current revision pile up, and past this many a
/// group is misused as a work queue.
pub const SERIAL_WAITERS_PER_GROUP_MAX: u32 = 1_000;

/// Most waiters `serialInspect` lists.
pub const SERIAL_INSPECT_WAITING_MAX: u32 = 100;

/// Longest `TURN_EVENT_TYPE` a serial waiter with grant can take its turn
/// from: the turn adds `-serial-` and a seq of at most 16 digits (below
/// 2^53), and an event type is at most 100 characters (contract §1b's 64).
pub const SERIAL_TURN_PREFIX_CHARS_MAX: usize = 64;

/// Largest HTTP request body the API reads, in bytes (64 KiB, the operator
/// surface's promise). The biggest legitimate body is an enqueue: three
/// identifiers of at most 512 bytes and an instance id, well under 4 KiB,
/// so anything near this bound is a mistake or an attack, and refusing it
/// before parsing bounds the work one request can cause.
pub const HTTP_BODY_BYTES_MAX: usize = 64 * 1024;

/// Most bytes past an operation's own body limit that the API reads and
/// discards from a refused request before it answers (1 MiB). A reply sent
/// while the client is still writing makes the runtime close the
/// connection, and the client then often sees the reset instead of its 413
/// (or 401, 415): reading the rest first lets it read the answer. The bound
/// keeps what one refused request costs within 17 times the 64 KiB limit;
/// past it (by `Content-Length`, or once read) the answer goes at once and
/// a reset is the client's lot.
pub const HTTP_BODY_DRAIN_BYTES_MAX: usize = 1024 * 1024;

/// Fewest bytes a bearer-token comparison walks, whatever the lengths: the
/// comparison's time then does not depend on the configured token's length
/// for any token up to this size (a 256-bit token in hex is 64 bytes; this
/// leaves room for any generator's output).
pub const TOKEN_COMPARE_BYTES_MIN: usize = 256;

/// Most characters of a caller's own text (an unknown field's name, an
/// unknown method) echoed back in an error message: enough to recognise
/// it, not enough to turn an error reply into an amplifier.
pub const HTTP_ECHO_CHARS_MAX: usize = 64;

// --- edge ---

/// Longest Workflow binding name in `options.workflow`, in characters. A
/// binding name is a JS identifier in wrangler's config; 64 is far beyond
/// any real one and keeps a refused name short in the error and the logs.
pub const WORKFLOW_NAME_CHARS_MAX: usize = 64;

/// Most holders one key may have at once (`options.limit`): the contract's
/// bound. Each holder is a live Workflow instance the object checks on its
/// alarm, so the bound also caps one alarm's status calls per key.
pub const HOLDERS_PER_KEY_MAX: u32 = 1_000;

/// Contract §11: the longest `reason` an operator's `pause` keeps, in UTF-8
/// bytes: the contract's bound, as long as a key (a sentence or a ticket
/// link), and it rides in the key's summary, which a decision carries.
pub const PAUSE_REASON_BYTES_MAX: usize = 512;

/// Contract §1c: `options.priority` is an integer from -100 to 100.
pub const PRIORITY_MIN: i8 = -100;
/// See [`PRIORITY_MIN`].
pub const PRIORITY_MAX: i8 = 100;

/// Contract §1c: `etaMs` is the mean of a key's last 20 hold times.
pub const HOLD_TIMES_KEPT: usize = 20;

/// For how many of a key's grants after its last one a tenant with no
/// waiter left is remembered as served (§1c: a tenant never served goes
/// first, so one forgotten comes back ahead of tenants served after it).
/// A grant leaves at most one such tenant, so a key keeps at most this
/// many. Forgetting can break §1c's "one grant per other waiting tenant"
/// only for a tenant that waits, unserved, through this many grants at
/// its priority: a round of the tenants with waiters is shorter than the
/// most waiters a key holds ([`WAITERS_PER_KEY_MAX`]).
pub const IDLE_TENANT_KEPT_GRANTS: u64 = WAITERS_PER_KEY_MAX as u64;

// --- rate limits ---

/// Most rules one `acquire` names: the contract's bound. Eight covers every
/// provider's stacked limits (per second, minute, hour, day, and a few
/// per-endpoint ones) and keeps a grant row's rule set a small bit mask.
pub const RATE_RULES_PER_CALL_MAX: usize = 8;

/// Longest rule `id`, in characters: the contract's bound.
pub const RATE_RULE_ID_CHARS_MAX: usize = 64;

/// Largest rule `limit`: the contract's bound.
pub const RATE_LIMIT_MAX: u32 = 100_000;

/// Longest rule `windowMs` (one day): the contract's bound. It is also how
/// long grants are kept at most, so it bounds a bucket's rows by its traffic
/// over a day.
pub const RATE_WINDOW_MS_MAX: u64 = 86_400_000;

/// Most permits one `acquire` or `refund` asks for: the contract's bound.
pub const RATE_PERMITS_MAX: u32 = 10_000;

/// Longest `cooldownMs` of a penalty (one day): the contract's bound, the
/// longest Retry-After any provider is known to send.
pub const RATE_COOLDOWN_MS_MAX: u64 = 86_400_000;

/// Rule ids one bucket remembers: twice a call's eight, so a bucket can
/// move to a whole new rule set while the old one's grants age out. A grant
/// row carries one running count per slot, so this is also its width. A
/// slot is reused only once no kept grant counts for its rule; a call that
/// needs a slot when none can be reused is refused.
pub const RATE_RULE_SLOTS: usize = 16;

/// Aged grant rows one call deletes at most. Each call adds at most one row,
/// so deleting up to four keeps the table at the live rows plus a backlog
/// that only shrinks, without letting one call's cost depend on how long
/// the bucket sat idle.
pub const RATE_PRUNE_ROWS_PER_CALL: u32 = 4;

/// Grant rows one `refund` walks at most, newest first. A refund of the
/// largest `permits` touches at most this many live rows; past it the call
/// refunds what it reached and says how many in `refunded`.
pub const RATE_REFUND_ROWS_VISITED_MAX: u32 = 10_000;

/// Grant rows read per page while a refund walks back.
pub const RATE_REFUND_PAGE_ROWS: u32 = 64;

/// Newest grant rows a `RateLimiter` object keeps in memory (its
/// `RateCache`). A row is about 150 bytes, so this is about 150 kB per
/// object at most, little even with many objects in one isolate. Rows are
/// held only until they age out, so a bucket holds at most the grants in
/// its longest window. A window whose start falls among the rows held, or
/// before the oldest row kept (the longest window, usually: older rows are
/// pruned), needs no statement to find its use; the README's rules (100 a
/// minute) stay far inside it. Past it the cache asks storage for what it
/// does not hold, so a larger bucket is exact too, with a read or two more
/// per call.
pub const RATE_CACHE_ROWS: usize = 1_024;

/// Grant rows a `RateLimiter` object reads into its cache when it starts
/// (after an eviction or a restart); the cache grows from there with each
/// grant, up to [`RATE_CACHE_ROWS`]. Few, so that the first call after a
/// restart stays short (every value read crosses from JS into WASM).
pub const RATE_CACHE_LOAD_ROWS: usize = 128;
// --- coordinator: several Workflows, N holders, late creates (§1a) ---

/// Default `ENQUEUE_GRACE_MS` (contract default): how long after its enqueue
/// an instance the Workflow binding cannot find is taken to be "not created
/// yet" rather than dead. A minute covers a creator's `create` call with
/// retries; it is also the longest a creator that crashed between enqueue
/// and create can stall a key.
pub const ENQUEUE_GRACE_MS_DEFAULT: u64 = 60_000;

/// Longest `ENQUEUE_GRACE_MS` accepted from configuration (one hour): a
/// crashed creator stalls the key for up to the grace, so a longer one
/// trades recovery for nothing a creator needs.
pub const ENQUEUE_GRACE_MS_MAX: u64 = 3_600_000;

/// Most holders of one key the holder-check alarm asks about per run, the
/// least recently checked first, so that every holder is reached within
/// `limit / 15` alarms. Each is a Workflow status call (a subrequest), and
/// 15 per key times [`KEYS_CHECKED_PER_ALARM_MAX`] keys (960) stays within
/// one invocation's subrequest budget of 1,000 (and one object normally
/// serves one key).
pub const HOLDER_CHECKS_PER_TICK_MAX: u32 = 15;
/// Most reads one Coordinator decision's view takes beyond the key's
/// summary (`coordinator::next_read`): each of its six kinds at most once,
/// so a plan that asked for more would be asking again for something it
/// has.
pub const READS_PER_VIEW_MAX: u32 = 6;
// --- debounce ---

/// Shortest `delayMs` and `maxWaitMs`, in ms (contract §4): a burst needs
/// some window to exist at all.
pub const DEBOUNCE_DELAY_MS_MIN: u64 = 1;

/// Longest `delayMs` and `maxWaitMs`, in ms: 7 days (contract §4). Also the
/// `maxWaitMs` of a call that names none, so every burst ends within a week
/// however steady its stream of calls.
pub const DEBOUNCE_DELAY_MS_MAX: u64 = 604_800_000;

/// Largest `params`, in bytes of serialized JSON (contract §4): 1 MiB, the
/// Workflows platform's own limit on an instance's params, and well under a
/// SQLite-backed Durable Object's 2 MB per row, where the pending start's
/// params are kept.
pub const DEBOUNCE_PARAMS_BYTES_MAX: usize = 1_048_576;

/// Longest `idPrefix`, in characters (contract §4): with a suffix of at most
/// [`DEBOUNCE_ID_SUFFIX_CHARS_MAX`], the id fits the platform's 100.
pub const DEBOUNCE_ID_PREFIX_CHARS_MAX: usize = 64;

/// Longest unique suffix of a debounce or startAt instance id (contract §4):
/// a UUID's 36 characters, which is what the shell draws.
pub const DEBOUNCE_ID_SUFFIX_CHARS_MAX: usize = 36;

/// Farthest ahead a `startAt` may be, in ms: 365 days (contract §4).
pub const START_AT_AHEAD_MS_MAX: u64 = 365 * 86_400_000;

/// Confirmed starts a key lists in `inspect` (contract §4: the 20 most recent).
pub const DEBOUNCE_STARTED_KEPT: usize = 20;

/// Most starts one key may have promised and not yet confirmed: its pending
/// start plus those whose create is in flight or failing. Starts are never
/// dropped, so while the Workflow binding refuses every create they pile up;
/// past this many, calls that would promise another are refused (naming
/// `key`) instead. Each costs a create per retry on the alarm, and 32 keeps
/// one alarm's subrequests well inside an invocation's budget.
pub const DEBOUNCE_UNFINISHED_STARTS_MAX: usize = 32;

/// How long a create may go unreported before the alarm presumes it lost
/// (the object was reset between the commit and the create, or while
/// awaiting it) and tries again, in ms. Longer than any create takes; a
/// second create of an id that did start counts as done, so erring short is
/// only a wasted subrequest.
pub const DEBOUNCE_CREATE_LOST_MS: u64 = 30_000;

/// First retry of a failed create, in ms; each further failure doubles it.
/// A second is long enough not to hammer a binding that is failing, short
/// enough that a blip delays a start by about that much.
pub const DEBOUNCE_CREATE_RETRY_MS_MIN: u64 = 1_000;

/// Longest wait between retries of a failing create, in ms (5 minutes):
/// bounds how late a start is once the Workflow binding recovers, at one
/// subrequest per 5 minutes per stuck start while it does not.
pub const DEBOUNCE_CREATE_RETRY_MS_MAX: u64 = 300_000;

/// Most characters of a create's failure message a key keeps for `inspect`
/// and the logs: enough to say what went wrong, not a stored stack trace.
pub const DEBOUNCE_ERROR_CHARS_MAX: usize = 256;

/// Rounds of effects one call performs through the shell's driver: its own,
/// then those their results asked for (a create's retry that fell due
/// meanwhile, a check's hand-on). Two covers every case the cores produce;
/// anything beyond waits for the alarm rather than keep a caller.
pub const EFFECT_ROUNDS_MAX: usize = 2;

/// Keys one Debouncer alarm ticks before it re-arms for the rest. One object
/// normally serves one key; the bound keeps an object handed many keys from
/// spending one invocation's subrequest budget on creates.
pub const DEBOUNCE_KEYS_PER_ALARM_MAX: u32 = 16;

/// Fewest `batch.maxItems` (contract §4a): a batch of one starts with its
/// first call, which is the least a batch can hold.
pub const DEBOUNCE_BATCH_ITEMS_MIN: u32 = 1;

/// Most `batch.maxItems` (contract §4a): 1000 params a run. Every call on a
/// batching key reads the batch's rows (a row per call), so this also bounds
/// what one call reads.
pub const DEBOUNCE_BATCH_ITEMS_MAX: u32 = 1_000;

/// `batch.maxItems` when the call names none (contract §4a).
pub const DEBOUNCE_BATCH_ITEMS_DEFAULT: u32 = 100;

/// Fewest `batch.maxBytes` (contract §4a). A bound this small lets no params
/// in at all (even `{"batch":[1]}` is 13 bytes): each call is refused naming
/// `params`, which says why.
pub const DEBOUNCE_BATCH_BYTES_MIN: u32 = 1;

/// Most `batch.maxBytes`, and its default (contract §4a): the platform's
/// 1 MiB for an instance's params, which the batch becomes, measured as the
/// params the instance is created with (`{"batch":[...]}`), so a batch at
/// the bound is still a start the Workflow binding accepts.
pub const DEBOUNCE_BATCH_BYTES_MAX: u32 = 1_048_576;

// --- runs ---

/// Longest long-poll (`await`, `events`), in milliseconds: the contract's
/// bound. A caller that wants to wait longer polls again; holding an RPC
/// open much longer would outlive the callers' own request budgets.
pub const RUN_WAIT_MS_MAX: u64 = 30_000;

/// Largest `result` (serialized JSON) or `error` (UTF-8), in bytes: the
/// contract's 1 MiB. It is stored in one row and sent to every awaiter, so
/// it must stay well inside the Durable Object's 2 MB per row.
pub const RUN_OUTCOME_BYTES_MAX: usize = 1024 * 1024;

/// Longest event `type`, in characters (contract): a label, not a payload.
pub const RUN_EVENT_TYPE_CHARS_MAX: usize = 64;

/// Largest event `data` (serialized JSON), in bytes: the contract's 64 KiB.
/// With [`RUN_EVENTS_KEPT`] of them a full log stays near 32 MiB at most,
/// and one `events` reply of [`RUN_EVENTS_LIMIT_MAX`] stays readable.
pub const RUN_EVENT_DATA_BYTES_MAX: usize = 64 * 1024;

/// Events a run's log keeps (contract): the newest ones; older ones are
/// deleted as new ones arrive, one row per append, so an append costs the
/// same whatever the log holds.
pub const RUN_EVENTS_KEPT: u64 = 500;

/// Most events one `events` call returns (contract): as many as are kept.
pub const RUN_EVENTS_LIMIT_MAX: u32 = 500;

/// Events one `events` call returns when it names no `limit` (contract).
pub const RUN_EVENTS_LIMIT_DEFAULT: u32 = 100;

/// Most long-polls one Runs object holds open at once. Each holds a pending
/// RPC and, when answered, a copy of the reply (an outcome is up to 1 MiB):
/// 1,000 covers a crowd of awaiters on one run (the benchmark uses 100)
/// while keeping the object's memory bounded. Past it a wait answers at once
/// with the state as it is, and the caller polls again.
pub const RUN_OPEN_WAITS_MAX: u32 = 1_000;

/// Default `RUN_RETENTION_MS` (contract): a finished run's record (claim,
/// outcome, events) is kept a day, long enough for late callers and awaiters.
pub const RUN_RETENTION_MS_DEFAULT: u64 = 86_400_000;

/// Shortest `RUN_RETENTION_MS` accepted from configuration: 1 ms, so tests
/// can watch retention happen; production values are hours.
pub const RUN_RETENTION_MS_MIN: u64 = 1;

/// Longest `RUN_RETENTION_MS` accepted (365 days): a record is a cache of an
/// outcome, not an archive, and the time must stay far inside ±2^53.
pub const RUN_RETENTION_MS_MAX: u64 = 31_536_000_000;

/// Most finished runs one retention alarm deletes; the alarm re-arms at
/// once for the rest. One object normally holds one run key, so this only
/// bounds an object misused for many keys.
pub const RUN_DELETIONS_PER_ALARM_MAX: u32 = 64;

// --- hand-on: the Coordinator and the serial queue ---

/// How long after the turn event a woken instance's status is checked (to
/// skip it if dead), after the call that woke it has replied. The woken
/// instance's engine answers one call at a time, and after the event it is
/// busy waking, acquiring or claiming (one step) and starting its body: a
/// status query then slows the hand-off. Locally (bench/p2 A/B in one run)
/// the query right after the event cost about 2 ms of the serial claim;
/// at 30 ms it still landed inside the hand-off on a loaded machine (40 ms
/// against 33 ms at 1 s); the Coordinator's release, checking before its
/// reply, took 17 to 38 ms where it takes 4 to 10 without the check (P1,
/// `node bench/subset.mjs p1`). One second is long past a live instance's
/// acquire or claim and short beside what a dead one's successors would
/// otherwise wait (the serial poll, 30 s; the Coordinator's holder-check
/// alarm, `HOLDER_CHECK_MS`); a dead woken instance only follows a crash.
pub const HAND_ON_CHECK_DELAY_MS: u64 = 1_000;

/// How long Baton waits for one Workflow binding call (`get`, `create`,
/// `status`, `sendEvent`, `terminate`) before it abandons the call and
/// treats it as a transient failure. Production's calls go to a
/// distributed service that can take seconds; one that never answers would
/// otherwise hold the call that made it for ever (a release, an acquire's
/// holder check, an alarm, whose retries then never come). Every caller
/// already copes with a call that throws: a status that fails is `unknown`
/// (never dead), a turn event that fails is re-sent by the alarm with the
/// same payload, a create that fails is retried under the same id, a
/// terminate is best effort. Ten seconds is far past a healthy call (tens
/// of milliseconds) and the "seconds" production can take, and well inside
/// the one minute the helpers give each Baton step, so that the caller's
/// step gets an answer (the acquire, its second phase decided on
/// `unknown`) rather than its own timeout.
pub const WORKFLOW_CALL_TIMEOUT_MS: u64 = 10_000;

// --- what is busy: the list of contended keys (contract §10) ---

/// `BATON_LIST_SHARDS` when unset (contract §10): how many list objects
/// the busy keys are spread over. Each object takes the reports of its
/// keys one at a time; sixteen keeps a burst of keys entering the list
/// (a deploy that contends a thousand keys at once) from queueing on one
/// object, while a read asks only sixteen objects per page.
pub const LIST_SHARDS_DEFAULT: u32 = 16;

/// Most list shards (contract §10's bound for `BATON_LIST_SHARDS`): a
/// page asks every shard, so the read's fan-out stays within a Worker's
/// subrequest budget with room for the verifications of the same read.
pub const LIST_SHARDS_MAX: u32 = 256;

/// Most entries one page of `coordinatorList` or `serialList` answers
/// (contract §10): the same bound as a run's events, a reply that stays
/// readable and a merge whose work is bounded.
pub const LIST_LIMIT_MAX: u32 = 500;

/// Entries a page answers when the call names no `limit` (contract §10).
pub const LIST_LIMIT_DEFAULT: u32 = 100;

/// How long a key whose holder was found dead stays listed (contract §10):
/// an hour, long enough for an operator to notice what crashed.
pub const LIST_DEAD_LISTED_MS: u64 = 3_600_000;

/// How long a list shard remembers a key that left the list (its last
/// report's stamp), so that an older report delivered late (a retried RPC,
/// an `enqueue`'s report overtaken by its `release`'s) cannot list it
/// again. An RPC that has not arrived after ten minutes was given up by
/// the runtime long before; the read's verification covers the rest.
pub const LIST_GONE_KEPT_MS: u64 = 600_000;

/// Keys one list-shard alarm ticks (a dead holder's hour ending, a
/// forgotten key's memory ending) before it re-arms at once for the rest:
/// each tick is one row's read and write, so one alarm stays short.
pub const LIST_KEYS_PER_ALARM_MAX: u32 = 256;

/// How long a listed key may go without a report before a read doubts
/// it and asks its Coordinator for a fresh one. A key's object reports
/// when its waiters come or all go and, from its holder-check alarm, when
/// its counts change; a report lost with its object after the last waiter
/// left has no alarm to resend it. A minute keeps such a ghost short-lived
/// while a key stuck behind a live holder is asked at most once a minute.
pub const LIST_VERIFY_AFTER_MS: u64 = 60_000;

/// Least time between two reports of a key's counts (contract §10) while
/// they keep changing: changes made meanwhile go in one report at the end
/// of it. A quarter of the status page's one-second poll, so the page is
/// never a poll behind, while a burst of enqueues behind a held key sends
/// a key's shard at most four reports a second instead of one per call. A
/// change of whether the key is listed (its first waiter, its last, a
/// holder found dead) is sent at once, whatever this says.
pub const LIST_REPORT_SPACING_MS: u64 = 250;

/// Longest `BATON_LIST_VERIFY_AFTER_MS` accepted: a day. Longer, a ghost
/// entry (a report lost with its object after the last waiter left) would
/// outlive any reason to look at the list; the benchmark, which lists keys
/// no Coordinator holds, sets it long.
pub const LIST_VERIFY_AFTER_MS_MAX: u64 = 86_400_000;

/// Most keys one page asks their Coordinators about: each is a subrequest
/// of the read, so a page of ghosts costs a bounded few and the rest are
/// asked by the next reads.
pub const LIST_VERIFIES_PER_PAGE_MAX: usize = 8;

/// Holds a key's `inspect` keeps in `recent` (contract §10): the last 50
/// that ended with a waiter behind them or a dead holder, enough to see a
/// pattern on the status page's time line; older ones are deleted as new
/// ones arrive, by the trigger on each recorded hold's insert (schema v16).
pub const COORDINATOR_RECENT_KEPT: u64 = 50;

/// Longest index of a §9a data point, in bytes: Workers Analytics Engine
/// refuses an index over 96 bytes, so a longer key (keys go up to
/// [`IDENT_BYTES_MAX`]) is cut at a character boundary below it rather
/// than have its every point dropped.
pub const METRICS_INDEX_BYTES_MAX: usize = 96;
