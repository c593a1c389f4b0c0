//! Fleet limits: a retry budget and a circuit breaker shared by every run that names them.
//!
//! `rules` holds what a budget and a breaker decide, pure; a `Store` keeps the record of each
//! name and runs each decision as one transaction (load, decide, store); `Fleet` is what the
//! driver asks, through `Gate`, before an attempt, after it, and before a retry. A store that
//! fails is never a reason to stop: the run goes on as if it named no budget and no breaker, and
//! says so once (fail open). What is to be said comes back as `Notice`s, which the driver
//! hands to the logger.

pub(crate) mod file;
mod location;
#[cfg(feature = "redis")]
pub(crate) mod redis;
pub(crate) mod rules;
mod store;

use std::path::PathBuf;
use std::time::Duration;

use crate::dirs::xdg_base;
use file::{FileStore, OpenError};
pub(crate) use location::parse as parse_state;
pub(crate) use location::{STATE_VARIABLE, StateLocation};
#[cfg(feature = "redis")]
use redis::RedisStore;
use rules::{Admission, BreakerRecord, BreakerState, millis};
pub(crate) use rules::{BreakerPolicy, BudgetPolicy};
pub(crate) use rules::{Op, Reply};
pub(crate) use rules::{Outcome, Transition};
pub(crate) use store::{Applied, Store, StoreError};

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
    Directory(file::FileStore),
    #[cfg(feature = "redis")]
    Redis(redis::RedisStore),
    Unavailable(String),
}

impl Store for StateStore {
    fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
        match self {
            StateStore::Directory(store) => store.apply(name, op),
            #[cfg(feature = "redis")]
            StateStore::Redis(store) => store.apply(name, op),
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
    /// The names whose record was said not to parse: once for a record, whether a look or a
    /// decision found it.
    said_corrupt: Vec<String>,
}

impl<S: Store> Fleet<S> {
    pub(crate) fn new(settings: FleetSettings, store: S, id: u64) -> Fleet<S> {
        Fleet {
            settings,
            store: Some(store),
            id,
            notices: Vec::new(),
            said_corrupt: Vec::new(),
        }
    }

    /// Takes the decision `op` on the record of `name`; on a store error, fails open (once)
    /// and gives `None`.
    fn apply(&mut self, name: &str, op: Op) -> Option<Reply> {
        let store = self.store.as_mut()?;
        match store.apply(name, &op) {
            Ok(applied) => {
                if applied.replaced && !self.said_corrupt.iter().any(|said| said == name) {
                    self.said_corrupt.push(name.to_string());
                    self.notices.push(Notice::Replaced {
                        name: name.to_string(),
                    });
                }
                Some(applied.reply)
            }
            Err(StoreError(error)) => {
                self.store = None;
                self.notices.push(Notice::StateUnavailable { error });
                None
            }
        }
    }

    /// The breaker named `name` as it is, and the store's time.
    fn breaker(&mut self, name: &str) -> Option<(BreakerRecord, u64)> {
        match self.apply(name, Op::ShowBreaker)? {
            Reply::Breaker { record, now } => Some((record, now)),
            _ => None,
        }
    }
}

fn until(at: u64, now: u64) -> Duration {
    Duration::from_millis(at.saturating_sub(now))
}

impl<S: Store> Gate for Fleet<S> {
    fn admit(&mut self, attempt: u64) -> Admit {
        let id = self.id;
        let lease = millis(self.settings.probe_lease);
        let breaker = self.settings.breaker.clone().map(|(name, _)| name);
        let mut budget = self.settings.budget.clone().filter(|_| attempt == 1);
        // The breaker first. Closed, as it mostly is, it is read without its lock; open, the
        // decision (whether this attempt is the probe) is taken under it, and a first attempt
        // it lets through earns its share of the budget in the same decision when both have
        // one name.
        if let Some(name) = &breaker
            && self
                .breaker(name)
                .is_some_and(|(record, _)| record.open_until.is_some())
        {
            let earn = budget
                .clone()
                .filter(|(budget, _)| budget == name)
                .map(|(_, policy)| policy);
            match self.apply(name, Op::Admit { id, lease, earn }) {
                Some(Reply::Admitted {
                    admission: Admission::Open { next_probe },
                    now,
                }) => {
                    return Admit::BreakerOpen {
                        next_probe: until(next_probe, now),
                    };
                }
                Some(Reply::Admitted {
                    admission: Admission::Probe,
                    ..
                }) => self.notices.push(Notice::Probe { name: name.clone() }),
                _ => {}
            }
            if earn.is_some() {
                budget = None;
            }
        }
        if let Some((name, policy)) = budget {
            self.apply(&name, Op::FirstAttempt(policy));
        }
        Admit::Go
    }

    fn record(&mut self, outcome: Outcome) {
        let id = self.id;
        let Some((name, policy)) = self.settings.breaker.clone() else {
            return;
        };
        let op = Op::Record {
            id,
            outcome,
            policy,
        };
        if let Some(Reply::Recorded {
            transition: Some(transition),
            now,
        }) = self.apply(&name, op)
        {
            let next_probe = match transition {
                Transition::Opened { until: at } | Transition::Reopened { until: at } => {
                    Some(until(at, now))
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
        // Refused as the next attempt would be (open, or another run's probe running), the run
        // ends now rather than wait for a refusal, and its budget pays for nothing.
        if let Some((name, _)) = self.settings.breaker.clone()
            && let Some((record, now)) = self.breaker(&name)
            && let Some(at) = record.refusal(now, self.id)
        {
            return GoOn::BreakerOpen {
                next_probe: until(at, now),
            };
        }
        if let Some((name, policy)) = self.settings.budget.clone()
            && let Some(Reply::Paid { spent, balance }) = self.apply(&name, Op::Retry(policy))
        {
            self.notices.push(Notice::Budget {
                name,
                spent,
                balance,
            });
            if !spent {
                return GoOn::BudgetSpent;
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

/// The state of the budget and breaker that `settings` names, read (and changed in nothing).
pub(crate) fn show<S: Store>(
    settings: &FleetSettings,
    store: &mut S,
) -> Result<(Option<BudgetState>, Option<BreakerShown>), StoreError> {
    // A record that does not parse is said, never shown as the fresh state a run makes of it.
    let look = |store: &mut S, name: &str, op: &Op| {
        let applied = store.apply(name, op)?;
        if applied.replaced {
            return Err(StoreError(format!(
                "the record of '{name}' does not parse; the next run that uses it replaces it with a fresh state"
            )));
        }
        Ok(applied.reply)
    };
    let budget = match &settings.budget {
        Some((name, policy)) => match look(store, name, &Op::ShowBudget(*policy))? {
            Reply::Budget(view) => Some(BudgetState {
                name: name.clone(),
                balance: view.balance,
                firsts: view.firsts,
                retries: view.retries,
                window: policy.window,
            }),
            _ => None,
        },
        None => None,
    };
    let breaker = match &settings.breaker {
        Some((name, _)) => match look(store, name, &Op::ShowBreaker)? {
            Reply::Breaker { record, now } => Some(BreakerShown {
                name: name.clone(),
                state: match record.state(now) {
                    BreakerState::Closed => "closed",
                    BreakerState::Open => "open",
                    BreakerState::HalfOpen => "half-open",
                },
                failures: record.failures,
                next_probe: record.open_until.map(|at| until(at, now)),
            }),
            _ => None,
        },
        None => None,
    };
    Ok((budget, breaker))
}

/// Resets the budget and breaker that `settings` names: a full budget, a closed breaker.
pub(crate) fn reset<S: Store>(settings: &FleetSettings, store: &mut S) -> Result<(), StoreError> {
    if let Some((name, _)) = &settings.budget {
        store.apply(name, &Op::ResetBudget)?;
    }
    if let Some((name, _)) = &settings.breaker {
        store.apply(name, &Op::ResetBreaker)?;
    }
    Ok(())
}

/// The store of the budget and breaker the run names (`None` when it names neither), or the
/// line that says why the state may not be used (misuse). A state that cannot be used for any
/// other reason is a store that fails open.
pub(crate) fn open(
    fleet: &FleetSettings,
    state: Option<&StateLocation>,
) -> Result<Option<StateStore>, String> {
    if !fleet.any() {
        return Ok(None);
    }
    let location = match state {
        Some(location) => Some(location.clone()),
        None => default_state_dir().map(StateLocation::Directory),
    };
    let names = fleet.names();
    let opened = match location {
        Some(StateLocation::Directory(dir)) => {
            FileStore::open(&dir, &names).map(StateStore::Directory)
        }
        Some(StateLocation::Redis(url)) => open_redis(&url),
        None => Err(OpenError::Unavailable(
            "no state directory: set $XDG_STATE_HOME or $HOME, or give --state".into(),
        )),
    };
    match opened {
        Ok(store) => Ok(Some(store)),
        Err(OpenError::Misuse(line)) => Err(line),
        Err(OpenError::Unavailable(reason)) => Ok(Some(StateStore::Unavailable(reason))),
    }
}

#[cfg(feature = "redis")]
fn open_redis(url: &str) -> Result<StateStore, OpenError> {
    RedisStore::open(url)
        .map(StateStore::Redis)
        .map_err(OpenError::Unavailable)
}

/// A build without Redis (`--no-default-features`) cannot keep the state there: said as misuse,
/// since no run of this binary could, rather than failed open as an outage would be.
#[cfg(not(feature = "redis"))]
fn open_redis(_: &str) -> Result<StateStore, OpenError> {
    Err(OpenError::Misuse(
        "--state: this retry was built without Redis (the cargo feature `redis`); give a \
         directory, or use a build with it"
            .to_string(),
    ))
}

/// `$XDG_STATE_HOME/retry`, else `~/.local/state/retry`, as `xdg_base` reads them.
fn default_state_dir() -> Option<PathBuf> {
    Some(xdg_base("XDG_STATE_HOME", ".local/state")?.join("retry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without the `redis` feature refuses a Redis URL as misuse, naming the feature.
    #[cfg(not(feature = "redis"))]
    #[test]
    fn a_redis_url_in_a_build_without_redis_is_misuse() {
        let fleet = FleetSettings {
            breaker: Some((
                "b".into(),
                BreakerPolicy {
                    threshold: 5,
                    cooldown: Duration::from_secs(60),
                },
            )),
            ..FleetSettings::default()
        };
        let url = StateLocation::Redis("redis://localhost:6379".into());
        match open(&fleet, Some(&url)) {
            Err(line) => assert!(line.contains("built without Redis"), "{line}"),
            Ok(_) => panic!("a Redis URL was taken"),
        }
    }
    use crate::fleet::rules::Record;
    use std::collections::BTreeMap;

    /// A store in memory with a clock the test sets, that fails when told to.
    #[derive(Default)]
    struct Memory {
        records: BTreeMap<String, Record>,
        now: u64,
        failing: bool,
    }

    impl Store for Memory {
        fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
            if self.failing {
                return Err(StoreError("down".into()));
            }
            let record = self.records.entry(name.to_string()).or_default();
            Ok(Applied {
                reply: record.apply(op, self.now),
                replaced: false,
            })
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
        let policy = settings().budget.unwrap().1;
        let shown = store.apply("api", &Op::ShowBudget(policy)).unwrap().reply;
        assert!(matches!(shown, Reply::Budget(view) if view.retries == 0));
        assert_eq!(
            fleet.admit(2),
            Admit::BreakerOpen {
                next_probe: Duration::from_secs(10)
            }
        );
    }

    /// A run whose attempt failed while another run's probe runs is refused at once, as its
    /// next attempt would be, and its budget pays for nothing; the probe's own run is not.
    #[test]
    fn while_another_run_probes_a_run_ends_without_paying() {
        let mut opener = Fleet::new(settings(), Memory::default(), 1);
        opener.record(Outcome::Failure);
        opener.record(Outcome::Failure);
        let mut store = opener.store.take().unwrap();
        store.now = 10_000;
        let mut prober = Fleet::new(settings(), store, 2);
        assert_eq!(prober.admit(2), Admit::Go);
        assert_eq!(
            prober.take_notices(),
            [Notice::Probe { name: "api".into() }]
        );
        let mut waiting = Fleet::new(settings(), prober.store.take().unwrap(), 3);
        assert_eq!(
            waiting.go_on(),
            GoOn::BreakerOpen {
                next_probe: Duration::from_secs(10)
            }
        );
        let policy = settings().budget.unwrap().1;
        let store = waiting.store.as_mut().unwrap();
        let shown = store.apply("api", &Op::ShowBudget(policy)).unwrap().reply;
        assert!(matches!(shown, Reply::Budget(view) if view.retries == 0));
        let mut prober = Fleet::new(settings(), waiting.store.take().unwrap(), 2);
        assert_eq!(prober.go_on(), GoOn::Yes);
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

    #[test]
    fn the_file_store_passes_the_table_of_cases() {
        let dir = tempfile::tempdir().unwrap();
        let mut store =
            file::FileStore::open(&dir.path().join("state"), &["floor", "ratio", "b"]).unwrap();
        assert_eq!(store::tests::scenarios(&mut store), 27);
    }
}
