//! The pieces every round of the serial queue is made of: a statement and
//! its parameters, a batch's outcomes read back (checked against the
//! invariants before a decision rests on them), and a decision with no
//! follow-up. `decide.rs`, `hand_on.rs`, `steer.rs` and `inspect.rs` build
//! on them.

use super::effect::Effect;
use super::invariants::{assert_invariants, steering};
use super::state::{Outcome, Param, Returns, Statement};
use super::types::{Decided, Read};

/// A decision with no follow-up batch.
pub(super) fn decided<R>(reply: R, effects: Vec<Effect>, state: Read) -> Decided<R> {
    Decided {
        reply,
        effects,
        follow_up: None,
        state,
        log: Vec::new(),
    }
}

pub(super) fn text(value: &str) -> Param {
    Param::Text(value.to_string())
}

/// A statement that returns `serial_queue` rows, or none.
pub(super) fn statement(sql: &'static str, params: Vec<Param>) -> Statement {
    Statement {
        sql,
        params,
        returns: Returns::Entries,
    }
}

/// A statement that returns `serial_group` rows (contract §11's steering).
pub(super) fn steering_statement(sql: &'static str, params: Vec<Param>) -> Statement {
    Statement {
        returns: Returns::Group,
        ..statement(sql, params)
    }
}

/// The outcomes of a batch, checked against the invariants as they come
/// back: every row read back is checked before a decision rests on it.
pub(super) fn read_back<'a>(
    outcomes: &'a [Outcome],
    statements: usize,
) -> impl Fn(usize) -> &'a Outcome + 'a {
    assert!(
        outcomes.len() == statements,
        "a batch of {statements} statements gave {} outcomes",
        outcomes.len()
    );
    for outcome in outcomes {
        assert_invariants(&outcome.rows);
        for group in &outcome.groups {
            let _checked = steering(group);
        }
    }
    move |i| &outcomes[i]
}
