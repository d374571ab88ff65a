//! The object's alarm as the driver keeps it: armed the class's way
//! ([`Sweep::next`]) after a decision that asks, not asked again while a
//! periodic one is known to be set, and run as ticks of the keys it finds
//! due.

use super::{Driver, Memory, NextAlarm, Rules, Sweep};
use crate::ident::Ident;
use crate::shell::js::now_ms;
use crate::shell::object::ObjectBase;
use crate::transition::Alarm;
use std::rc::Rc;
use wasm_bindgen::JsValue;

impl<R: Rules, M: Memory<R>> Driver<R, M> {
    /// Whether the alarm is already as `alarm` asks: left alone, or a
    /// periodic alarm known to be set.
    pub(super) fn alarm_in_place(&self, alarm: &Alarm) -> bool {
        match alarm {
            Alarm::Keep => true,
            Alarm::Periodic => self.alarm_set.get(),
            Alarm::At(_) | Alarm::Clear => false,
        }
    }

    /// In the decision's own turn, with its writes: a periodic alarm
    /// ([`NextAlarm::Every`]) that the decision asks for and that is not
    /// known to be set is set one period from now, its write going with
    /// the decision's (a reset before the reply then loses no alarm: an
    /// owed list report or termination is still sent or done). Not awaited:
    /// the output gate holds the reply until the write is stored. Any
    /// alarm it replaces was set one period from an earlier time, so the
    /// sweep is at most one period late, once per object life or alarm.
    /// The other alarms are armed after the commit ([`Driver::arm_alarm`]).
    pub(super) fn arm_in_turn(&self, alarm: &Alarm) {
        let (
            Some(Sweep {
                next: NextAlarm::Every(period_ms),
                ..
            }),
            Ok(config),
        ) = (&R::ALARM, &self.config)
        else {
            return;
        };
        if *alarm != Alarm::Periodic || self.alarm_set.get() {
            return;
        }
        let at_ms = now_ms() + period_ms(config);
        if let Ok(storage) = self.base.raw_state.storage() {
            let date = js_sys::Date::new(&JsValue::from_f64(at_ms as f64));
            if storage.set_alarm(date, js_sys::Object::new()).is_ok() {
                self.alarm_set.set(true);
            }
        }
    }

    /// Arms the object's alarm its way ([`NextAlarm`]); nothing for an
    /// object with none, or whose variables are bad (it decides nothing).
    pub async fn arm_alarm(&self) -> Result<(), JsValue> {
        match (&R::ALARM, &self.config) {
            (
                Some(Sweep {
                    next: NextAlarm::Every(period_ms),
                    ..
                }),
                Ok(config),
            ) => {
                if !self.alarm_set.get() {
                    ensure_alarm(&self.base, period_ms(config)).await?;
                    self.alarm_set.set(true);
                }
                Ok(())
            }
            (
                Some(Sweep {
                    next: NextAlarm::Earliest(next_wake),
                    ..
                }),
                _,
            ) => {
                self.ensure_schema();
                set_alarm(&self.base, next_wake(&self.base.sql)).await
            }
            (Some(_), Err(_)) | (None, _) => Ok(()),
        }
    }

    /// The alarm: every key whose time has come is ticked, up to
    /// [`Sweep::keys_per_alarm_max`]; the alarm is then set for the next,
    /// which is now if keys were left over. Returns the keys it found due
    /// (the Coordinator's alarm reports on them to the list).
    pub async fn alarm(self: &Rc<Self>) -> Result<Vec<String>, JsValue> {
        let Some(sweep) = &R::ALARM else {
            return Ok(Vec::new());
        };
        // Running, it is no longer set: the decisions it runs re-arm it.
        self.alarm_set.set(false);
        let (due_keys, limit) = (sweep.due_keys, sweep.keys_per_alarm_max);
        let keys = self.read(move |sql| due_keys(sql, now_ms(), limit)).await?;
        for key in &keys {
            // Keys were stored after validation; one that no longer parses is skipped.
            let Ok(key) = Ident::parse("key", key) else {
                continue;
            };
            // A tick is never refused.
            self.tick(&key, (sweep.tick)()).await?;
        }
        // A periodic alarm is re-armed by the decisions that still need it.
        if let NextAlarm::Earliest(_) = sweep.next {
            self.arm_alarm().await?;
        }
        Ok(keys)
    }
}

// The parts of the loop that do not depend on the class, kept out of the
// generic code so the WASM holds one copy of each (P6).

/// Sets the object's alarm for `at_ms`, or clears it.
async fn set_alarm(base: &ObjectBase, at_ms: Option<u64>) -> Result<(), JsValue> {
    let storage = base.raw_state.storage()?;
    let call = match at_ms {
        Some(at_ms) => storage.set_alarm(
            js_sys::Date::new(&JsValue::from_f64(at_ms as f64)),
            js_sys::Object::new(),
        ),
        None => storage.delete_alarm(js_sys::Object::new()),
    };
    wasm_bindgen_futures::JsFuture::from(call?).await?;
    Ok(())
}

/// Sets the object's alarm `period_ms` from now, unless one is set.
async fn ensure_alarm(base: &ObjectBase, period_ms: u64) -> Result<(), JsValue> {
    let storage = base.state.storage();
    if storage.get_alarm().await?.is_none() {
        // workers-rs reads a bare integer as an offset from now, not a
        // time since the epoch; a Duration says so in the type.
        storage
            .set_alarm(std::time::Duration::from_millis(period_ms))
            .await?;
    }
    Ok(())
}
