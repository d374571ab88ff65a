//! The hot replies' JS values, written straight from their encoders
//! (`crate::edge::encode`): one `Object`, one property set per field, no
//! serializer between. The field names and §1's four outcome strings are
//! made once per isolate and shared by every reply after.

use super::js;
use crate::edge::coordinator::{AcquireOutcome, EnqueueReply};
use crate::edge::encode::{Encode, Field, Name, Writer};
use js_sys::Object;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A reply object as JS sees it: `object[name] = value`, which a fresh
    /// plain object always takes (no `Reflect.set` and its result).
    #[wasm_bindgen(extends = Object)]
    type Reply;
    #[wasm_bindgen(method, indexing_setter)]
    fn set(this: &Reply, name: &JsValue, value: &JsValue);
}

/// Every JS string a hot reply is written with, made once.
struct Strings {
    names: [JsValue; Name::ALL.len()],
    granted: JsValue,
    pending: JsValue,
    superseded: JsValue,
    busy: JsValue,
}

thread_local! {
    static STRINGS: Strings = Strings {
        names: Name::ALL.map(|name| JsValue::from_str(name.as_str())),
        granted: JsValue::from_str(AcquireOutcome::Granted.as_str()),
        pending: JsValue::from_str(AcquireOutcome::Pending.as_str()),
        superseded: JsValue::from_str(AcquireOutcome::Superseded.as_str()),
        busy: JsValue::from_str(AcquireOutcome::Busy.as_str()),
    };
}

impl Strings {
    fn outcome(&self, outcome: AcquireOutcome) -> JsValue {
        match outcome {
            AcquireOutcome::Granted => &self.granted,
            AcquireOutcome::Pending => &self.pending,
            AcquireOutcome::Superseded => &self.superseded,
            AcquireOutcome::Busy => &self.busy,
        }
        .clone()
    }
}

/// The writer of JS values.
struct Js;

impl Writer for Js {
    type Value = JsValue;
    fn outcome(&self, outcome: AcquireOutcome) -> JsValue {
        STRINGS.with(|s| s.outcome(outcome))
    }
    fn object(&self, fields: &[(Name, Field<'_>)]) -> JsValue {
        let object: Reply = Object::new().unchecked_into();
        STRINGS.with(|s| {
            for (name, field) in fields {
                let value = match *field {
                    Field::Outcome(outcome) => s.outcome(outcome),
                    Field::Text(text) => JsValue::from_str(text),
                    // Within ±2^53 (`Field`): exact as a JS number.
                    Field::Number(n) => JsValue::from_f64(n as f64),
                    Field::Null => JsValue::NULL,
                };
                object.set(&s.names[name.index()], &value);
            }
        });
        object.into()
    }
}

/// A reply as the JS value its RPC caller receives: a hot reply written
/// by its encoder, any other through `serde` (`js::to_js`).
pub trait ToJs {
    fn to_js(&self) -> JsValue;
}

/// Every hot reply through its one encoder.
impl<T: Encode> ToJs for T {
    fn to_js(&self) -> JsValue {
        self.encode(&Js)
    }
}

impl ToJs for EnqueueReply {
    fn to_js(&self) -> JsValue {
        js::to_js(self)
    }
}
