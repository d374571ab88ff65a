//! A command's answer once the effects that may change it are done: its
//! reply and its decision-log lines, as data ([`Answer`]). The caller's
//! own line depends on what its effects came to (a claim past a holder
//! found dead answers instead of the claim that waited behind it; a
//! release hands the group on only if the event was sent), so it is
//! picked here, by [`super::log`], once those results are known; the
//! shell prints the lines it is given and picks none.

use super::decide::enqueue_claimed;
use super::log::{claim_line, enqueue_line, release_line};
use super::types::{ClaimReply, Decided, EnqueueReply, Released, SerialEnqueue};
use crate::ident::InstanceId;
use crate::transition::LogLine;

/// The caller's reply and the lines to print for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<R> {
    pub reply: R,
    pub log: Vec<LogLine>,
}

/// An enqueue's answer: its decision's reply, or, when its claim's holder
/// check re-entered as a claim past the dead holder (`again`, from
/// [`super::claim_outcome`]), that claim's, with the enqueue's superseded.
pub fn enqueue_answer(
    request: &SerialEnqueue,
    decided: Decided<EnqueueReply>,
    again: Option<Decided<ClaimReply>>,
) -> Answer<EnqueueReply> {
    let reply = match (again, decided.reply) {
        (Some(claimed), EnqueueReply::Claimed { superseded, .. }) => {
            enqueue_claimed(superseded, claimed).reply
        }
        (_, reply) => reply,
    };
    let log = vec![enqueue_line(request, &reply)];
    Answer { reply, log }
}

/// A claim's answer: its decision's, or the claim past the dead holder's
/// (`again`) when its check re-entered; `now_ms` the claim's time, which
/// its wait is counted to.
pub fn claim_answer(
    id: &InstanceId,
    decided: Decided<ClaimReply>,
    again: Option<Decided<ClaimReply>>,
    now_ms: u64,
) -> Answer<ClaimReply> {
    let last = again.unwrap_or(decided);
    let log = vec![claim_line(id, &last.reply, &last.state, now_ms)];
    Answer {
        reply: last.reply,
        log,
    }
}

/// A release's answer; `handed_on` when the group went on to an instance
/// that was sent its event.
pub fn release_answer(id: &InstanceId, reply: Released, handed_on: bool) -> Answer<Released> {
    let log = vec![release_line(id, reply, handed_on)];
    Answer { reply, log }
}
