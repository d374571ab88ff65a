//! Steering a key (contract §11): `pause`, `resume` and `setLimit`, their
//! requests and replies, for RPC (the Coordinator's methods and the
//! default entrypoint's `coordinatorPause`, `coordinatorResume` and
//! `coordinatorSetLimit`) and HTTP (`POST /v1/keys/{key}/pause`, `POST
//! .../resume`, `PUT .../limit`) alike.

use super::coordinator::HolderLimit;
pub use super::serial::{PauseReason, Paused};
use crate::coordinator::{self as core};
use crate::ident::{Ident, InstanceId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `pause(key, { reason? })`: the request `{ key, reason? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorPause")]
pub struct Pause {
    pub key: Ident,
    /// Why, for whoever looks at the key (`inspect`, the status page);
    /// never printed in the logs. A second pause replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
}

/// `resume(key)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorResume")]
pub struct Resume {
    pub key: Ident,
}

/// `setLimit(key, limit)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorSetLimit")]
pub struct SetLimit {
    pub key: Ident,
    /// The operator's limit, which wins over the callers' `options.limit`
    /// until it is cleared; `null` (or absent) clears it.
    #[serde(default)]
    pub limit: Option<HolderLimit>,
}

/// `pause`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "CoordinatorPauseReply")]
pub struct PauseReply {
    pub paused: Paused,
}

/// `resume`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "CoordinatorResumeReply")]
pub struct ResumeReply {
    /// Who was handed a slot, in the order they were (each is sent its
    /// turn event); empty when nobody was or the key was not paused.
    pub granted: Vec<InstanceId>,
}

/// `setLimit`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "CoordinatorSetLimitReply")]
pub struct SetLimitReply {
    /// The limit now in force.
    pub limit: u32,
    /// The override now set, or null.
    #[serde(rename = "override")]
    pub limit_override: Option<u32>,
}

impl Pause {
    /// The request as the core decides it.
    pub fn core(&self) -> core::Pause {
        core::Pause {
            reason: self.reason.clone().map(|r| r.as_str().to_owned()),
        }
    }
}

impl SetLimit {
    /// The request as the core decides it.
    pub fn core(&self) -> core::SetLimit {
        core::SetLimit(self.limit.map(HolderLimit::get))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::decode_value;
    use serde_json::json;

    fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(v: serde_json::Value) -> String {
        decode_value::<T>(&v).unwrap_err().to_string()
    }

    #[test]
    fn bad_input_is_refused_by_name() {
        let long = "é".repeat(257);
        assert_eq!(
            refusal::<Pause>(json!({ "key": "k", "reason": long })),
            "BatonError: reason must be at most 512 UTF-8 bytes (got 514)"
        );
        assert_eq!(
            refusal::<Pause>(json!({ "key": "k", "reason": 5 })),
            "BatonError: reason must be a string"
        );
        assert_eq!(
            refusal::<Pause>(json!({ "key": "k", "why": "x" })),
            "BatonError: input has an unknown field \"why\"; accepted fields: key, reason"
        );
        assert_eq!(
            refusal::<SetLimit>(json!({ "key": "k", "limit": 0 })),
            "BatonError: limit must be an integer from 1 to 1000 (got 0)"
        );
        assert_eq!(
            refusal::<SetLimit>(json!({ "key": "k", "limit": 2.5 })),
            "BatonError: limit must be an integer from 1 to 1000 (got 2.5)"
        );
        assert_eq!(
            refusal::<SetLimit>(json!({ "key": "k", "limit": "3" })),
            "BatonError: limit must be a number"
        );
        assert_eq!(
            refusal::<Resume>(json!({ "key": "" })),
            refusal::<Pause>(json!({ "key": "" })),
        );
        let ok: Pause = decode_value(&json!({ "key": "k", "reason": "é".repeat(256) })).unwrap();
        assert!(ok.reason.is_some());
        let cleared: SetLimit = decode_value(&json!({ "key": "k", "limit": null })).unwrap();
        assert_eq!(cleared.limit, None);
    }
}
