#!/usr/bin/env python3
"""Breaks each core on purpose, one rule of the contract at a time, and shows
that the object's own simulation catches it at its default step count and
seed (plain `cargo test --test <sim> simulation`).

Each bug is one small edit (an exact text replaced in one file), put in,
tested, and taken out again before the next. The script prints one table
row per bug: the core, the bug, what caught it (the first line of the
panic) and after how many simulation steps (the steps of the seeds before
the failing one plus the failing seed's own step). A bug the simulation
does not catch prints NOT CAUGHT and the script exits non-zero.

    npm run break-list                        # every bug (the check each round)
    python3 scripts/break_cores.py            # the same
    python3 scripts/break_cores.py runs       # the bugs of one core
    python3 scripts/break_cores.py "retried"  # the bugs whose text says so
    python3 scripts/break_cores.py --list     # the list, without running

It edits the working tree (and restores it, also on Ctrl-C); run it in a
scratch copy if you are editing at the same time (`git archive HEAD | tar
-x -C DIR`, and `cp -a target DIR/` so the dependencies are not built
again). Each bug rebuilds the crate and its simulation: the whole list
takes about 40 minutes on two busy cores, too long for `npm test`, so the
team runs it once a round (docs/how-baton-is-tested.md has the last run).
docs/how-baton-is-tested.md keeps the last run's table.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (core, simulation, file, exact text, replacement, the bug, the rule broken)
BUGS = [
    # --- Debouncer (contract §4), tests/debounce_sim.rs --------------------
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "if now_ms >= burst.ends_at_ms() {",
     "if now_ms > burst.ends_at_ms() {",
     "a burst still open at the very ms it ends", "§4 burst end"),
    ("debounce", "debounce_sim", "src/debounce/state.rs",
     "(self.last_at_ms.saturating_add(self.delay_ms))\n            .min(self.first_at_ms.saturating_add(self.max_wait_ms))",
     "self.last_at_ms.saturating_add(self.delay_ms)",
     "maxWaitMs ignored: a steady stream of calls never fires", "§4 maxWaitMs"),
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "                    start: Pending {\n                        workflow: call.workflow.clone(),\n                        params: StartParams::Latest(call.params.clone()),\n                        ..trailing.start\n                    },",
     "                    start: Pending {\n                        workflow: call.workflow.clone(),\n                        ..trailing.start\n                    },",
     "a call joining a burst does not replace the trailing start's params", "§4 latest params"),
    ("debounce", "debounce_sim", "src/debounce/call.rs",
     "            let cancelled = draft.s.phase.pending().map(|p| p.id.clone());\n            draft.set_phase(Phase::Idle);",
     "            let cancelled = draft.s.phase.pending().map(|p| p.id.clone());",
     "cancel reports the pending start cancelled but leaves it to fire", "§4 cancel"),
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "        if at_ms <= now_ms {\n            self.fire(now_ms);",
     "        if at_ms < now_ms {\n            self.fire(now_ms);",
     "startAt for exactly now waits for the alarm instead of starting", "§4 startAt in the past"),
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "            CreateOutcome::Created | CreateOutcome::AlreadyExists => {",
     "            CreateOutcome::Created | CreateOutcome::AlreadyExists | CreateOutcome::Failed(_) => {",
     "a failed create counts as started (never retried)", "§4 creates retried until confirmed"),
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "if self.s.unfinished_starts() >= DEBOUNCE_UNFINISHED_STARTS_MAX {",
     "if self.s.unfinished_starts() > DEBOUNCE_UNFINISHED_STARTS_MAX {",
     "one start more than the key's bound is accepted", "§4 bounded unfinished starts"),
    ("debounce", "debounce_sim", "src/debounce/call.rs",
     "            if started.is_some() {\n                draft.fire(now_ms);\n            }",
     "            if started.is_some() {\n                draft.set_phase(Phase::Idle);\n            }",
     "flush reports a start it never makes", "§4 flush"),
    ("debounce", "debounce_sim", "src/debounce/batch.rs",
     "        if after > u64::from(bounds.max_bytes) {",
     "        if after >= u64::from(bounds.max_bytes) {",
     "a batch is split by params that take it exactly to maxBytes", "§4a maxBytes"),
    ("debounce", "debounce_sim", "src/debounce/decide.rs",
     "            StartParams::Batch(_) => Some(batch_params(&self.s.batch)),",
     "            StartParams::Batch(_) => Some(batch_params(&self.s.batch[..self.s.batch.len().saturating_sub(1)])),",
     "a batch starts without its last call's params", "§4a every call's params"),
    ("debounce", "debounce_sim", "src/debounce/batch.rs",
     "        if (self.s.batch.len() as u64) < u64::from(bounds.max_items) {",
     "        if (self.s.batch.len() as u64) <= u64::from(bounds.max_items) {",
     "the call that brings a batch to maxItems does not start it", "§4a maxItems"),

    # --- Runs (contract §6), tests/runs_sim.rs -----------------------------
    ("runs", "runs_sim", "src/runs/decide.rs",
     "liveness.is_dead(Some(checked.since_ms), now_ms, grace_ms)",
     "liveness.is_dead(None, now_ms, grace_ms)",
     "no grace: a claimant not created yet loses its claim at once", "§6/§1a grace"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "liveness.is_dead(Some(checked.since_ms), now_ms, grace_ms)",
     "liveness.is_dead(Some(checked.since_ms + 1), now_ms, grace_ms)",
     "the grace ends one ms late", "§6/§1a grace's end"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "let replaced = holds && liveness.is_dead(Some(checked.since_ms), now_ms, grace_ms);",
     "let replaced = holds && (liveness == Liveness::Unknown || liveness.is_dead(Some(checked.since_ms), now_ms, grace_ms));",
     "a claimant whose status is Unknown is taken for dead", "§6 only dead claimants lose the claim"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "let holds = matches!(run, Run::Running { claim } if *claim == checked);",
     "let holds = matches!(run, Run::Running { .. });",
     "a claim freed from a claimant other than the one checked", "§6 one claimant"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "        Run::Running { claim } if claim.id == request.id => claim,\n        _ => return not_recorded(run),",
     "        Run::Running { claim } => claim,\n        _ => return not_recorded(run),",
     "complete from an instance that is not the claimant records its outcome", "§6 outcome from the claimant"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "        Run::Running { claim } if claim.id == request.id => claim,\n        _ => return not_recorded(run),",
     "        Run::Running { claim } | Run::Finished { claim, .. } if claim.id == request.id => claim,\n        _ => return not_recorded(run),",
     "a retried complete records (replaces) the outcome a second time", "§6 outcome once"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "        Some(at) if at <= now_ms => Transition {",
     "        Some(at) if at <= now_ms + 1 => Transition {",
     "the record deleted one ms before its retention ends", "§6 retention"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "writes.push(Write::ForgetThrough(seq - RUN_EVENTS_KEPT));",
     "writes.push(Write::ForgetThrough(seq + 1 - RUN_EVENTS_KEPT));",
     "the log keeps 499 events, not 500", "§6 the newest 500 kept"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "    let poll = if !slice.events.is_empty() || !may_park(request.timeout, open_waits) {",
     "    let poll = if !may_park(request.timeout, open_waits) {",
     "events parks a reader that has events to read", "§6 events answers at once"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "    timeout > WaitMs::ZERO && open_waits < RUN_OPEN_WAITS_MAX",
     "    timeout > WaitMs::ZERO && open_waits <= RUN_OPEN_WAITS_MAX",
     "one long-poll more than the object's bound is parked", "§6 bounded long-polls"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "        Run::Running { claim } | Run::Finished { claim, .. } if claim.id == request.id => {\n            ClaimReply::Claimed",
     "        Run::Running { claim } | Run::Finished { claim, .. } if claim.id != request.id => {\n            ClaimReply::Claimed",
     "a claim by another instance is told it is the claimant", "§6 one claimant"),
    ("runs", "runs_sim", "src/runs/decide.rs",
     "    let finished = matches!(run, Run::Finished { .. });",
     "    let finished = false;",
     "await parks on a run that has its outcome already", "§6 await answers at once when finished"),

    # --- RateLimiter (contract §5), tests/rate_limit_props.rs --------------
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "    (now + 1).saturating_sub(window_ms)\n}",
     "    now.saturating_sub(window_ms)\n}",
     "a grant counts one ms past its window", "§5 window edge"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "    let cooling = now < meta.cooldown_until_ms;",
     "    let cooling = now <= meta.cooldown_until_ms;",
     "the cooldown still refuses at the ms it ends", "§5 cooldown end"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "meta.cooldown_until_ms = meta.cooldown_until_ms.max(now + cooldown_ms);",
     "meta.cooldown_until_ms = now + cooldown_ms;",
     "a shorter penalty shortens the cooldown", "§5 penalties never shortened"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "    if reaches(&row) {\n        return row.at_ms + rule.window_ms;",
     "    if reaches(&row) {\n        return row.at_ms + rule.window_ms + 1;",
     "waitMs one ms longer than needed", "§5 exact waitMs"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "        free.min(u64::from(permits)) as u32",
     "        if free >= u64::from(permits) { permits } else { 0 }",
     "no partial grant: a block larger than what is free gets nothing", "§5 partial grants"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     ".is_some_and(|w| row.at_ms >= window_from(now, w).max(meta.horizon_ms))",
     ".is_some_and(|w| row.at_ms + w >= now)",
     "refund takes back a grant that has left every window", "§5 refunds inside a window"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "reusable.find(|&slot| newest_totals[usize::from(slot)] == base[usize::from(slot)])",
     "reusable.find(|&slot| newest_totals[usize::from(slot)] >= base[usize::from(slot)])",
     "a rule slot reused while grants still count for its rule", "§5 rule ids forgotten only when aged out"),
    ("rate limit", "rate_limit_props", "src/rate_limit/decide.rs",
     "        .map(|(row, used)| u64::from(row.limit).saturating_sub(used.used))",
     "        .map(|(row, used)| (u64::from(row.limit) + 1).saturating_sub(used.used))",
     "one permit more than the limit in a window", "§5 no window over its limit"),
    ("rate limit", "rate_limit_props", "src/rate_limit/cached.rs",
     "span.last.at_ms <= t && t < span.next.at_ms",
     "span.last.at_ms <= t && t <= span.next.at_ms",
     "the cache's span answers a window starting at its next row's very ms", "§5 exact window (the cache)"),
    ("rate limit", "rate_limit_props", "src/rate_limit/cached.rs",
     "                Write::Ungrant { seq } => {\n                    storage.write(write);\n                    self.spans.get_mut().clear();",
     "                Write::Ungrant { seq } => {\n                    storage.write(write);",
     "a refund deletes a row the cache's spans still answer with", "§5 refunds (the cache)"),

    # --- Serial queue (contract §2, §2a), tests/serial_queue_sim.rs --------
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "     AND EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \\\n     AND state = 'waiting' AND revision = ?3) RETURNING \",",
     "     AND EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \\\n     AND revision = ?3) RETURNING \",",
     "a retried enqueue (with current) from an id already superseded supersedes the newer waiters", "§2 newest wins"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "WHERE group_name = ?1 AND state = 'holding' AND heartbeat_at < ?4 AND",
     "WHERE group_name = ?1 AND state = 'holding' AND heartbeat_at <= ?4 AND",
     "a holder abandoned at the very ms its heartbeat is still live", "§2 heartbeat expiry"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "\" < ?4 OR NOT \",",
     "\" <= ?4 OR NOT \",",
     "a waiter timed out one ms early", "§2 waiter timeout"),
    ("serial", "serial_queue_sim", "src/serial_queue/decide.rs",
     "let superseded: Vec<InstanceId> = tells.iter().map(|t| t.id.clone()).collect();",
     "let superseded: Vec<InstanceId> = tells.iter().skip(1).map(|t| t.id.clone()).collect();",
     "an enqueue's reply leaves out a waiter it superseded", "§2 superseded returned"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "     WHERE group_name = ?1 AND state = 'waiting' AND revision <> ?3 AND instance_id <> ?2 \\",
     "     WHERE group_name = ?1 AND state IN ('waiting', 'holding') AND revision <> ?3 AND instance_id <> ?2 \\",
     "an enqueue with current supersedes the holder", "§2 the holder is never touched"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "        concat!(\"turn_prefix IS NOT NULL AND NOT \", held!())",
     "        concat!(\"NOT \", held!())",
     "a release hands the group to a waiter registered without grant", "§2a grant only when asked"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "\"(SELECT IFNULL(MAX(fence), 0) + 1 FROM serial_queue WHERE group_name = ?1)\"",
     "\"(SELECT IFNULL(MAX(fence), 0) + 0 FROM serial_queue WHERE group_name = ?1)\"",
     "a grant does not raise the group's fence", "§2a fences"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding' AND heartbeat_at = ?4 \\",
     "WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding' AND heartbeat_at >= ?4 \\",
     "a holder found dead is abandoned though it heartbeat since the read", "§2a dead holders by status"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "WHERE group_name = ?1 AND state = 'waiting' LIMIT ?5)) < ?5 \\",
     "WHERE group_name = ?1 AND state = 'waiting' LIMIT ?5)) <= ?5 \\",
     "one waiter more than a group's bound is registered", "§2 bounded waiters"),
]

# --- Coordinator (contract §1, §1a, §1b), tests/coordinator_sim.rs ---------
# The grace rule lives in src/workflow.rs, shared with Runs: broken there,
# it is the Coordinator's simulation that must catch it.
COORDINATOR_BUGS = [
    # Stated once, in enqueue.rs: the decision and its read plan both use it.
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "    matches!(member, Member::Holder(_) | Member::Superseded)",
     "    matches!(member, Member::Holder(_))",
     "a retried superseding enqueue from an id superseded meanwhile drops the newer waiters",
     "§1 superseded ids never come back"),
    ("coordinator", "coordinator_sim", "src/workflow.rs",
     "grace_from_ms.is_none_or(|at| now_ms >= at.saturating_add(grace_ms))",
     "grace_from_ms.is_none_or(|at| now_ms > at.saturating_add(grace_ms))",
     "the grace ends one ms late", "§1a grace's end"),
    ("coordinator", "coordinator_sim", "src/workflow.rs",
     "grace_from_ms.is_none_or(|at| now_ms >= at.saturating_add(grace_ms))",
     "grace_from_ms.is_some_and(|at| now_ms >= at.saturating_add(grace_ms))",
     "an id that only acquired (never enqueued) gets a grace", "§1a no grace without enqueue"),
    ("coordinator", "coordinator_sim", "src/workflow.rs",
     "            Liveness::Alive | Liveness::Unknown => false,",
     "            Liveness::Alive => false,\n            Liveness::Unknown => true,",
     "a holder whose status is Unknown loses its slot", "§1 only the dead lose the key"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "        if holder == *checked || finished {",
     "        if true || holder == *checked || finished {",
     "a dead verdict applied to a holder that changed since it was checked", "§1 a dead holder loses the key only if it still holds it"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "(liveness == Liveness::Alive && candidate.id == was.id).then_some(candidate)",
     "(liveness != Liveness::Dead && candidate.id == was.id).then_some(candidate)",
     "an enqueue coalesces into a candidate not found alive", "§1 coalesce only into a live waiter"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "        fence: key.s.fence + 1,",
     "        fence: key.s.fence.max(1),",
     "a grant does not raise the key's fence", "§1b fences"),
    ("coordinator", "coordinator_sim", "src/coordinator/slots.rs",
     "        place <= free\n",
     "        true\n",
     "a newcomer's acquire takes a free slot ahead of the waiters it hands on to", "§1 FIFO"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "    apply_check(key, now_ms, holder, liveness, &mut wake);\n    fill_slots(key, now_ms, &mut wake);",
     "    apply_check(key, now_ms, holder, liveness, &mut wake);",
     "a dead holder found by the alarm or a wake frees its slot but nobody is handed it", "§1 the key never stays with the dead"),
    ("coordinator", "coordinator_sim", "src/coordinator/check.rs",
     "        && (summary.waiters > 0",
     "        && (summary.waiters > 1",
     "no holder-check alarm while only one waits behind the holders", "§1 the alarm checks the holder while a key has waiters"),
    # §1c: the hand-off order is stated once, in order.rs (the twin reads
    # it; tests/coordinator_order.rs holds the store's fast reads to it);
    # serving a tenant is the decision's.
    ("coordinator", "coordinator_sim", "src/coordinator/order.rs",
     "    shares.sort_by_key(|s| (Reverse(s.priority), s.served, s.first));",
     "    shares.sort_by_key(|s| (s.priority, s.served, s.first));",
     "the lowest priority present is handed the key first", "§1c highest priority first"),
    ("coordinator", "coordinator_sim", "src/coordinator/order.rs",
     "                if let Some(waiter) = share.waiters.get(round) {",
     "                if let Some(waiter) = share.waiters.iter().rev().nth(round) {",
     "a tenant's latest waiter goes before its earlier ones", "§1c FIFO within a tenant"),
    ("coordinator", "coordinator_sim", "src/coordinator/order.rs",
     "    shares.sort_by_key(|s| (Reverse(s.priority), s.served, s.first));",
     "    shares.sort_by_key(|s| (Reverse(s.priority), Reverse(s.served), s.first));",
     "the tenant served last goes first (a busy tenant keeps the key)", "§1c tenants take turns"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "    grant_slot(key, now_ms, waiter, HolderState::Handed, true)",
     "    grant_slot(key, now_ms, waiter, HolderState::Handed, false)",
     "a hand-off does not move its tenant to the back of the round", "§1c tenants take turns"),
    # The read plan (read.rs): what a decision is given to decide on.
    ("coordinator", "coordinator_sim", "src/coordinator/read.rs",
     "                if let Some(read) = unread(Read::FirstWithHash(hash.clone(), ())) {",
     "                if let Some(read) = unread(Read::FirstWithHash(hash.clone(), ())).filter(|_| false) {",
     "the read plan forgets the coalescing candidate: a superseding enqueue drops the live waiter it should join",
     "§1 coalesce into a live waiter with the same input"),
    ("coordinator", "coordinator_sim", "src/coordinator/read.rs",
     "    n.min(summary.waiters)\n",
     "    n.min(summary.waiters).saturating_sub(1)\n",
     "the read plan asks for one waiter too few at the front of the order",
     "§1 free slots go to the waiters in order"),
    # Issue 38: the layout a key's waiters are kept in (layout.rs) serves
    # §1c's order; the twin reads each layout as the rows do, and the
    # simulation's oracle judges both.
    ("coordinator", "coordinator_sim", "src/coordinator/layout.rs",
     "        Some((p, t)) if *p == priority && t.as_ref() == tenant => (false, Layout::Sole),",
     "        Some((p, t)) if *p == priority && t.is_some() == tenant.is_some() => (false, Layout::Sole),",
     "a second named tenant at the same priority joins a key kept sole (read by arrival)",
     "§1c tenants take turns (the sole layout holds one share)"),
    ("coordinator", "coordinator_sim", "src/coordinator/layout.rs",
     "        Some((p, t)) if *p == priority && t.as_ref() == tenant => (false, Layout::Sole),",
     "        Some((p, t)) if *p <= priority && t.as_ref() == tenant => (false, Layout::Sole),",
     "a higher priority joins a key kept sole (read by arrival, behind the lower)",
     "§1c highest priority first (the sole layout holds one share)"),
    ("coordinator", "coordinator_sim", "src/coordinator/draft.rs",
     "        if spread {\n            self.writes.push(Write::Spread);\n        }\n",
     "",
     "a second share joins without moving the key's waiters over (those kept sole are lost to the shared reads)",
     "§1 every waiter keeps its place when a key gains a second share"),
    ("coordinator", "coordinator_sim", "src/coordinator/layout.rs",
     "        Some(_) => Layout::Sole,\n        None => Layout::Shared,",
     "        Some(_) | None => Layout::Sole,",
     "the read plan reads a shared key by arrival", "§1c tenants take turns"),
    # §10 and §9: what a decision records, owes the list and logs, judged
    # by the simulation against its own records (tests/coordinator_sim.rs
    # check_history and the oracle's log lines).
    ("coordinator", "coordinator_sim", "src/busy/reporter.rs",
     "    if found_dead || (before.waiting > 0) != (after.waiting > 0) {",
     "    if (before.waiting > 0) != (after.waiting > 0) {",
     "a holder found dead owes the list no report", "§10 a dead holder's key is listed for the hour"),
    ("coordinator", "coordinator_sim", "src/coordinator/types/history.rs",
     "        hand_offs: did.ended.len().min(did.granted_waiters.len()) as u32,",
     "        hand_offs: did.granted_waiters.len() as u32,",
     "a slot a raised limit adds counts as a hand-off", "§10 handOffs"),
    ("coordinator", "coordinator_sim", "src/coordinator/types/history.rs",
     "            *outcome == Outcome::Dead || waiters_before > 0 || holder.cancelling",
     "            *outcome == Outcome::Dead || holder.cancelling",
     "a hold released to a waiter is not kept in recent", "§10 recent"),
    ("coordinator", "coordinator_sim", "src/coordinator/log.rs",
     "            let routine = matches!(reply, AcquireReply::Granted { .. }) && d.quiet;",
     "            let routine = matches!(reply, AcquireReply::Granted { .. });",
     "a grant that hands slots on or arms the alarm is logged routine", "§9 contended lines"),
    ("coordinator", "coordinator_sim", "src/coordinator/log.rs",
     "    let (decision, reason) = match (as_handed, found_dead) {",
     "    let (decision, reason) = match (true, found_dead || !as_handed) {",
     "a woken holder that released before its status check is logged skipped", "§9 the line says what the decision did"),
    # The inputs the simulation drives now: onBusy skip, the grace counted
    # from the simulation's own record of the enqueue, and a grant's
    # acceptance that comes late, from an earlier grant.
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "    if request.options.skip && member == Member::Stranger {",
     "    if false && request.options.skip && member == Member::Stranger {",
     "onBusy skip ignored: a skipping acquire registers and waits", "§1c onBusy skip"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "        && (key.s.waiters > 0 || free_slots(&key.s, limit, 0) == 0)",
     "        && key.s.waiters > 0",
     "a skipping enqueue registers behind holders that fill every slot", "§1c onBusy skip"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "        enqueued_ms: waiter.enqueued_ms,",
     "        enqueued_ms: waiter.enqueued_ms.map(|_| now_ms),",
     "a handed holder's grace counts from its hand-off, not its enqueue", "§1a grace from the enqueue"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "        && key.holder(&holder.id) == Some(holder)\n",
     "        && key.holder(&holder.id).is_some()\n",
     "a grant accepted late confirms the holder's later hand-over", "§1b a grant is told by its own event"),
    # §11 steering a key: the operator's pause, resume and limit override
    # (src/coordinator/steer.rs, the limit in slots.rs), judged by the
    # simulation's own record.
    # The core asserts the same rule where it grants (`Draft::add_holder`):
    # that is taken out too, so the oracle's own check is what catches it.
    ("coordinator", "coordinator_sim",
     [("src/coordinator/slots.rs",
       "    if summary.paused.is_some() {\n        return 0;\n    }\n    (limit + freed)",
       "    (limit + freed)"),
      ("src/coordinator/draft.rs",
       "        assert!(self.s.paused.is_none(), \"a slot granted while paused\");\n",
       "")],
     None, None,
     "a paused key still hands free slots on", "§11 paused: nobody is granted"),
    ("coordinator", "coordinator_sim", "src/coordinator/steer.rs",
     "        since_ms: key.s.paused.as_ref().map_or(now_ms, |p| p.since_ms),",
     "        since_ms: now_ms,",
     "pausing a paused key restarts its since", "§11 a second pause keeps the first since"),
    ("coordinator", "coordinator_sim", "src/coordinator/steer.rs",
     "    key.writes.push(Write::SetPaused(None));\n    hand_on(key, now_ms)\n",
     "    key.writes.push(Write::SetPaused(None));\n    Vec::new()\n",
     "resume unpauses but hands no free slot on", "§11 resume hands every free slot on"),
    ("coordinator", "coordinator_sim", "src/coordinator/draft.rs",
     "            self.writes.extend(self.s.name_callers_limit(limit));\n",
     "            self.writes.extend(self.s.name_callers_limit(limit));\n            self.writes.extend(self.s.set_limit_override(None));\n",
     "a caller's options.limit clears the operator's override", "§11 the override wins"),
    # Both the decision and the read plan keep the limit once set.
    ("coordinator", "coordinator_sim",
     [("src/coordinator/slots.rs",
       "    limit_in_force(summary.callers_limit, limit)\n",
       "    limit.unwrap_or(summary.limit())\n"),
      ("src/coordinator/slots.rs",
       "        self.limit_override = limit;\n        Some(Write::SetLimitOverride(limit))",
       "        if limit.is_none() {\n            self.callers_limit = self.limit();\n        }\n        self.limit_override = limit;\n        Some(Write::SetLimitOverride(limit))")],
     None, None,
     "clearing the override keeps its limit instead of the callers'", "§11 clearing returns to the callers' limit"),
    ("coordinator", "coordinator_sim", "src/coordinator/steer.rs",
     "    hand_on(key, now_ms);\n    LimitSet {",
     "    LimitSet {",
     "a raised limit hands its new slots on only at the next call", "§11 raising hands the new slots at once"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "        && (key.s.waiters > 0 || free_slots(&key.s, limit, 0) == 0)",
     "        && (key.s.waiters > 0 || key.s.holders.len() as u32 >= limit)",
     "a skipping enqueue registers on a paused key with a free slot", "§11 onBusy skip counts paused as busy"),
    ("coordinator", "coordinator_sim", "src/coordinator/log.rs",
     "        None if released_paused(&id, d) => (",
     "        None if false && released_paused(&id, d) => (",
     "a release on a paused key is logged as routine", "§11 the line says the slot was not handed on"),
    # §1d cancelHolders, judged by the cancel simulation's own oracle
    # (tests/coordinator_sim/cancel.rs, run by the same filter).
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "    if liveness.is_dead(checked.enqueued_ms, now_ms, key.settings.grace_ms) {",
     "    if liveness.is_dead(checked.enqueued_ms, now_ms, key.settings.grace_ms) || holder.cancelling {",
     "a cancelled holder loses its slot on any status answer, alive or not",
     "§1d a cancelled holder keeps its slot until found dead"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "        key.check(&candidate.id, candidate.workflow.as_ref());\n        return Ok(Step::Check(EnqueueCheck { request, candidate }));",
     "        key.check(&candidate.id, candidate.workflow.as_ref());\n        if request.options.cancel_holders {\n            cancel_holders(key);\n        }\n        return Ok(Step::Check(EnqueueCheck { request, candidate }));",
     "an enqueue that may coalesce cancels the holders before its candidate is checked",
     "§1d coalescing first"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "            if r.options.cancel_holders && !r.supersedes =>",
     "            if false && r.options.cancel_holders && !r.supersedes =>",
     "cancelHolders without supersedes is accepted", "§1d refused without supersedes"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "        key.check_or_terminate(holder);",
     "        key.check(&holder.id, holder.workflow.as_ref());",
     "the alarm only checks a cancelled holder: a failed termination is never retried",
     "§1d the alarm retries a failed terminate"),
    ("coordinator", "coordinator_sim", "src/coordinator/check.rs",
     "                .any(|h| h.state == HolderState::Handed || h.cancelling))",
     "                .any(|h| h.state == HolderState::Handed))",
     "a key with a cancelled holder and nobody waiting drops the holder-check alarm",
     "§1d the alarm retries a failed terminate"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "        .filter(|h| !h.cancelling)",
     "        .filter(|h| !h.cancelling)\n        .take(1)",
     "only the first holder is cancelled", "§1d every holder is cancelled"),
    # What §11 and §1d decide, judged by the oracles from their own
    # records (issue 37): the pause as inspect shows it, the callers' limit
    # kept under an override, each cancelled holder's termination asked at
    # once through its own binding.
    ("coordinator", "coordinator_sim", "src/coordinator/steer.rs",
     "    if key.s.paused.as_ref() != Some(&paused) {",
     "    if key.s.paused.is_none() {",
     "a second pause answers its new reason but keeps the old one",
     "§11 the pause as inspect shows it"),
    ("coordinator", "coordinator_sim", "src/coordinator/slots.rs",
     "        if self.callers_limit == limit {",
     "        if self.callers_limit == limit || self.limit_override.is_some() {",
     "a limit a caller names under an override is forgotten: clearing it takes the older one",
     "§11 the callers' limit remembered under an override"),
    ("coordinator", "coordinator_sim", "src/coordinator/draft.rs",
     "        self.effects.push(Effect::TerminateHolder {\n            holder: holder.clone(),\n            workflow: self.settings.binding(holder.workflow.as_ref()),",
     "        self.effects.push(Effect::TerminateHolder {\n            holder: holder.clone(),\n            workflow: self.settings.workflow.clone(),",
     "a cancelled holder is terminated through the default binding, not its own",
     "§1d terminated through its own Workflow"),
    ("coordinator", "coordinator_sim", "src/coordinator/enqueue.rs",
     "        key.terminate_holder(&holder);\n",
     "",
     "a cancelled holder's termination waits for the alarm instead of being asked at once",
     "§1d terminated at once"),
    ("coordinator", "coordinator_sim", "src/coordinator/types/history.rs",
     "        cancelled: did.cancelled.len() as u32,",
     "        cancelled: 0,",
     "cancellations are not counted", "§1d counts.cancelled"),
]

# --- The busy list (contract §10), tests/busy_sim.rs, and the serial
# queue's enqueues at another revision (§2), tests/serial_queue_sim.rs:
# the gaps issue 28 found (a shard's answer taken as fact, a left key
# forgotten early, an id never enqueued at another revision than its row's).
LIST_AND_REVISION_BUGS = [
    ("busy list", "busy_sim", "src/busy/decide.rs",
     "                same: shows(row, &report.busy, now_ms),",
     "                same: true,",
     "a shard answers an older report as shown (a stale answer confirms what the list does not show)",
     "§10 the newest report wins"),
    ("busy list", "busy_sim", "src/busy/decide.rs",
     "                stamp: row.stamp(),",
     "                stamp: report.stamp,",
     "a shard answers an older report with that report's stamp, not the newer one it holds",
     "§10 the newest report wins"),
    ("busy list", "busy_sim", "src/busy/reporter.rs",
     "        if stamp != self.last_stamp {\n            return Answered::default();\n        }\n",
     "",
     "an object takes an older report's answer as confirming its latest",
     "§10 a report is owed until the shard shows it"),
    ("busy list", "busy_sim", "src/busy/reporter.rs",
     "        let follow_up = std::mem::take(&mut self.behind);",
     "        let follow_up = false;\n        self.behind = false;",
     "counts changed while a report is on its way are never followed up (the list stays stale until the alarm)",
     "§10 a listed key's counts follow it"),
    ("busy list", "busy_sim", "src/busy/reporter.rs",
     "        self.awaiting = follow_up;",
     "        self.awaiting = true;",
     "an answered report still counts as on its way: later changes of counts wait for an answer that never comes",
     "§10 a listed key's counts follow it"),
    ("busy list", "busy_sim", "src/busy/reporter.rs",
     "                .then(|| self.drawn_ms.saturating_add(LIST_REPORT_SPACING_MS)),",
     "                .then(|| self.drawn_ms.saturating_add(LIST_REPORT_SPACING_MS * 10)),",
     "a follow-up waits ten spacings, not one",
     "§10 a listed key's counts follow it"),
    ("busy list", "busy_sim", "src/busy/reporter.rs",
     "            clears_mark: answer.same && std::mem::take(&mut self.marked),",
     "            clears_mark: false,",
     "a confirmed report never clears the stored mark that one is owed (the alarm runs on)",
     "§10 a report is owed until the shard shows it"),
    ("busy list", "busy_sim", "src/busy/decide.rs",
     "        forget_ms: now_ms.saturating_add(LIST_GONE_KEPT_MS),",
     "        forget_ms: now_ms.saturating_add(LIST_GONE_KEPT_MS / 10),",
     "a shard forgets a key that left after a minute, not ten (a late report may list it again)",
     "§10 a key that left stays unlisted"),
    ("serial", "serial_queue_sim", "src/serial_queue/decide.rs",
     "    if me.revision != request.revision && me.state == EntryState::Waiting {",
     "    if false && me.revision != request.revision && me.state == EntryState::Waiting {",
     "an enqueue at another revision than its waiting row's is answered as a retry of that registration",
     "§2 a registration is its revision"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "     WHERE group_name = ?1 AND state = 'waiting' AND seq < \\\n     (SELECT seq FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \\\n     AND state = 'waiting' AND revision = ?3) RETURNING \",",
     "     WHERE group_name = ?1 AND state = 'waiting' AND seq < \\\n     (SELECT seq FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \\\n     AND state = 'waiting') RETURNING \",",
     "an enqueue at another revision (no current) supersedes the waiters older than the id's row, then is refused",
     "§2 a refused enqueue changes nothing"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "        \"revision = IFNULL(?5, revision)\"",
     "        \"(revision = IFNULL(?5, revision) OR ?5 IS NOT NULL)\"",
     "a claim on enqueue at another revision claims the id's waiting row, then is refused",
     "§2 a refused enqueue changes nothing"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "     AND state = 'waiting' AND revision = ?4)\";",
     "     AND state = 'waiting' AND (revision = ?4 OR ?4 IS NOT NULL))\";",
     "an enqueue at another revision prunes the group's oldest finished rows, then is refused",
     "§2 a refused enqueue changes nothing"),
]

# --- The serial queue's pause and resume (contract §11),
# tests/serial_queue_sim.rs: one bug per rule of a paused group.
SERIAL_PAUSE_BUGS = [
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "            at_revision!(),\n            \" AND NOT \",\n            paused!(),\n",
     "            at_revision!(),\n",
     "a claim takes a paused group (and times out its waiters)",
     "§11 no claim succeeds while paused"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "            \" ELSE fence END WHERE group_name = ?1 AND NOT \",\n            paused!(),\n",
     "            \" ELSE fence END WHERE group_name = ?1\",\n",
     "a release hands a paused group on",
     "§11 a paused group is handed to nobody"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "        \"MAX(enqueued_at, IFNULL((SELECT resumed_at FROM serial_group WHERE group_name = ?1), 0))\"",
     "        \"enqueued_at\"",
     "time paused counts toward a waiter's timeout",
     "§11 the timeout runs from the last resume"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "ON CONFLICT (group_name) DO UPDATE SET paused_at = IFNULL(paused_at, excluded.paused_at), \\",
     "ON CONFLICT (group_name) DO UPDATE SET paused_at = excluded.paused_at, \\",
     "pausing a paused group moves its since",
     "§11 a second pause keeps the first since"),
    ("serial", "serial_queue_sim", "src/serial_queue/steer.rs",
     "    let went = went_on(group, (), at(2), resumed && free, names);",
     "    let went = went_on(group, (), at(2), false, names);",
     "a resume wakes no waiter registered without grant (paused groups wait for a poll)",
     "§11 resume hands the group on"),
    ("serial", "serial_queue_sim", "src/serial_queue/sql.rs",
     "     WHERE group_name = ?1 AND state = 'waiting' AND seq < \\\n",
     "     WHERE group_name = ?1 AND state = 'waiting' AND NOT EXISTS (SELECT 1 FROM serial_group \\\n     WHERE group_name = ?1 AND paused_at IS NOT NULL) AND seq < \\\n",
     "an arrival in a paused group (no current) supersedes nobody",
     "§11 superseding works as usual while paused"),
]

# Issue 29's Coordinator schema steps (v12, v13), caught by the test that
# runs every decision on the rows and on the in-memory key side by side
# and compares the tables after each (`binary::test` names it).
# Contract §1a "found through any binding" and §1e several keys per
# section, tests/sections_sim.rs: sections over shared keys, some of them
# instances registered without their Workflow's binding.
SECTIONS_BUGS = [
    ("coordinator", "sections_sim", "src/coordinator/decide.rs",
     "        key.name_workflow(&member, &options);\n        Ok(())",
     "        let _ = (&member, &options);\n        Ok(())",
     "an instance found through another binding is not remembered with it",
     "§1a found through any binding: that Workflow's from then on"),
    ("coordinator", "sections_sim", "src/coordinator/log.rs",
     "    if remembered == Some(&to) {",
     "    if remembered != Some(&to) {",
     "no warn line when an instance is found through another binding",
     "§1a one warn line per instance"),
    ("coordinator", "sections_sim", "src/coordinator/grant.rs",
     "    apply_check(key, now_ms, holder, liveness, &mut wake);\n    fill_slots(key, now_ms, &mut wake);",
     "    apply_check(key, now_ms, holder, liveness, &mut wake);",
     "a dead holder found by the alarm frees its slot but nobody is handed it",
     "§1e sections over shared keys never deadlock"),
]

# Contract §1f maxWaiting, tests/coordinator_sim.rs (the oracle's own rule).
MAX_WAITING_BUGS = [
    ("coordinator", "coordinator_sim", "src/coordinator/slots.rs",
     "    *member == Member::Stranger && !supersedes && summary.waiters >= cap",
     "    *member == Member::Stranger && !supersedes && summary.waiters > cap",
     "a key takes one waiter past its maxWaiting", "§1f a cap on a key's waiters"),
    ("coordinator", "coordinator_sim", "src/coordinator/slots.rs",
     "    *member == Member::Stranger && !supersedes && summary.waiters >= cap",
     "    *member == Member::Stranger && summary.waiters >= cap",
     "a superseding enqueue is refused as full before its superseding frees room",
     "§1f counted after the call's own superseding"),
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "    if full(&key.s, &member, false, &request.options) {",
     "    if false && full(&key.s, &member, false, &request.options) {",
     "an acquire registers a waiter past the key's maxWaiting", "§1f acquire answers busy when full"),
    ("coordinator", "coordinator_sim", "src/coordinator/draft.rs",
     "            self.writes.push(Write::SetMaxWaiting(cap));",
     "",
     "the key forgets the maxWaiting a call named", "§1f the key keeps the latest maxWaiting"),
]

STORE_BUGS = [
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/schema.rs",
     "VALUES (old.key, old.fence, 1) \\\n            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \\\n            grants = grants + 1; \\",
     "VALUES (old.key, old.fence, 0) \\\n            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence); \\",
     "a holder row deleted outright (a handed slot found dead) is not counted as a grant",
     "§10 counts.grants (v12 folds a grant in when its hold ends)"),
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/schema.rs",
     "VALUES (old.key, old.fence, 1) \\\n            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \\\n            grants = grants + 1; \\",
     "VALUES (old.key, 0, 1) \\\n            ON CONFLICT(key) DO UPDATE SET grants = grants + 1; \\",
     "a holder row deleted outright leaves its fence out of the key's",
     "§1b fences never decrease (v12 folds a fence in when its hold ends)"),
    # Schema v18 rewrote the waiter rows' triggers: this bug follows them
    # (the ladder's and the fresh schema's).
    ("coordinator store", "coordinator_transition::the_rows_follow",
     [("src/coordinator/store/schema.rs",
       "            UPDATE coordinator_tenants SET first_seq = new.seq WHERE key = new.key \\\n            AND priority = new.priority AND tenant = new.tenant AND first_seq IS NULL; \\\n",
       ""),
      ("src/coordinator/store/schema_fresh.rs",
       "UPDATE coordinator_tenants SET first_seq = new.seq WHERE key = new.key AND priority = new.priority AND tenant = new.tenant AND first_seq IS NULL; ",
       "")],
     None, None,
     "a waiter joining an idle tenant (served, none waiting) does not give it an earliest waiter",
     "§1c a tenant with waiters takes turns (v13 keys turns on the earliest waiter)"),
    # Issue 38 (schema v18): the move from the sole layout to the shared
    # one, and the key row's record of its share, judged by the rows
    # against the in-memory key.
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/write.rs",
     "\"UPDATE coordinator_waiters SET sole = 0 WHERE key = ?1 AND sole = 1\",",
     "\"UPDATE coordinator_waiters SET sole = 0, seq = -seq WHERE key = ?1 AND sole = 1\",",
     "the move to the shared layout reverses the waiters' order (a reorder)",
     "§1 a key gaining a second share keeps every waiter in its place"),
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/write.rs",
     "         ON CONFLICT (key, priority, tenant) DO UPDATE SET \\\n         waiters = excluded.waiters, first_seq = excluded.first_seq\",",
     "         ON CONFLICT (key, priority, tenant) DO UPDATE SET \\\n         waiters = excluded.waiters\",",
     "the move to the shared layout leaves an idle tenant's row without its earliest waiter",
     "§1c a tenant with waiters takes turns"),
    ("coordinator store", "coordinator_transition::the_rows_follow",
     [("src/coordinator/store/schema.rs",
       "sole_priority = CASE WHEN waiter_count > 1 THEN sole_priority END, \\\n            sole_tenant = CASE WHEN waiter_count > 1 THEN sole_tenant END",
       "sole_priority = CASE WHEN waiter_count > 0 THEN sole_priority END, \\\n            sole_tenant = CASE WHEN waiter_count > 0 THEN sole_tenant END"),
      ("src/coordinator/store/schema_fresh.rs",
       "sole_priority = CASE WHEN waiter_count > 1 THEN sole_priority END, sole_tenant = CASE WHEN waiter_count > 1 THEN sole_tenant END",
       "sole_priority = CASE WHEN waiter_count > 0 THEN sole_priority END, sole_tenant = CASE WHEN waiter_count > 0 THEN sole_tenant END")],
     None, None,
     "a key whose last sole waiter left still names its share (its next, other share is read by arrival)",
     "§1c the sole layout holds only while waiters of one share wait"),
    # Issue 38 (schema v16): the prune and the forgetting run in triggers,
    # judged by the rows against the statements they replaced.
    ("coordinator store",
     "coordinator_sql::recorded_holds_are_pruned_and_idle_tenants_forgotten_by_their_own_statements",
     [("src/coordinator/store/schema.rs", "OFFSET 50); ", "OFFSET 51); "),
      ("src/coordinator/store/schema_fresh.rs", "OFFSET 50); ", "OFFSET 51); ")],
     None, None,
     "the recent holds keep 51, one beyond the bound",
     "§10 recent holds, the newest 50 (v16 prunes in the hold's insert)"),
    ("coordinator store",
     "coordinator_sql::recorded_holds_are_pruned_and_idle_tenants_forgotten_by_their_own_statements",
     [("src/coordinator/store/schema.rs", "AFTER UPDATE OF served ON coordinator_tenants",
       "AFTER UPDATE OF waiters ON coordinator_tenants"),
      ("src/coordinator/store/schema_fresh.rs", "AFTER UPDATE OF served ON coordinator_tenants",
       "AFTER UPDATE OF waiters ON coordinator_tenants")],
     None, None,
     "a tenant served again (its row updated) forgets no idle tenant",
     "§1c idle tenants forgotten after IDLE_TENANT_KEPT_GRANTS (v16 forgets in the serve)"),
    # Issue 38 (schema v17): a decision's tally rides on its finished
    # hold's stamp, a holder's wait on its own row; the triggers and the
    # climb judged by the rows against the statements they replaced, the
    # core's rule by the simulation's own counts and recorded waits.
    ("coordinator store",
     "coordinator_sql::a_carried_tally_and_a_kept_wait_leave_the_rows_their_statements_left",
     [("src/coordinator/store/history.rs", "hand_offs = hand_offs + excluded.hand_offs, ", ""),
      ("src/coordinator/store/schema_fresh.rs", "hand_offs = hand_offs + excluded.hand_offs, ", "")],
     None, None,
     "the ended row's trigger does not add the hand-offs its stamp carries to the key's counts",
     "§10 counts.handOffs (v17 counts in the ended row's trigger)"),
    ("coordinator store",
     "coordinator_sql::a_carried_tally_and_a_kept_wait_leave_the_rows_their_statements_left",
     [("src/coordinator/store/history.rs",
       "list_owed = CASE WHEN excluded.list_owed = 1 THEN 1 ELSE list_owed END",
       "list_owed = list_owed"),
      ("src/coordinator/store/schema_fresh.rs",
       "list_owed = CASE WHEN excluded.list_owed = 1 THEN 1 ELSE list_owed END",
       "list_owed = list_owed")],
     None, None,
     "a report owed by a hand-off is not marked by the ended row's trigger (the list is never told)",
     "§10 the list's report owed (v17 marks it in the ended row's trigger)"),
    ("coordinator store",
     "coordinator_sql::a_carried_tally_and_a_kept_wait_leave_the_rows_their_statements_left",
     [("src/coordinator/store/history.rs",
       "WHERE w.key = coordinator_holders.key AND w.id = coordinator_holders.id) \\\n     WHERE EXISTS",
       "WHERE w.key = coordinator_holders.key) \\\n     WHERE EXISTS"),
      ("src/coordinator/store/history.rs",
       "WHERE w.key = coordinator_holders.key AND w.id = coordinator_holders.id)\",",
       "WHERE w.key = coordinator_holders.key)\",")],
     None, None,
     "the climb to v17 gives a kept wait to every holder of its key, not to its own holder",
     "§10 recent holds' waitedMs (v17 keeps a wait on its holder's row)"),
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/write.rs",
     "    if *t == Tally::default() {",
     "    if t.dead_holders == 0 {",
     "a stamp that carries a hand-off's tally writes only its time",
     "§10 counts.handOffs (v17 counts in the ended row's trigger)"),
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/rows.rs",
     "        waited_ms: millis(&row[8]),",
     "        waited_ms: millis(&row[6]),",
     "a holder's wait is read back as its fence",
     "§10 recent holds' waitedMs (v17 keeps a wait on its holder's row)"),
]

# Issue 40 (contract §10a): the state rule, judged by the Coordinator
# simulation's own oracle after every decision; the rows' record of
# failing checks, by the rows-vs-memory test.
HEALTH_BUGS = [
    ("health", "coordinator_sim", "src/health.rs",
     "} else if waits && facts.stalled_from_ms.is_some_and(|from| now_ms > from) {",
     "} else if facts.stalled_from_ms.is_some_and(|from| now_ms > from) {",
     "a key with nobody waiting shows stalled", "§10a stalled needs waiters"),
    ("health", "coordinator_sim", "src/health.rs",
     "    if facts.paused {\n        KeyState::Paused\n    } else if waits && facts.stalled_from_ms",
     "    if facts.paused && facts.stalled_from_ms.is_none() {\n        KeyState::Paused\n    } else if waits && facts.stalled_from_ms",
     "a paused key with a stuck holder shows stalled, not paused", "§10a the first that applies"),
    ("health", "coordinator_sim", "src/coordinator/health.rs",
     "        (a, b) => a.or(b),",
     "        (a, _) => a,",
     "a holder whose checks fail never stalls its key", "§10a stalled by failing checks"),
    ("health", "coordinator_sim", "src/coordinator/health.rs",
     "        .filter(|h| h.state == HolderState::Handed)",
     "        .filter(|h| h.state == HolderState::Handed && h.enqueued_ms.is_none())",
     "a handed slot an enqueued instance has not taken up never stalls its key", "§10a stalled by a handed slot"),
    ("coordinator store", "coordinator_transition::the_rows_follow", "src/coordinator/store/write.rs",
     "check_failed_ms = CASE WHEN ?5 THEN COALESCE(check_failed_ms, ?3) END",
     "check_failed_ms = CASE WHEN ?5 THEN ?3 END",
     "each failed check restarts the run of failures (a holder failing every check never stalls)",
     "§10a failing checks counted from the first (schema v14)"),
    # `checked` is the last answer whatever asked: judged by the
    # simulation's own record of each answer its binding gave.
    ("health", "coordinator_sim", "src/coordinator/decide.rs",
     "        key.record_check(&holder.id, now_ms, answer);\n        Ok(acquire_checked(",
     "        Ok(acquire_checked(",
     "an acquire's check of a holder is not recorded in its checked", "§10a checked: the last answer"),
    ("health", "coordinator_sim", "src/coordinator/decide.rs",
     "        key.record_check(&holder.id, now_ms, answer);\n        woken(",
     "        woken(",
     "a wake's status check is not recorded in the holder's checked", "§10a checked: the last answer"),
]

# Issue 37: what a decision needs of the holder-check alarm is the core's
# (`coordinator::decide`'s `alarm`), judged by the Coordinator simulation's
# oracle from its own records after every decision.
ALARM_BUGS = [
    # Issue 38 (schema v17): the history's tally and waits, carried on the
    # rows a hand-off already writes; the rule is the core's.
    ("coordinator", "coordinator_sim", "src/coordinator/grant.rs",
     "        waited_ms: now_ms.saturating_sub(waiter.since_ms),",
     "        waited_ms: now_ms.saturating_sub(key.s.holders.first().map_or(now_ms, |h| h.since_ms)),",
     "a new holder's wait is measured from the first holder's grant, not from its own arrival",
     "§10 recent holds' waitedMs"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "        Some(end) => end.tally = tally,",
     "        Some(end) => {\n            end.tally = tally;\n            writes.push(Write::History(HistoryWrite::Tally(tally)));\n        }",
     "a hand-off's tally is counted twice, on its ended row and by its own statement",
     "§10 counts.handOffs"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "        None => writes.push(Write::History(HistoryWrite::Tally(tally))),",
     "        None => {}",
     "a decision that finishes no hold drops its tally (a coalesced enqueue is not counted)",
     "§10 counts.coalesced"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "    if needs_check || report == Due::Owed || terminates {",
     "    if needs_check || terminates {",
     "a decision that owes its list a report does not ask for the alarm (a lost report is never sent again)",
     "§10 the alarm sends an owed report"),
    ("coordinator", "coordinator_sim", "src/coordinator/decide.rs",
     "    if needs_check || report == Due::Owed || terminates {",
     "    if needs_check || report == Due::Owed {",
     "a supersede does not ask for the alarm (a failed termination is never retried)",
     "§1 the alarm finishes a supersede's terminations"),
]

# Issue 37: each concept's decision-log lines are its core's (one pure
# function each), judged by its simulation's own rule for the line.
LOG_BUGS = [
    ("rate limit", "rate_limit_props", "src/rate_limit/log.rs",
     "    let (kind, decision) = if granted > 0 {",
     "    let (kind, decision) = if granted >= permits {",
     "a grant of fewer permits than asked is logged as denied",
     "§9 a rate decision's line"),
    ("debounce", "debounce_sim", "src/debounce/log.rs",
     "        Outcome::Scheduled => LogKind::Routine,",
     "        Outcome::Scheduled => LogKind::Contended,",
     "a debounce call that only moves the fire time prints at the default level",
     "§9 a debounce decision's line"),
    ("runs", "runs_sim", "src/runs/log.rs",
     "            replaced: c.replaced,",
     "            replaced: false && c.replaced,",
     "a claim that replaced a dead claimant does not say so",
     "§9 a run decision's line"),
    ("coordinator", "coordinator_sim", "src/coordinator/log.rs",
     "        limit: summary.limit(),",
     "        limit: summary.callers_limit,",
     "a contended line's data point names the callers' limit under an operator's override",
     "§9a a line's figures, taken by the core"),
    ("rate limit", "rate_limit_props::rules_kept_by_their_text", "src/rate_limit/cached.rs",
     "            Some((seen, call)) if seen == text => Some(call.clone()),",
     "            Some((_, call)) => Some(call.clone()),",
     "an acquire bringing other rules is decided on the last call's rules",
     "§5 each call's own rules (kept by their text)"),
    ("serial", "serial_queue_sim", "src/serial_queue/log.rs",
     "        ClaimReply::Holding { .. } => LogKind::Routine,",
     "        ClaimReply::Holding { .. } | ClaimReply::Waiting { .. } => LogKind::Routine,",
     "a claim that waits is logged as routine (hidden at the default level)",
     "§9 a serial decision's line"),
]

TEST_NAME = "simulation"


def run_bug(core, sim, path, old, new):
    # One edit, or (path a list) the same rule broken where it is written.
    edits = path if isinstance(path, list) else [(path, old, new)]
    originals = {}
    for path, old, _ in edits:
        full = os.path.join(ROOT, path)
        with open(full) as f:
            originals[full] = f.read()
        count = originals[full].count(old)
        if count != 1:
            return ("BAD EDIT", f"the text occurs {count} times in {path}", None)
    try:
        for path, old, new in edits:
            full = os.path.join(ROOT, path)
            with open(full) as f:
                text = f.read()
            with open(full, "w") as f:
                f.write(text.replace(old, new))
        binary, _, test = sim.partition("::")
        proc = subprocess.run(
            ["cargo", "test", "--test", binary, test or TEST_NAME],
            cwd=ROOT, capture_output=True, text=True,
            env={k: v for k, v in os.environ.items()
                 if not k.startswith("BATON_SIM_")},
        )
    finally:
        for full, original in originals.items():
            with open(full, "w") as f:
                f.write(original)
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return ("NOT CAUGHT", "", None)
    if "error[E" in out or "could not compile" in out:
        return ("BAD EDIT", "does not compile", None)
    why = ""
    m = re.search(r"panicked at ([^\n]+):\n([^\n]+)", out)
    if m:
        why = m.group(2).strip()
    earlier = re.search(r"(\d+) steps of earlier seeds ran before seed (\d+) failed", out)
    own = re.search(r"SIMULATION FAILED: \S+, seed (\d+), step (\d+)", out)
    steps = None
    if earlier and own:
        steps = int(earlier.group(1)) + int(own.group(2))
    return ("caught", why, steps)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    bugs = (BUGS + COORDINATOR_BUGS + LIST_AND_REVISION_BUGS + SERIAL_PAUSE_BUGS + SECTIONS_BUGS
            + MAX_WAITING_BUGS + STORE_BUGS + HEALTH_BUGS + ALARM_BUGS + LOG_BUGS)
    if args:
        bugs = [b for b in bugs if b[0] in args or any(a in b[5] for a in args)]
    if "--list" in sys.argv:
        for b in bugs:
            print(f"{b[0]:12} {b[5]}")
        return 0
    missed = 0
    print("| core | bug (one edit) | rule | caught by | steps to catch |")
    print("|---|---|---|---|---|")
    for core, sim, path, old, new, bug, rule in bugs:
        verdict, why, steps = run_bug(core, sim, path, old, new)
        if verdict != "caught":
            missed += 1
            print(f"| {core} | {bug} | {rule} | **{verdict}** {why} | |", flush=True)
        else:
            why = why.replace("|", "\\|")
            if len(why) > 110:
                why = why[:107] + "..."
            print(f"| {core} | {bug} | {rule} | {why} | {steps if steps is not None else '?'} |",
                  flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
