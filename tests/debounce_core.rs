//! The debounce core's named cases (contract §4), one timeline each: what
//! every call answers, what starts when, and what a failing create does.
//! The seeded simulation (`debounce_sim.rs`) covers the interleavings.

use baton::debounce::{
    apply, assert_invariants, decide, pending_view, retry_backoff_ms, BatchFields, BatchLimit,
    BatchStarted, Call, Cancel, CreateOutcome, Debounce, DebounceCall, DebounceFields,
    DebounceReply, Edge, Flush, IdSuffix, Input, KeyState, Outcome, StartAt, StartAtCall,
    StartAtReply, Transition, Write,
};
use baton::error::BatonError;
use baton::ident::InstanceId;
use baton::limits::{
    DEBOUNCE_CREATE_LOST_MS, DEBOUNCE_CREATE_RETRY_MS_MAX, DEBOUNCE_CREATE_RETRY_MS_MIN,
    DEBOUNCE_STARTED_KEPT, DEBOUNCE_UNFINISHED_STARTS_MAX,
};

/// One key, driven call by call, with every transition checked and applied.
struct Key {
    state: KeyState,
    suffixes: u64,
    /// Every create asked for, in order: (time, id, params).
    creates: Vec<(u64, String, Option<String>)>,
}

impl Key {
    fn new() -> Key {
        Key {
            state: KeyState::default(),
            suffixes: 0,
            creates: Vec::new(),
        }
    }

    fn suffix(&mut self) -> IdSuffix {
        self.suffixes += 1;
        IdSuffix::new(format!("{}", self.suffixes))
    }

    /// What re-enters the key (a tick, a create's outcome), checked and
    /// applied.
    fn run(&mut self, now: u64, input: Input) -> Result<Transition, BatonError> {
        let transition = decide(&self.state, now, input)?;
        Ok(self.applied(now, transition))
    }

    /// A caller's call, checked and applied: its answer and transition.
    fn call<C: Call<KeyState, Transition = Transition>>(
        &mut self,
        now: u64,
        call: C,
    ) -> Result<(C::Answer, Transition), BatonError> {
        let (answer, transition) = call.decide(&self.state, now)?;
        Ok((answer, self.applied(now, transition)))
    }

    fn applied(&mut self, now: u64, transition: Transition) -> Transition {
        let mut applied = self.state.clone();
        apply(&mut applied, &transition.writes);
        assert_eq!(applied, transition.state);
        assert_invariants(&transition.state);
        self.state = transition.state.clone();
        for create in transition.effects.iter() {
            self.creates
                .push((now, create.id.to_string(), create.params.clone()));
        }
        transition
    }

    /// Runs `call` and confirms every create it asks for; its answer.
    fn run_ok<C: Call<KeyState, Transition = Transition>>(
        &mut self,
        now: u64,
        call: C,
    ) -> C::Answer {
        let (answer, transition) = self.call(now, call).unwrap();
        for create in transition.effects.iter() {
            self.report(now, &create.id.to_string(), CreateOutcome::Created);
        }
        answer
    }

    fn report(&mut self, now: u64, id: &str, outcome: CreateOutcome) {
        let id = InstanceId::parse("instanceId", id).unwrap();
        self.run(now, Input::Created { id, outcome }).unwrap();
    }

    fn debounce(
        &mut self,
        now: u64,
        edge: Edge,
        delay: u64,
        max_wait: u64,
        n: u32,
    ) -> DebounceReply {
        let suffix = self.suffix();
        let call = call(edge, delay, Some(max_wait), Some(&format!("{{\"n\":{n}}}")));
        self.run_ok(now, Debounce { call, suffix })
    }

    fn tick(&mut self, now: u64) {
        let transition = self.run(now, Input::Tick).unwrap();
        for create in transition.effects.iter() {
            self.report(now, &create.id.to_string(), CreateOutcome::Created);
        }
    }

    fn started(&self) -> Vec<&str> {
        self.state.started.iter().map(|s| s.id.as_str()).collect()
    }

    fn created_ids(&self) -> Vec<&str> {
        self.creates.iter().map(|(_, id, _)| id.as_str()).collect()
    }
}

fn call(edge: Edge, delay_ms: u64, max_wait_ms: Option<u64>, params: Option<&str>) -> DebounceCall {
    DebounceCall::new(DebounceFields {
        delay_ms,
        max_wait_ms,
        edge: Some(edge),
        params: params.map(str::to_owned),
        workflow: "WORKFLOW".into(),
        id_prefix: None,
        batch: None,
    })
    .unwrap()
}

fn reply(outcome: Outcome, id: &str, fire_at_ms: Option<u64>) -> DebounceReply {
    DebounceReply {
        outcome,
        instance_id: InstanceId::parse("instanceId", id).unwrap(),
        fire_at_ms,
        batches_started: Vec::new(),
    }
}

#[test]
fn trailing_starts_once_with_the_last_params_under_the_first_calls_id() {
    let mut key = Key::new();
    // delay 100, maxWait 1000: calls at 0, 50, 120 form one burst.
    assert_eq!(
        key.debounce(0, Edge::Trailing, 100, 1000, 1),
        reply(Outcome::Scheduled, "debounce-1", Some(100))
    );
    assert_eq!(
        key.debounce(50, Edge::Trailing, 100, 1000, 2),
        reply(Outcome::Scheduled, "debounce-1", Some(150))
    );
    assert_eq!(
        key.debounce(120, Edge::Trailing, 100, 1000, 3),
        reply(Outcome::Scheduled, "debounce-1", Some(220))
    );
    let view = pending_view(&key.state).unwrap();
    assert_eq!(
        (
            view.edge,
            view.first_at_ms,
            view.last_at_ms,
            view.fire_at_ms,
            view.calls
        ),
        ("trailing", 0, 120, 220, 3)
    );
    key.tick(219); // early: nothing
    assert!(key.creates.is_empty());
    key.tick(220);
    assert_eq!(
        key.creates,
        vec![(220, "debounce-1".to_string(), Some("{\"n\":3}".to_string()))]
    );
    assert_eq!(key.started(), ["debounce-1"]);
    key.tick(221); // twice: nothing more
    assert_eq!(key.creates.len(), 1);
    // The next call begins a new burst with a new id.
    assert_eq!(
        key.debounce(300, Edge::Trailing, 100, 1000, 4),
        reply(Outcome::Scheduled, "debounce-4", Some(400))
    );
}

#[test]
fn max_wait_bounds_an_endless_stream() {
    let mut key = Key::new();
    // A call every 50 ms with delay 100 never leaves 100 ms of silence;
    // maxWait 300 starts the burst at 300 anyway.
    for t in (0..300).step_by(50) {
        let r = key.debounce(t, Edge::Trailing, 100, 300, t as u32);
        assert_eq!(r.instance_id.as_str(), "debounce-1");
        assert_eq!(r.fire_at_ms, Some((t + 100).min(300)));
    }
    // The call at 300 finds the burst over: it fires the old start and
    // begins a new burst.
    let r = key.debounce(300, Edge::Trailing, 100, 300, 300);
    assert_eq!(key.created_ids(), ["debounce-1"]);
    assert_eq!(key.creates[0].2.as_deref(), Some("{\"n\":250}"));
    assert_eq!(r, reply(Outcome::Scheduled, "debounce-7", Some(400)));
}

#[test]
fn leading_starts_at_once_and_suppresses_the_rest_of_the_burst() {
    let mut key = Key::new();
    assert_eq!(
        key.debounce(0, Edge::Leading, 100, 1000, 1),
        reply(Outcome::Started, "debounce-1", None)
    );
    assert_eq!(key.created_ids(), ["debounce-1"]);
    assert_eq!(
        key.debounce(60, Edge::Leading, 100, 1000, 2),
        reply(Outcome::Suppressed, "debounce-1", None)
    );
    assert!(pending_view(&key.state).is_none(), "nothing is pending");
    // 100 ms of silence after 60 ends the burst at 160.
    assert_eq!(
        key.debounce(160, Edge::Leading, 100, 1000, 3),
        reply(Outcome::Started, "debounce-3", None)
    );
    assert_eq!(key.created_ids(), ["debounce-1", "debounce-3"]);
    assert_eq!(key.creates[1].2.as_deref(), Some("{\"n\":3}"));
}

#[test]
fn both_adds_one_trailing_start_only_when_the_burst_had_more_calls() {
    let mut key = Key::new();
    assert_eq!(
        key.debounce(0, Edge::Both, 100, 250, 1),
        reply(Outcome::Started, "debounce-1", None)
    );
    // The trailing start's own id and fireAt, with firstCall the leading call.
    assert_eq!(
        key.debounce(80, Edge::Both, 100, 250, 2),
        reply(Outcome::Scheduled, "debounce-2", Some(180))
    );
    assert_eq!(
        key.debounce(170, Edge::Both, 100, 250, 3),
        reply(Outcome::Scheduled, "debounce-2", Some(250))
    );
    key.tick(250);
    assert_eq!(key.created_ids(), ["debounce-1", "debounce-2"]);
    assert_eq!(key.creates[1].2.as_deref(), Some("{\"n\":3}"));
    // A lone call: only the leading start.
    key.debounce(1000, Edge::Both, 100, 250, 4);
    key.tick(1100);
    key.tick(5000);
    assert_eq!(
        key.created_ids(),
        ["debounce-1", "debounce-2", "debounce-4"]
    );
}

#[test]
fn start_at_fires_is_replaced_and_cancelled() {
    let mut key = Key::new();
    let start = |key: &mut Key, now: u64, at: f64, id: Option<&str>, p: &str| {
        let suffix = key.suffix();
        let call = StartAtCall::new(
            now,
            at,
            Some(p.to_string()),
            "WORKFLOW".into(),
            id.map(|id| InstanceId::parse("instanceId", id).unwrap()),
        )
        .unwrap();
        key.run_ok(now, StartAt { call, suffix })
    };
    let first = start(&mut key, 0, 500.5, None, "1");
    assert_eq!(
        first,
        StartAtReply {
            instance_id: InstanceId::parse("i", "start-1").unwrap(),
            at: 500.5
        }
    );
    assert_eq!(pending_view(&key.state).unwrap().edge, "at");
    assert_eq!(key.state.next_alarm_ms(), Some(501));
    // Replaced: the time and params change, the id stays.
    start(&mut key, 10, 800.0, None, "2");
    key.tick(501);
    assert!(key.creates.is_empty());
    key.tick(800);
    assert_eq!(
        key.creates,
        vec![(800, "start-1".to_string(), Some("2".to_string()))]
    );
    // A past `at` starts at once.
    start(&mut key, 900, 5.0, Some("given"), "3");
    assert_eq!(key.created_ids(), ["start-1", "given"]);
    // Cancelled: its id is returned and never started.
    start(&mut key, 1000, 2000.0, None, "4");
    assert_eq!(
        key.run_ok(1001, Cancel),
        Some(InstanceId::parse("i", "start-4").unwrap())
    );
    key.tick(2000);
    assert_eq!(key.created_ids(), ["start-1", "given"]);
    assert_eq!(key.run_ok(3000, Cancel), None);
}

#[test]
fn start_at_ends_a_burst_and_a_burst_takes_over_a_start_at() {
    let mut key = Key::new();
    key.debounce(0, Edge::Trailing, 100, 1000, 1);
    let suffix = key.suffix();
    let call =
        StartAtCall::new(10, 5000.0, Some("\"at\"".into()), "WORKFLOW".into(), None).unwrap();
    key.run_ok(10, StartAt { call, suffix });
    // The burst is over: this call begins a new one, which takes over the
    // pending start, id and all.
    assert_eq!(
        key.debounce(20, Edge::Trailing, 100, 1000, 2),
        reply(Outcome::Scheduled, "debounce-1", Some(120))
    );
    key.tick(120);
    assert_eq!(
        key.creates,
        vec![(120, "debounce-1".to_string(), Some("{\"n\":2}".to_string()))]
    );
}

#[test]
fn flush_starts_now_and_ends_the_burst() {
    let mut key = Key::new();
    key.debounce(0, Edge::Trailing, 100, 1000, 1);
    key.debounce(10, Edge::Trailing, 100, 1000, 2);
    assert_eq!(
        key.run_ok(20, Flush),
        Some(InstanceId::parse("i", "debounce-1").unwrap())
    );
    assert_eq!(
        key.creates,
        vec![(20, "debounce-1".into(), Some("{\"n\":2}".into()))]
    );
    assert_eq!(
        key.debounce(30, Edge::Trailing, 100, 1000, 3)
            .instance_id
            .as_str(),
        "debounce-3"
    );
    key.run_ok(40, Cancel);
    assert_eq!(key.run_ok(50, Flush), None);
}

#[test]
fn a_failing_create_is_retried_with_backoff_and_never_dropped() {
    let mut key = Key::new();
    let suffix = key.suffix();
    let t = key
        .call(
            0,
            Debounce {
                call: call(Edge::Leading, 100, None, None),
                suffix,
            },
        )
        .unwrap()
        .1;
    assert_eq!(t.effects.len(), 1);
    // Unreported (the object died before the create): retried after the loss timeout.
    assert_eq!(t.alarm.at_ms(), Some(DEBOUNCE_CREATE_LOST_MS));
    let mut now = DEBOUNCE_CREATE_LOST_MS;
    let t = key.run(now, Input::Tick).unwrap();
    assert_eq!(t.effects.len(), 1, "re-fired after the loss timeout");
    // Failures back off, doubling to the cap.
    for failures in 1..=12 {
        key.report(
            now,
            "debounce-1",
            CreateOutcome::Failed("binding down".into()),
        );
        let wait = retry_backoff_ms(failures);
        assert_eq!(
            wait,
            (DEBOUNCE_CREATE_RETRY_MS_MIN << (failures - 1)).min(DEBOUNCE_CREATE_RETRY_MS_MAX)
        );
        assert_eq!(key.state.next_alarm_ms(), Some(now + wait));
        assert_eq!(key.state.creating[0].failures, failures);
        assert_eq!(
            key.run(now + wait - 1, Input::Tick).unwrap().effects.len(),
            0
        );
        now += wait;
        let t = key.run(now, Input::Tick).unwrap();
        assert_eq!(t.effects.first().unwrap().attempt, failures + 1);
    }
    // "Exists" is done: a re-fire after a crash starts nothing twice.
    key.report(now, "debounce-1", CreateOutcome::AlreadyExists);
    assert!(key.state.creating.is_empty());
    assert_eq!(key.started(), ["debounce-1"]);
    assert_eq!(key.state.next_alarm_ms(), None);
}

#[test]
fn a_key_full_of_unconfirmed_starts_refuses_more_and_changes_nothing() {
    let mut key = Key::new();
    for i in 0..DEBOUNCE_UNFINISHED_STARTS_MAX as u64 {
        let suffix = key.suffix();
        // Leading calls 1 s apart: a start each, none confirmed.
        key.call(
            i * 1000,
            Debounce {
                call: call(Edge::Leading, 1, None, None),
                suffix,
            },
        )
        .unwrap();
    }
    let before = key.state.clone();
    let suffix = key.suffix();
    let err = key
        .call(
            100_000,
            Debounce {
                call: call(Edge::Trailing, 1, None, None),
                suffix,
            },
        )
        .unwrap_err();
    assert_eq!(err.field(), "key");
    assert_eq!(key.state, before);
    // Once one is confirmed, there is room again.
    key.report(100_000, "debounce-1", CreateOutcome::Created);
    let suffix = key.suffix();
    assert!(key
        .call(
            100_001,
            Debounce {
                call: call(Edge::Trailing, 1, None, None),
                suffix
            }
        )
        .is_ok());
}

#[test]
fn recent_starts_are_newest_first_and_bounded() {
    let mut key = Key::new();
    for i in 0..30u64 {
        key.debounce(i * 1000, Edge::Leading, 1, 1, i as u32);
    }
    assert_eq!(key.state.started.len(), DEBOUNCE_STARTED_KEPT);
    assert_eq!(key.started()[0], "debounce-30");
    assert_eq!(key.started()[DEBOUNCE_STARTED_KEPT - 1], "debounce-11");
}

#[test]
fn a_call_changing_the_values_applies_from_that_call_on() {
    let mut key = Key::new();
    key.debounce(0, Edge::Trailing, 100, 1000, 1);
    // Joins (50 < 0 + 100, the burst's delay), then its own delay of 10 applies.
    let r = key.debounce(50, Edge::Trailing, 10, 1000, 2);
    assert_eq!(r, reply(Outcome::Scheduled, "debounce-1", Some(60)));
    // A leading call joining a trailing burst is suppressed and keeps no params.
    let r = key.debounce(55, Edge::Leading, 10, 1000, 3);
    assert_eq!(r, reply(Outcome::Suppressed, "debounce-1", Some(65)));
    key.tick(65);
    assert_eq!(
        key.creates,
        vec![(65, "debounce-1".into(), Some("{\"n\":2}".into()))]
    );
}

#[test]
fn start_at_refuses_an_id_whose_create_is_unconfirmed() {
    let mut key = Key::new();
    let suffix = key.suffix();
    key.call(
        0,
        Debounce {
            call: call(Edge::Leading, 100, None, None),
            suffix,
        },
    )
    .unwrap();
    let before = key.state.clone();
    let given = InstanceId::parse("instanceId", "debounce-1").unwrap();
    let call = StartAtCall::new(10, 20.0, None, "WORKFLOW".into(), Some(given)).unwrap();
    let suffix = key.suffix();
    let err = key.call(10, StartAt { call, suffix }).unwrap_err();
    assert_eq!(err.field(), "instanceId");
    assert_eq!(key.state, before);
}

// --- §4a batching ---------------------------------------------------------

/// A trailing call with `batch` (delay 100, maxWait 1000).
fn batch_call(
    max_items: Option<u32>,
    max_bytes: Option<u32>,
    params: Option<&str>,
) -> DebounceCall {
    DebounceCall::new(DebounceFields {
        delay_ms: 100,
        max_wait_ms: Some(1000),
        params: params.map(str::to_owned),
        workflow: "WORKFLOW".into(),
        batch: Some(BatchFields {
            max_items: max_items.map(f64::from),
            max_bytes: max_bytes.map(f64::from),
        }),
        ..DebounceFields::default()
    })
    .unwrap()
}

impl Key {
    fn batch(&mut self, now: u64, call: DebounceCall) -> DebounceReply {
        let suffix = self.suffix();
        self.run_ok(now, Debounce { call, suffix })
    }
}

#[test]
fn a_batch_starts_with_every_calls_params_in_order() {
    let mut key = Key::new();
    let r1 = key.batch(0, batch_call(None, None, Some("{\"n\":1}")));
    assert_eq!(r1, reply(Outcome::Scheduled, "debounce-1", Some(100)));
    // A call without params adds nothing, and extends the burst.
    let r2 = key.batch(50, batch_call(None, None, None));
    assert_eq!(r2, reply(Outcome::Scheduled, "debounce-1", Some(150)));
    // A call without `batch` joining a batching burst adds its params too.
    let plain = call(Edge::Trailing, 100, Some(1000), Some("\"three\""));
    let r3 = key.batch(60, plain);
    assert_eq!(r3, reply(Outcome::Scheduled, "debounce-1", Some(160)));
    assert_eq!(pending_view(&key.state).unwrap().items, Some(2));
    assert_eq!(pending_view(&key.state).unwrap().calls, 3);
    key.tick(160);
    assert_eq!(
        key.creates,
        vec![(
            160,
            "debounce-1".to_string(),
            Some("{\"batch\":[{\"n\":1},\"three\"]}".to_string())
        )]
    );
    assert!(key.state.batch.is_empty() && key.state.phase.pending().is_none());
    // Without `batch`, a start takes the latest params as before.
    assert_eq!(pending_view(&KeyState::default()), None);
}

#[test]
fn the_call_that_brings_a_batch_to_max_items_starts_it_at_once() {
    let mut key = Key::new();
    let p = |n: u32| format!("{{\"n\":{n}}}");
    for n in 1..=2 {
        let r = key.batch(n.into(), batch_call(Some(3), None, Some(&p(n))));
        assert_eq!(r.outcome, Outcome::Scheduled);
    }
    let third = key.batch(3, batch_call(Some(3), None, Some(&p(3))));
    assert_eq!(third.outcome, Outcome::Started);
    assert_eq!(third.instance_id.as_str(), "debounce-1");
    assert_eq!(third.fire_at_ms, None);
    assert_eq!(
        third.batches_started,
        [BatchStarted {
            id: third.instance_id.clone(),
            items: 3,
            bytes: 35,
            by: BatchLimit::MaxItems(3),
        }]
    );
    assert_eq!(
        key.creates,
        vec![(
            3,
            "debounce-1".to_string(),
            Some("{\"batch\":[{\"n\":1},{\"n\":2},{\"n\":3}]}".to_string())
        )]
    );
    assert_eq!(key.started(), ["debounce-1"]);
    // The burst ended: the next call begins another, under a new id.
    let next = key.batch(4, batch_call(Some(3), None, Some(&p(4))));
    assert_eq!(next, reply(Outcome::Scheduled, "debounce-4", Some(104)));
    // maxItems 1: every call with params is a batch of its own, at once.
    let mut one = Key::new();
    let r = one.batch(0, batch_call(Some(1), None, Some("1")));
    assert_eq!(
        (r.outcome, r.instance_id.as_str()),
        (Outcome::Started, "debounce-1")
    );
    assert_eq!(one.creates[0].2.as_deref(), Some("{\"batch\":[1]}"));
}

#[test]
fn params_that_would_pass_max_bytes_start_the_batch_without_them() {
    let mut key = Key::new();
    // {"batch":["aaaa","bbbb"]} is 25 bytes: with maxBytes 25 it fits exactly.
    let r1 = key.batch(0, batch_call(None, Some(25), Some("\"aaaa\"")));
    let r2 = key.batch(10, batch_call(None, Some(25), Some("\"bbbb\"")));
    assert_eq!(r2, reply(Outcome::Scheduled, "debounce-1", Some(110)));
    assert_eq!(r1.instance_id, r2.instance_id);
    assert!(key.creates.is_empty());
    // One byte more than fits: the batch starts as it is, and this call
    // begins the next burst, under a new id.
    let r3 = key.batch(20, batch_call(None, Some(25), Some("1")));
    assert_eq!(r3.outcome, Outcome::Scheduled);
    assert_eq!(r3.instance_id.as_str(), "debounce-3");
    assert_eq!(r3.fire_at_ms, Some(120));
    assert_eq!(
        r3.batches_started,
        [BatchStarted {
            id: r1.instance_id.clone(),
            items: 2,
            bytes: 25,
            by: BatchLimit::MaxBytes(25),
        }]
    );
    assert_eq!(
        key.creates,
        vec![(
            20,
            "debounce-1".to_string(),
            Some("{\"batch\":[\"aaaa\",\"bbbb\"]}".to_string())
        )]
    );
    assert_eq!(key.state.batch, ["1"]);
    key.tick(120);
    assert_eq!(key.creates[1].2.as_deref(), Some("{\"batch\":[1]}"));
}

#[test]
fn batch_refusals_change_nothing() {
    // `batch` is for the trailing edge only, naming it.
    for edge in [Edge::Leading, Edge::Both] {
        let refused = DebounceCall::new(DebounceFields {
            delay_ms: 10,
            edge: Some(edge),
            workflow: "WORKFLOW".into(),
            batch: Some(BatchFields::default()),
            ..DebounceFields::default()
        });
        assert_eq!(refused.unwrap_err().field(), "batch");
    }
    for (max_items, max_bytes, field) in [
        (Some(0.0), None, "maxItems"),
        (Some(1001.0), None, "maxItems"),
        (Some(1.5), None, "maxItems"),
        (None, Some(0.0), "maxBytes"),
        (None, Some(1_048_577.0), "maxBytes"),
    ] {
        let refused = DebounceCall::new(DebounceFields {
            delay_ms: 10,
            workflow: "WORKFLOW".into(),
            batch: Some(BatchFields {
                max_items,
                max_bytes,
            }),
            ..DebounceFields::default()
        });
        assert_eq!(refused.unwrap_err().field(), field);
    }
    // A split needs room for the next burst's start: at the bound it is
    // refused naming `key`, and the batch stays whole.
    let mut key = Key::new();
    key.batch(0, batch_call(None, Some(20), Some("\"aaaa\"")));
    while key.state.unfinished_starts() < DEBOUNCE_UNFINISHED_STARTS_MAX {
        // Starts whose creates keep failing fill the key's bound.
        let id = format!("x{}", key.state.creating.len());
        let mut creating = key.state.clone();
        creating.creating.push(baton::debounce::Creating {
            id: InstanceId::parse("instanceId", &id).unwrap(),
            workflow: "WORKFLOW".into(),
            params: None,
            fired_at_ms: 0,
            failures: 1,
            next_try_at_ms: 1_000_000,
            last_error: None,
        });
        key.state = creating;
    }
    let before = key.state.clone();
    let suffix = key.suffix();
    let split = batch_call(None, Some(20), Some("\"bbbb\""));
    let refused = Debounce {
        call: split,
        suffix,
    }
    .decide(&before, 10)
    .unwrap_err();
    assert_eq!(refused.field(), "key");
    assert_eq!(key.state, before);
}

#[test]
fn start_at_and_cancel_drop_a_pending_batch() {
    let mut key = Key::new();
    key.batch(0, batch_call(None, None, Some("1")));
    key.batch(10, batch_call(None, None, Some("2")));
    // startAt replaces the pending start's time and params, id kept.
    let at = StartAtCall::new(20, 500.0, Some("\"at\"".into()), "WORKFLOW".into(), None).unwrap();
    let suffix = key.suffix();
    let (_, transition) = key.call(20, StartAt { call: at, suffix }).unwrap();
    assert!(transition.writes.contains(&Write::BatchCleared));
    assert!(key.state.batch.is_empty());
    key.tick(500);
    assert_eq!(key.creates[0].2.as_deref(), Some("\"at\""));
    // cancel drops a batch and its rows.
    let mut key = Key::new();
    key.batch(0, batch_call(None, None, Some("1")));
    let (_, transition) = key.call(5, Cancel).unwrap();
    assert!(transition.writes.contains(&Write::BatchCleared));
    assert!(key.state.batch.is_empty() && key.state.phase.pending().is_none());
}
