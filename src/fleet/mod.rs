//! Fleet limits: a retry budget and a circuit breaker shared by every run that names them.
//!
//! `rules` holds what a budget and a breaker decide, pure; a `Store` keeps the record of each
//! name and runs each decision as one transaction (load, decide, store); `Fleet` is what the
//! driver asks, through `Gate`, before an attempt, after it, and before a retry. A store that
//! fails is never a reason to stop: the run goes on as if it named no budget and no breaker, and
//! says so once (fail open). What is to be said comes back as `Notice`s, which the driver
//! hands to the reporter.

pub(crate) mod file;
pub(crate) mod rules;

use std::time::Duration;

use rules::{Admission, BreakerState, Record};
pub(crate) use rules::{BreakerPolicy, BudgetPolicy};
pub(crate) use rules::{Outcome, Transition};

/// What a run names, and by what policy it judges the shared counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetSettings {
    pub budget: Option<(String, BudgetPolicy)>,
    pub breaker: Option<(String, BreakerPolicy)>,
    /// How long a probe of this run holds the right to probe: its `--timeout` and grace, else
    /// the cooldown.
    pub probe_lease: Duration,
}

impl FleetSettings {
    pub fn any(&self) -> bool {
        self.budget.is_some() || self.breaker.is_some()
    }

    /// The names of the budget and breaker, each once.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        let budget = self.budget.as_ref().map(|(name, _)| name.as_str());
        let breaker = self.breaker.as_ref().map(|(name, _)| name.as_str());
        for name in [budget, breaker].into_iter().flatten() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}

/// Why a store could not do a transaction: the run fails open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoreError(pub String);

/// Keeps the record of each name; each call is one transaction, atomic with respect to every
/// other run.
pub(crate) trait Store {
    /// Loads the record of `name` (a fresh one if there is none, or if it was corrupt: then
    /// `replaced` says so), runs `decide` on it with the store's time in milliseconds, and
    /// stores it if it changed.
    fn transact<T>(
        &mut self,
        name: &str,
        decide: &mut dyn FnMut(&mut Record, u64) -> T,
    ) -> Result<Transacted<T>, StoreError>;

    /// Reads the record of `name` without its lock, for a decision that changes nothing: what
    /// some run stored last, whole, since records are replaced atomically (a corrupt one reads
    /// as fresh, and is left for a transaction to replace).
    fn peek<T>(
        &mut self,
        name: &str,
        look: &mut dyn FnMut(&Record, u64) -> T,
    ) -> Result<T, StoreError>;
}

/// What a transaction gave, and whether the record it found was corrupt and replaced.
pub(crate) struct Transacted<T> {
    pub value: T,
    pub replaced: bool,
}

/// Whether an attempt may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    Go,
    /// The breaker is open: no attempt starts. The next probe is due in this time.
    BreakerOpen {
        next_probe: Duration,
    },
}

/// Whether a run that would go on may make another attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoOn {
    Yes,
    BreakerOpen { next_probe: Duration },
    BudgetSpent,
}

/// What a run says of the fleet limits.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The store failed: the run goes on without budget and breaker.
    StateUnavailable { error: String },
    /// The record of `name` did not parse: it was replaced by a fresh one.
    Replaced { name: String },
    /// A retry was paid for (`spent`) or refused, leaving `balance`.
    Budget {
        name: String,
        spent: bool,
        balance: f64,
    },
    /// This run's attempt is the breaker's one probe.
    Probe { name: String },
    Breaker {
        name: String,
        transition: Transition,
        /// For an opening: how long until the next probe.
        next_probe: Option<Duration>,
    },
}

/// What the driver asks of the fleet limits.
pub(crate) trait Gate {
    /// Before attempt number `attempt` (1 for a run's first, which the budget never holds
    /// back and which earns its share): whether it may start.
    fn admit(&mut self, attempt: u64) -> Admit;
    /// After an attempt: what it tells the breaker.
    fn record(&mut self, outcome: Outcome);
    /// When an attempt has ended and the run would go on: whether the next may come, the
    /// breaker asked first, then the budget (which then pays for it).
    fn go_on(&mut self) -> GoOn;
    /// What is to be said since the last call.
    fn take_notices(&mut self) -> Vec<Notice>;
}

/// A run that names no budget and no breaker.
pub(crate) struct NoLimits;

impl Gate for NoLimits {
    fn admit(&mut self, _: u64) -> Admit {
        Admit::Go
    }
    fn record(&mut self, _: Outcome) {}
    fn go_on(&mut self) -> GoOn {
        GoOn::Yes
    }
    fn take_notices(&mut self) -> Vec<Notice> {
        Vec::new()
    }
}

/// The store a run uses, or why it cannot: then the run fails open from the start.
pub(crate) enum StateStore {
    Ready(file::FileStore),
    Unavailable(String),
}

impl Store for StateStore {
    fn transact<T>(
        &mut self,
        name: &str,
        decide: &mut dyn FnMut(&mut Record, u64) -> T,
    ) -> Result<Transacted<T>, StoreError> {
        match self {
            StateStore::Ready(store) => store.transact(name, decide),
            StateStore::Unavailable(reason) => Err(StoreError(reason.clone())),
        }
    }

    fn peek<T>(
        &mut self,
        name: &str,
        look: &mut dyn FnMut(&Record, u64) -> T,
    ) -> Result<T, StoreError> {
        match self {
            StateStore::Ready(store) => store.peek(name, look),
            StateStore::Unavailable(reason) => Err(StoreError(reason.clone())),
        }
    }
}

/// The fleet limits of a run, kept in a `Store`.
pub(crate) struct Fleet<S> {
    settings: FleetSettings,
    /// `None` once the store has failed: the run has gone on without it.
    store: Option<S>,
    /// This run, as the breaker knows its probe.
    id: u64,
    notices: Vec<Notice>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl<S: Store> Fleet<S> {
    pub(crate) fn new(settings: FleetSettings, store: S, id: u64) -> Fleet<S> {
        Fleet {
            settings,
            store: Some(store),
            id,
            notices: Vec::new(),
        }
    }

    /// Runs `decide` on the record of `name`; on a store error, fails open (once) and gives
    /// `None`.
    fn transact<T>(
        &mut self,
        name: &str,
        mut decide: impl FnMut(&mut Record, u64) -> T,
    ) -> Option<T> {
        let store = self.store.as_mut()?;
        match store.transact(name, &mut decide) {
            Ok(done) => {
                if done.replaced {
                    self.notices.push(Notice::Replaced {
                        name: name.to_string(),
                    });
                }
                Some(done.value)
            }
            Err(StoreError(error)) => {
                self.store = None;
                self.notices.push(Notice::StateUnavailable { error });
                None
            }
        }
    }

    /// `Store::peek`, failing open as `transact` does.
    fn peek<T>(&mut self, name: &str, mut look: impl FnMut(&Record, u64) -> T) -> Option<T> {
        let store = self.store.as_mut()?;
        match store.peek(name, &mut look) {
            Ok(value) => Some(value),
            Err(StoreError(error)) => {
                self.store = None;
                self.notices.push(Notice::StateUnavailable { error });
                None
            }
        }
    }

    fn breaker_open(&mut self, next_probe_at: u64, now: u64) -> Duration {
        Duration::from_millis(next_probe_at.saturating_sub(now))
    }
}

impl<S: Store> Gate for Fleet<S> {
    fn admit(&mut self, attempt: u64) -> Admit {
        let id = self.id;
        let lease = ms(self.settings.probe_lease);
        let breaker = self.settings.breaker.clone().map(|(name, _)| name);
        let mut budget = self.settings.budget.clone().filter(|_| attempt == 1);
        // The breaker first. Closed, as it mostly is, it is read without its lock; open, the
        // decision (whether this attempt is the probe) is taken under it, and a first attempt
        // it lets through earns its share of the budget in the same transaction when both have
        // one name.
        if let Some(name) = &breaker
            && self.peek(name, |record, _| record.breaker.open_until.is_some()) == Some(true)
        {
            let earn = budget.clone().filter(|(budget, _)| budget == name);
            let admitted = self.transact(name, |record, now| {
                let admission = record.breaker.admit(now, id, lease);
                if let (Some((_, policy)), Admission::Closed | Admission::Probe) =
                    (&earn, admission)
                {
                    record.budget.first_attempt(now, policy);
                }
                (admission, now)
            });
            match admitted {
                Some((Admission::Open { next_probe }, now)) => {
                    let next_probe = self.breaker_open(next_probe, now);
                    return Admit::BreakerOpen { next_probe };
                }
                Some((Admission::Probe, _)) => {
                    self.notices.push(Notice::Probe { name: name.clone() })
                }
                Some((Admission::Closed, _)) | None => {}
            }
            if earn.is_some() {
                budget = None;
            }
        }
        if let Some((name, policy)) = budget {
            self.transact(&name, |record, now| {
                record.budget.first_attempt(now, &policy)
            });
        }
        Admit::Go
    }

    fn record(&mut self, outcome: Outcome) {
        let id = self.id;
        let Some((name, policy)) = self.settings.breaker.clone() else {
            return;
        };
        let changed = self.transact(&name, |record, now| {
            (record.breaker.record(now, id, outcome, &policy), now)
        });
        if let Some((Some(transition), now)) = changed {
            let next_probe = match transition {
                Transition::Opened { until } | Transition::Reopened { until } => {
                    Some(self.breaker_open(until, now))
                }
                Transition::Closed => None,
            };
            self.notices.push(Notice::Breaker {
                name,
                transition,
                next_probe,
            });
        }
    }

    fn go_on(&mut self) -> GoOn {
        if let Some((name, _)) = self.settings.breaker.clone() {
            let open = self.peek(&name, |record, now| match record.breaker.state(now) {
                BreakerState::Open => record.breaker.open_until.map(|until| (until, now)),
                BreakerState::Closed | BreakerState::HalfOpen => None,
            });
            if let Some(Some((until, now))) = open {
                let next_probe = self.breaker_open(until, now);
                return GoOn::BreakerOpen { next_probe };
            }
        }
        if let Some((name, policy)) = self.settings.budget.clone() {
            let paid = self.transact(&name, |record, now| {
                let spent = record.budget.try_retry(now, &policy);
                (spent, record.budget.view(now, &policy).balance)
            });
            if let Some((spent, balance)) = paid {
                self.notices.push(Notice::Budget {
                    name,
                    spent,
                    balance,
                });
                if !spent {
                    return GoOn::BudgetSpent;
                }
            }
        }
        GoOn::Yes
    }

    fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }
}

/// What `--show-state` tells of a budget.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BudgetState {
    pub name: String,
    pub balance: f64,
    pub firsts: u64,
    pub retries: u64,
    pub window: Duration,
}

/// What `--show-state` tells of a breaker.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BreakerShown {
    pub name: String,
    /// `"closed"`, `"open"` or `"half-open"`.
    pub state: &'static str,
    pub failures: u64,
    /// While open: how long until the next probe may go.
    pub next_probe: Option<Duration>,
}

/// The state of the budget and breaker that `settings` names, read (and left as it was, but
/// for what time has expired).
pub(crate) fn show<S: Store>(
    settings: &FleetSettings,
    store: &mut S,
) -> Result<(Option<BudgetState>, Option<BreakerShown>), StoreError> {
    let budget = match &settings.budget {
        Some((name, policy)) => {
            let view = store.transact(name, &mut |record, now| record.budget.view(now, policy))?;
            Some(BudgetState {
                name: name.clone(),
                balance: view.value.balance,
                firsts: view.value.firsts,
                retries: view.value.retries,
                window: policy.window,
            })
        }
        None => None,
    };
    let breaker = match &settings.breaker {
        Some((name, _)) => {
            let seen = store.transact(name, &mut |record, now| (record.breaker.clone(), now))?;
            let (breaker, now) = seen.value;
            let state = breaker.state(now);
            Some(BreakerShown {
                name: name.clone(),
                state: match state {
                    BreakerState::Closed => "closed",
                    BreakerState::Open => "open",
                    BreakerState::HalfOpen => "half-open",
                },
                failures: breaker.failures,
                next_probe: breaker
                    .open_until
                    .map(|until| Duration::from_millis(until.saturating_sub(now))),
            })
        }
        None => None,
    };
    Ok((budget, breaker))
}

/// Resets the budget and breaker that `settings` names: a full budget, a closed breaker.
pub(crate) fn reset<S: Store>(settings: &FleetSettings, store: &mut S) -> Result<(), StoreError> {
    if let Some((name, _)) = &settings.budget {
        store.transact(name, &mut |record, _| {
            record.budget = rules::BudgetRecord::default();
        })?;
    }
    if let Some((name, _)) = &settings.breaker {
        store.transact(name, &mut |record, _| {
            record.breaker = rules::BreakerRecord::default();
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A store in memory with a clock the test sets, that fails when told to.
    #[derive(Default)]
    struct Memory {
        records: BTreeMap<String, Record>,
        now: u64,
        failing: bool,
    }

    impl Store for Memory {
        fn transact<T>(
            &mut self,
            name: &str,
            decide: &mut dyn FnMut(&mut Record, u64) -> T,
        ) -> Result<Transacted<T>, StoreError> {
            if self.failing {
                return Err(StoreError("down".into()));
            }
            let record = self.records.entry(name.to_string()).or_default();
            Ok(Transacted {
                value: decide(record, self.now),
                replaced: false,
            })
        }

        fn peek<T>(
            &mut self,
            name: &str,
            look: &mut dyn FnMut(&Record, u64) -> T,
        ) -> Result<T, StoreError> {
            if self.failing {
                return Err(StoreError("down".into()));
            }
            let record = self.records.get(name).cloned().unwrap_or_default();
            Ok(look(&record, self.now))
        }
    }

    fn settings() -> FleetSettings {
        FleetSettings {
            budget: Some((
                "api".into(),
                BudgetPolicy {
                    ratio: 0.0,
                    floor: 1,
                    window: Duration::from_secs(60),
                },
            )),
            breaker: Some((
                "api".into(),
                BreakerPolicy {
                    threshold: 2,
                    cooldown: Duration::from_secs(10),
                },
            )),
            probe_lease: Duration::from_secs(10),
        }
    }

    #[test]
    fn the_budget_pays_for_its_floor_then_refuses() {
        let mut fleet = Fleet::new(settings(), Memory::default(), 1);
        assert_eq!(fleet.admit(1), Admit::Go);
        assert_eq!(fleet.go_on(), GoOn::Yes);
        assert_eq!(fleet.go_on(), GoOn::BudgetSpent);
        let notices = fleet.take_notices();
        assert!(matches!(notices[0], Notice::Budget { spent: true, .. }));
        assert!(matches!(notices[1], Notice::Budget { spent: false, .. }));
    }

    #[test]
    fn the_breaker_is_asked_before_the_budget() {
        let mut fleet = Fleet::new(settings(), Memory::default(), 1);
        fleet.record(Outcome::Failure);
        fleet.record(Outcome::Failure);
        assert_eq!(
            fleet.go_on(),
            GoOn::BreakerOpen {
                next_probe: Duration::from_secs(10)
            }
        );
        // The budget was not asked, so it paid for nothing.
        let store = fleet.store.as_mut().unwrap();
        let view = store
            .transact("api", &mut |r, now| {
                r.budget.view(now, &settings().budget.unwrap().1)
            })
            .unwrap();
        assert_eq!(view.value.retries, 0);
        assert_eq!(
            fleet.admit(2),
            Admit::BreakerOpen {
                next_probe: Duration::from_secs(10)
            }
        );
    }

    #[test]
    fn a_failing_store_fails_open_and_says_so_once() {
        let store = Memory {
            failing: true,
            ..Memory::default()
        };
        let mut fleet = Fleet::new(settings(), store, 1);
        assert_eq!(fleet.admit(1), Admit::Go);
        fleet.record(Outcome::Failure);
        assert_eq!(fleet.go_on(), GoOn::Yes);
        assert_eq!(fleet.go_on(), GoOn::Yes);
        let notices = fleet.take_notices();
        assert_eq!(
            notices,
            [Notice::StateUnavailable {
                error: "down".into()
            }]
        );
    }

    #[test]
    fn show_and_reset() {
        let mut store = Memory::default();
        let mut fleet = Fleet::new(settings(), std::mem::take(&mut store), 1);
        fleet.admit(1);
        fleet.go_on();
        fleet.record(Outcome::Failure);
        let mut store = fleet.store.take().unwrap();
        let (budget, breaker) = show(&settings(), &mut store).unwrap();
        let budget = budget.unwrap();
        assert_eq!((budget.firsts, budget.retries), (1, 1));
        assert_eq!(budget.balance, 0.0);
        let breaker = breaker.unwrap();
        assert_eq!((breaker.state, breaker.failures), ("closed", 1));
        reset(&settings(), &mut store).unwrap();
        let (budget, breaker) = show(&settings(), &mut store).unwrap();
        assert_eq!(budget.unwrap().balance, 1.0);
        assert_eq!(breaker.unwrap().failures, 0);
    }
}
