//! Contract §1a in the serial queue: an instance its remembered binding
//! cannot find, found through another (`shell::found`), is that
//! Workflow's instance from then on. One conditional update remembers the
//! new binding; the decision that changed it prints the one `warn` line,
//! so the line comes once per instance (the next check finds it through
//! the new binding, and a second update changes nothing).

use super::round::{read_back, statement, text};
use super::{sql, Batch, Outcome};
use crate::ident::{Ident, InstanceId};
use crate::transition::{Figures, LogKind, LogLine};
use crate::workflow::{found_elsewhere_reason, FOUND_ELSEWHERE};

/// The batch that remembers `to` as `id`'s binding while it waits or holds.
pub fn rebind(group: &Ident, id: &InstanceId, to: &str) -> Batch {
    let params = vec![text(group.as_str()), text(id.as_str()), text(to)];
    Batch(vec![statement(sql::REBIND, params)])
}

/// The `warn` line, if the batch changed the binding `id` was remembered
/// with (`from`, as the check named it).
pub fn rebind_outcome(id: &InstanceId, from: &str, to: &str, outcomes: &[Outcome]) -> Vec<LogLine> {
    let at = read_back(outcomes, 1);
    if at(0).changes == 0 {
        return Vec::new();
    }
    vec![LogLine {
        kind: LogKind::Warn,
        instance: Some(id.clone()),
        decision: FOUND_ELSEWHERE,
        reason: found_elsewhere_reason(from, to).into(),
        waited_ms: None,
        figures: Figures::default(),
    }]
}
