//! The faults every simulation injects, named once.
//!
//! Each `*_sim.rs` models its own shell and engine, but the ways they fail
//! are the same platform's: a Durable Object killed or reset between its
//! commit and its effects, an alarm lost, late, doubled or delivered with
//! nothing due, an event or an effect's result lost, late or doubled, a
//! reply lost after the commit, a Workflow instance dying, a status call
//! that fails. A simulation draws a [`Faults`] per seed (the rate of each
//! fault it can inject), asks it at each point where the fault could
//! strike, and its totals say which faults a run injected, so that a
//! change that stops a simulation from injecting one fails it
//! ([`Faults::assert_injected`]).

use super::Rng;
use baton::workflow::Liveness;

/// One kind of fault. The doc of each says what it does to the system;
/// each simulation says in its own words where it strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The object dies before its commit: as if the call never came (the
    /// caller hears an error and retries).
    CrashBeforeCommit,
    /// The object is killed or reset between its commit and its effects:
    /// the writes stand, the effects (creates, wakes, events) and the
    /// reply are lost; only the alarm or the caller's retry recovers them.
    ResetAfterCommit,
    /// The object restarts between calls: what it held in memory (open
    /// long-polls, calls between their phases, its cache) is gone.
    Reset,
    /// The object ran the call and committed, but its reply never reached
    /// the caller, who retries the same call.
    ReplyLost,
    /// An armed alarm is not delivered at its time (the platform retries
    /// it later).
    AlarmLost,
    /// An alarm is delivered after its time.
    AlarmLate,
    /// An alarm is delivered twice.
    AlarmDuplicate,
    /// An alarm is delivered with nothing due (early, or never armed).
    AlarmSpurious,
    /// An event sent to an instance, or an effect's result on its way
    /// back to the object, is lost.
    EventLost,
    /// An event, or an effect's result, arrives late: after later ones.
    EventLate,
    /// An event, or an effect's result, arrives twice.
    EventDuplicate,
    /// A Workflow instance dies (terminated, errored, or its starter
    /// crashed before creating it).
    InstanceDies,
    /// The binding's status call fails: `Unknown`.
    StatusUnknown,
}

impl Fault {
    pub const ALL: [Fault; 13] = [
        Fault::CrashBeforeCommit,
        Fault::ResetAfterCommit,
        Fault::Reset,
        Fault::ReplyLost,
        Fault::AlarmLost,
        Fault::AlarmLate,
        Fault::AlarmDuplicate,
        Fault::AlarmSpurious,
        Fault::EventLost,
        Fault::EventLate,
        Fault::EventDuplicate,
        Fault::InstanceDies,
        Fault::StatusUnknown,
    ];

    fn index(self) -> usize {
        Fault::ALL.iter().position(|f| *f == self).unwrap()
    }
}

/// How many of each fault a run injected: a simulation's stats carry one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Injected([u64; Fault::ALL.len()]);

impl Injected {
    pub fn add(&mut self, other: &Injected) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    pub fn get(&self, fault: Fault) -> u64 {
        self.0[fault.index()]
    }

    /// Fails unless every one of `faults` was injected at least once: a
    /// simulation names the faults it injects, and a change that stops one
    /// would let it pass without testing it.
    pub fn assert_injected(&self, faults: &[Fault]) {
        for fault in faults {
            assert!(
                self.get(*fault) > 0,
                "the simulation never injected {fault:?}"
            );
        }
    }
}

/// One seed's faults: the rate of each (a percentage of the chances to
/// strike, or a weight against the simulation's ordinary actions, as the
/// simulation uses it), and how many were injected.
#[derive(Debug, Clone)]
pub struct Faults {
    rates: [u64; Fault::ALL.len()],
    /// Faults stop (the drain at the end of a seed): every rate reads 0.
    off: bool,
    pub injected: Injected,
}

impl Faults {
    /// No faults at all.
    pub fn none() -> Faults {
        Faults {
            rates: [0; Fault::ALL.len()],
            off: false,
            injected: Injected::default(),
        }
    }

    /// Draws each fault's rate in `0..=max` from `maxima`; one seed in
    /// eight runs without any, as the plain protocol must work too.
    pub fn draw(rng: &mut Rng, maxima: &[(Fault, u64)]) -> Faults {
        let mut faults = Faults::none();
        let faulty = rng.below(8) != 0;
        for (fault, max) in maxima {
            let rate = rng.range(0, *max);
            if faulty {
                faults.rates[fault.index()] = rate;
            }
        }
        faults
    }

    /// The fault's rate, 0 once faults are off.
    pub fn rate(&self, fault: Fault) -> u64 {
        if self.off {
            0
        } else {
            self.rates[fault.index()]
        }
    }

    pub fn set_rate(&mut self, fault: Fault, rate: u64) {
        self.rates[fault.index()] = rate;
    }

    /// Whether `fault` strikes now, at its rate in percent; counted if so.
    pub fn strikes(&mut self, rng: &mut Rng, fault: Fault) -> bool {
        let rate = self.rate(fault);
        let hit = rate > 0 && rng.percent(rate);
        if hit {
            self.count(fault);
        }
        hit
    }

    /// Counts a fault the simulation injected by its own scheduling (a
    /// weighted action).
    pub fn count(&mut self, fault: Fault) {
        self.injected.0[fault.index()] += 1;
    }

    /// Faults stop: the drain.
    pub fn stop(&mut self) {
        self.off = true;
    }

    pub fn on(&self) -> bool {
        !self.off
    }
}

/// A Workflow instance's life in a simulation's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    /// Registered or claimed, but not created (yet, or ever): the binding
    /// cannot find it.
    NotCreated,
    Running,
    Ended(End),
}

/// How an instance ended: each is final, and "dead" to the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Complete,
    Errored,
    Terminated,
}

impl Life {
    /// What the Workflow binding answers for an instance in this life.
    pub fn status(self) -> Liveness {
        match self {
            Life::NotCreated => Liveness::NotFound,
            Life::Running => Liveness::Alive,
            Life::Ended(_) => Liveness::Dead,
        }
    }

    pub fn ended(self) -> bool {
        matches!(self, Life::Ended(_))
    }
}
