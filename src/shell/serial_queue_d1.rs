//! The serial queue's shell: D1 statements and turn events.
//!
//! Each method takes its request (decoded by `crate::edge`: from the RPC
//! argument here, from the HTTP body in `shell::http`), reads the rows it
//! needs, applies `crate::serial_queue`'s rules where the core has them
//! (enqueue's plan, the claim's decision), writes (an enqueue's insert,
//! supersede and prune in one D1 batch; a claim's takeover of a stale
//! holder and its conditional claim in another), replies, then wakes
//! whoever must learn the outcome now rather than at its next poll. Wakes
//! are status-checked like the Coordinator's: locally, sendEvent to a
//! finished instance does not fail, so a dead waiter is found by its status.

use super::config::SerialConfig;
use super::decision_log::{self, Scope};
use super::js::{self, now_ms, to_js};
use super::workflow::Workflow;
use crate::coordinator::Liveness;
use crate::edge::coordinator::ReleaseReply;
use crate::edge::serial::{
    GroupMember, HeartbeatReply, Revisioned, SerialClaimReply, SerialEnqueue, SerialEnqueueReply,
    SerialFinished, SerialHolder, SerialInspect, SerialInspection, SerialOutcome, SerialWaiter,
    SkipReason,
};
use crate::edge::TurnEvent;
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{
    SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX,
    WAKE_ATTEMPTS_PER_CALL_MAX,
};
use crate::serial_queue::{
    self as core, sql, ClaimReply, ClaimStep, EnqueuePlan, Entry, EntryState, Supersede,
};
use js_sys::Promise;
use serde::Deserialize;
use serde_json::Value;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::{D1Database, D1PreparedStatement, Env};

/// The Rust half of the Worker's serial-queue RPC methods (see js/worker.mjs).
#[wasm_bindgen]
pub struct SerialQueue {
    shell: Rc<Shell>,
}

/// The serial queue's operations on one Worker `env`; the RPC class and the
/// HTTP API both call these with the decoded request, and shape the typed
/// reply for their caller.
pub(crate) struct Shell {
    env: Env,
}

impl Shell {
    pub(crate) fn new(env: Env) -> Shell {
        Shell { env }
    }
}

fn refuse(error: BatonError) -> JsValue {
    js::to_js_error(&error)
}

fn internal(error: worker::Error) -> JsValue {
    js_sys::Error::new(&format!("Baton: D1 failed: {error}")).into()
}

#[wasm_bindgen]
impl SerialQueue {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> SerialQueue {
        console_error_panic_hook::set_once();
        SerialQueue {
            shell: Rc::new(Shell::new(env)),
        }
    }

    #[wasm_bindgen(js_name = serialEnqueue)]
    pub fn serial_enqueue(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.enqueue(r).await })
    }

    #[wasm_bindgen(js_name = serialClaim)]
    pub fn serial_claim(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.claim(r).await })
    }

    #[wasm_bindgen(js_name = serialHeartbeat)]
    pub fn serial_heartbeat(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.heartbeat(r).await })
    }

    #[wasm_bindgen(js_name = serialRelease)]
    pub fn serial_release(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.release(r).await })
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.inspect(r).await })
    }
}

/// A row as D1 returns it.
#[derive(Deserialize)]
struct Row {
    instance_id: String,
    revision: String,
    enqueued_at: f64,
    state: String,
    heartbeat_at: Option<f64>,
    superseded_by: Option<String>,
    superseded_by_revision: Option<String>,
    finished_at: Option<f64>,
}

/// Rows hold only values that were validated before they were written.
fn stored_id(value: &str) -> InstanceId {
    InstanceId::parse("stored instanceId", value).expect("valid stored id")
}

fn stored_ident(value: &str) -> Ident {
    Ident::parse("stored revision", value).expect("valid stored revision")
}

impl Row {
    fn entry(&self) -> Entry {
        let state = match self.state.as_str() {
            "waiting" => EntryState::Waiting,
            "holding" => EntryState::Holding {
                heartbeat_at_ms: self.heartbeat_at.unwrap_or(0.0) as u64,
            },
            "superseded" => EntryState::Superseded {
                by: stored_id(self.superseded_by.as_deref().unwrap_or_default()),
                by_revision: stored_ident(
                    self.superseded_by_revision.as_deref().unwrap_or_default(),
                ),
            },
            "timed_out" => EntryState::TimedOut,
            "released" => EntryState::Released,
            _ => EntryState::Abandoned,
        };
        Entry {
            instance_id: stored_id(&self.instance_id),
            revision: stored_ident(&self.revision),
            enqueued_at_ms: self.enqueued_at as u64,
            state,
        }
    }
}

impl Row {
    fn holder(&self) -> SerialHolder {
        SerialHolder {
            instance_id: stored_id(&self.instance_id),
            revision: stored_ident(&self.revision),
            heartbeat_at: self.heartbeat_at.unwrap_or(0.0) as u64,
        }
    }

    fn waiter(&self) -> SerialWaiter {
        SerialWaiter {
            instance_id: stored_id(&self.instance_id),
            revision: stored_ident(&self.revision),
            enqueued_at: self.enqueued_at as u64,
        }
    }

    fn finished(&self) -> SerialFinished {
        let outcome = match self.state.as_str() {
            "superseded" => SerialOutcome::Superseded,
            "timed_out" => SerialOutcome::TimedOut,
            "released" => SerialOutcome::Released,
            _ => SerialOutcome::Abandoned,
        };
        let superseded_by = match (&self.superseded_by, &self.superseded_by_revision) {
            (Some(by), Some(revision)) => Some(Revisioned {
                instance_id: stored_id(by),
                revision: stored_ident(revision),
            }),
            _ => None,
        };
        SerialFinished {
            instance_id: stored_id(&self.instance_id),
            revision: stored_ident(&self.revision),
            outcome,
            finished_at: self.finished_at.unwrap_or(0.0) as u64,
            superseded_by,
        }
    }
}

fn text(value: &str) -> JsValue {
    JsValue::from_str(value)
}

fn number(value: u64) -> JsValue {
    JsValue::from_f64(value as f64)
}

impl Shell {
    fn db(&self) -> Result<D1Database, JsValue> {
        self.env.d1("DB").map_err(|_| {
            js_sys::Error::new("Baton configuration: no D1 binding named \"DB\"").into()
        })
    }

    fn config(&self) -> Result<SerialConfig, JsValue> {
        SerialConfig::from_env(&self.env).map_err(|m| js_sys::Error::new(&m).into())
    }

    fn statement(
        &self,
        db: &D1Database,
        query: &str,
        params: &[JsValue],
    ) -> Result<D1PreparedStatement, JsValue> {
        db.prepare(query).bind(params).map_err(internal)
    }

    async fn rows(
        &self,
        db: &D1Database,
        query: &str,
        params: &[JsValue],
    ) -> Result<Vec<Row>, JsValue> {
        self.statement(db, query, params)?
            .all()
            .await
            .map_err(internal)?
            .results::<Row>()
            .map_err(internal)
    }

    async fn entry(
        &self,
        db: &D1Database,
        group: &Ident,
        id: &InstanceId,
    ) -> Result<Option<Entry>, JsValue> {
        let rows = self
            .rows(
                db,
                sql::READ_ENTRY,
                &[text(group.as_str()), text(id.as_str())],
            )
            .await?;
        Ok(rows.first().map(Row::entry))
    }

    async fn holder(&self, db: &D1Database, group: &Ident) -> Result<Option<Entry>, JsValue> {
        let rows = self
            .rows(db, sql::READ_HOLDER, &[text(group.as_str())])
            .await?;
        Ok(rows.first().map(Row::entry))
    }

    pub(crate) async fn enqueue(
        &self,
        request: SerialEnqueue,
    ) -> Result<SerialEnqueueReply, JsValue> {
        let request = core::SerialEnqueue::from(request);
        let config = self.config()?;
        let supersede = match core::plan_enqueue(&request) {
            EnqueuePlan::Skip { current } => {
                let reason = format!("revision {} is not current ({current})", request.revision);
                decision_log::decision(
                    Scope::Group(request.group.as_str()),
                    request.instance_id.as_str(),
                    "skipped",
                    &reason,
                    None,
                );
                return Ok(SerialEnqueueReply::Skipped {
                    reason: SkipReason::NotCurrent,
                    current,
                });
            }
            EnqueuePlan::Insert { supersede } => supersede,
        };
        let db = self.db()?;
        let group = text(request.group.as_str());
        let count: Vec<Value> = self
            .statement(
                &db,
                sql::COUNT_WAITING,
                &[
                    group.clone(),
                    number(u64::from(SERIAL_WAITERS_PER_GROUP_MAX) + 1),
                ],
            )?
            .raw::<Value>()
            .await
            .map_err(internal)?
            .into_iter()
            .flatten()
            .collect();
        let waiting = count.first().and_then(Value::as_u64).unwrap_or(0);
        let already = self
            .entry(&db, &request.group, &request.instance_id)
            .await?
            .is_some();
        if !already && waiting >= u64::from(SERIAL_WAITERS_PER_GROUP_MAX) {
            return Err(refuse(BatonError::LimitExceeded {
                field: "group",
                reason: format!(
                    "already has {SERIAL_WAITERS_PER_GROUP_MAX} waiters, the most one group holds"
                ),
            }));
        }
        let now = number(now_ms());
        let row = [
            group.clone(),
            text(request.instance_id.as_str()),
            text(request.revision.as_str()),
            now,
        ];
        let supersede_query = match supersede {
            Supersede::OlderWaiters => sql::SUPERSEDE_OLDER,
            Supersede::WaitersNotAt(_) => sql::SUPERSEDE_NOT_CURRENT,
        };
        let results = db
            .batch(vec![
                self.statement(&db, sql::INSERT_ENTRY, &row)?,
                self.statement(&db, supersede_query, &row)?,
                self.statement(
                    &db,
                    sql::PRUNE_FINISHED,
                    &[group, number(u64::from(SERIAL_RECENT_PER_GROUP_MAX))],
                )?,
            ])
            .await
            .map_err(internal)?;
        #[derive(Deserialize)]
        struct Superseded {
            instance_id: String,
        }
        let superseded: Vec<InstanceId> = results
            .get(1)
            .map(|r| r.results::<Superseded>())
            .transpose()
            .map_err(internal)?
            .unwrap_or_default()
            .into_iter()
            .map(|s| stored_id(&s.instance_id))
            .collect();
        let reason = format!("superseded {} waiter(s)", superseded.len());
        decision_log::decision(
            Scope::Group(request.group.as_str()),
            request.instance_id.as_str(),
            "waiting",
            &reason,
            None,
        );
        // Superseded waiters learn at once: their next claim says `skipped`.
        if config.push {
            let workflow = Workflow::from_env(&self.env, &config.workflow_binding)?;
            for id in superseded.iter().take(WAKE_ATTEMPTS_PER_CALL_MAX as usize) {
                send_turn_if_alive(
                    &workflow,
                    &config.turn_event_type,
                    id.as_str(),
                    request.group.as_str(),
                )
                .await;
            }
        }
        Ok(SerialEnqueueReply::Waiting { superseded })
    }

    pub(crate) async fn claim(&self, request: GroupMember) -> Result<SerialClaimReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
        let config = self.config()?;
        let db = self.db()?;
        let now = now_ms();
        let rows = self
            .rows(
                &db,
                sql::READ_ENTRY_AND_HOLDER,
                &[text(group.as_str()), text(id.as_str())],
            )
            .await?;
        let me = rows
            .iter()
            .find(|r| r.instance_id == id.as_str())
            .map(Row::entry);
        let holder = rows.iter().find(|r| r.state == "holding").map(Row::entry);
        let step = core::decide_claim(me.as_ref(), holder.as_ref(), now, config.timeouts)
            .map_err(refuse)?;
        let reply = match step {
            ClaimStep::Reply(reply) => reply,
            ClaimStep::TimeOut => {
                self.statement(
                    &db,
                    sql::TIME_OUT,
                    &[text(group.as_str()), text(id.as_str()), number(now)],
                )?
                .run()
                .await
                .map_err(internal)?;
                ClaimReply::TimedOut
            }
            ClaimStep::Attempt => {
                let oldest_live = core::oldest_live_heartbeat_ms(now, config.timeouts);
                let results = db
                    .batch(vec![
                        self.statement(
                            &db,
                            sql::ABANDON_STALE_HOLDER,
                            &[text(group.as_str()), number(now), number(oldest_live)],
                        )?,
                        self.statement(
                            &db,
                            sql::CLAIM,
                            &[text(group.as_str()), text(id.as_str()), number(now)],
                        )?,
                    ])
                    .await
                    .map_err(internal)?;
                let won = results
                    .get(1)
                    .and_then(|r| r.meta().ok().flatten())
                    .and_then(|m| m.changes)
                    .unwrap_or(0)
                    == 1;
                let holder = if won {
                    None
                } else {
                    self.holder(&db, &group).await?
                };
                core::after_claim(won, holder.as_ref())
            }
        };
        let (name, reason) = match &reply {
            ClaimReply::Holding => ("holding", "no live holder".to_string()),
            ClaimReply::Waiting { holder } => (
                "waiting",
                format!(
                    "behind {}",
                    holder.as_ref().map_or("a holder", |h| h.as_str())
                ),
            ),
            ClaimReply::Skipped { by, by_revision } => {
                ("skipped", format!("superseded by {by} at {by_revision}"))
            }
            ClaimReply::TimedOut => ("timed_out", "waited past the waiter timeout".to_string()),
        };
        let waited_ms = me.as_ref().map(|e| now.saturating_sub(e.enqueued_at_ms));
        decision_log::decision(
            Scope::Group(group.as_str()),
            id.as_str(),
            name,
            &reason,
            waited_ms,
        );
        Ok(reply.into())
    }

    pub(crate) async fn heartbeat(&self, request: GroupMember) -> Result<HeartbeatReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
        let db = self.db()?;
        let result = self
            .statement(
                &db,
                sql::HEARTBEAT,
                &[text(group.as_str()), text(id.as_str()), number(now_ms())],
            )?
            .run()
            .await
            .map_err(internal)?;
        let changes = result
            .meta()
            .map_err(internal)?
            .and_then(|m| m.changes)
            .unwrap_or(0);
        Ok(HeartbeatReply {
            holding: changes == 1,
        })
    }

    pub(crate) async fn release(&self, request: GroupMember) -> Result<ReleaseReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
        let config = self.config()?;
        let db = self.db()?;
        let released = self
            .statement(
                &db,
                sql::RELEASE,
                &[text(group.as_str()), text(id.as_str()), number(now_ms())],
            )?
            .all()
            .await
            .map_err(internal)?
            .results::<Value>()
            .map_err(internal)?;
        let was_holding = released
            .first()
            .and_then(|row| row.get("was_holding"))
            .is_some_and(|v| v.as_i64() == Some(1) || v.as_bool() == Some(true));
        let left = if released.is_empty() {
            "held nothing"
        } else if was_holding {
            "freed the group"
        } else {
            "left the queue"
        };
        decision_log::decision(
            Scope::Group(group.as_str()),
            id.as_str(),
            "released",
            left,
            None,
        );
        if !was_holding || released.is_empty() || !config.push {
            return Ok(ReleaseReply { next: None });
        }
        let next = self.wake_next(&db, &config, &group).await?;
        Ok(ReleaseReply {
            next: next.as_deref().map(stored_id),
        })
    }

    /// Wakes the earliest live waiter of a freed group; waiters found dead
    /// are marked abandoned so they never block it. Bounded per call.
    async fn wake_next(
        &self,
        db: &D1Database,
        config: &SerialConfig,
        group: &Ident,
    ) -> Result<Option<String>, JsValue> {
        let workflow = Workflow::from_env(&self.env, &config.workflow_binding)?;
        let waiting = self
            .rows(
                db,
                sql::READ_WAITING,
                &[
                    text(group.as_str()),
                    number(u64::from(WAKE_ATTEMPTS_PER_CALL_MAX)),
                ],
            )
            .await?;
        let payload = to_js(&TurnEvent::Group(group.as_str()));
        for row in waiting {
            // The event goes out while the status is asked (a dead instance
            // ignores it), so a live waiter wakes a round trip sooner.
            let (liveness, sent) = futures_util::future::join(
                workflow.liveness(&row.instance_id),
                workflow.send_to(&row.instance_id, &config.turn_event_type, &payload),
            )
            .await;
            // A live waiter that missed the event claims at its next poll.
            if let (Err(error), Liveness::Alive | Liveness::Unknown) = (sent, liveness) {
                worker::console_warn!("baton: turn event to {} failed: {error:?}", row.instance_id);
            }
            match liveness {
                Liveness::Dead => {
                    let scope = Scope::Group(group.as_str());
                    decision_log::decision(
                        scope,
                        &row.instance_id,
                        "abandoned",
                        "woken but dead",
                        None,
                    );
                    self.statement(
                        db,
                        sql::ABANDON_WAITER,
                        &[
                            text(group.as_str()),
                            text(&row.instance_id),
                            number(now_ms()),
                        ],
                    )?
                    .run()
                    .await
                    .map_err(internal)?;
                }
                Liveness::Alive | Liveness::Unknown => {
                    let scope = Scope::Group(group.as_str());
                    decision_log::decision(
                        scope,
                        &row.instance_id,
                        "woken",
                        "the group is free",
                        None,
                    );
                    return Ok(Some(row.instance_id));
                }
            }
        }
        Ok(None)
    }

    pub(crate) async fn inspect(
        &self,
        request: SerialInspect,
    ) -> Result<SerialInspection, JsValue> {
        let group = request.group;
        let db = self.db()?;
        let g = text(group.as_str());
        let holder = self
            .rows(&db, sql::READ_HOLDER, std::slice::from_ref(&g))
            .await?;
        let waiting = self
            .rows(
                &db,
                sql::READ_WAITING,
                &[g.clone(), number(u64::from(SERIAL_INSPECT_WAITING_MAX))],
            )
            .await?;
        let recent = self
            .rows(
                &db,
                sql::READ_RECENT,
                &[g, number(u64::from(SERIAL_RECENT_PER_GROUP_MAX))],
            )
            .await?;
        Ok(SerialInspection {
            holder: holder.first().map(Row::holder),
            waiting: waiting.iter().map(Row::waiter).collect(),
            recent: recent.iter().map(Row::finished).collect(),
        })
    }
}

/// The turn event to a superseded waiter, status-checked: a dead instance
/// is not sent anything.
async fn send_turn_if_alive(workflow: &Workflow, event_type: &str, id: &str, group: &str) {
    if workflow.liveness(id).await != Liveness::Dead {
        let payload = to_js(&TurnEvent::Group(group));
        if let Err(error) = workflow.send_to(id, event_type, &payload).await {
            worker::console_warn!("baton: turn event to {id} failed: {error:?}");
        }
    }
}
