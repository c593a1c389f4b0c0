//! The rules of a retry budget and a circuit breaker, over the shared record of one name.
//!
//! Pure: the time (milliseconds on the store's clock) and each run's own policy are parameters;
//! nothing here reads a file or a clock. Every count saturates, and a clock that steps back is
//! taken in its stride, so no record and no time can make a rule panic.

use std::time::Duration;

/// A budget's window is kept in this many slices, plus the one the clock is in: a window spans
/// between one and 1.1 times its length, so that over any stretch of that length the retries
/// stay within the budget.
pub(crate) const SLICES: u64 = 10;

/// How many times a failed probe doubles the cooldown: up to 16 times the run's own.
pub(crate) const MOST_DOUBLINGS: u32 = 4;

/// A run's budget: `floor` retries per `window` whatever the traffic, and `ratio` more for each
/// first attempt in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetPolicy {
    pub ratio: f64,
    pub floor: u64,
    pub window: Duration,
}

/// A run's breaker: `threshold` retryable failures in a row open it for `cooldown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerPolicy {
    pub threshold: u64,
    pub cooldown: Duration,
}

/// `d` in whole milliseconds, the unit of every time in a record; a duration past `u64::MAX`
/// of them (centuries) is that many.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The counts of one slice of a budget's window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slice {
    /// The slice's number: the time divided by the slice's width.
    pub(crate) index: u64,
    pub(crate) firsts: u64,
    pub(crate) retries: u64,
}

/// A budget's shared counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BudgetRecord {
    /// The width of a slice, in milliseconds: a tenth of the window of the run that wrote it.
    pub(crate) slice_ms: u64,
    /// The slices of the window, oldest first; at most `SLICES + 1`.
    pub(crate) slices: Vec<Slice>,
}

/// What the window of a budget holds now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BudgetView {
    pub(crate) firsts: u64,
    pub(crate) retries: u64,
    pub(crate) balance: f64,
}

impl BudgetRecord {
    /// Brings the record to the time `now` under `policy`, and returns the slice number the
    /// time is in. A window of another width starts the counts over (every run of a name should
    /// have the same settings); so does a clock that stepped back by more than a window, while
    /// a smaller step back counts as no time passing.
    fn align(&mut self, now: u64, policy: &BudgetPolicy) -> u64 {
        let slice_ms = (millis(policy.window) / SLICES).max(1);
        if self.slice_ms != slice_ms {
            *self = BudgetRecord {
                slice_ms,
                slices: Vec::new(),
            };
        }
        let mut index = now / slice_ms;
        if let Some(newest) = self.slices.last().map(|slice| slice.index)
            && index < newest
        {
            if newest - index > SLICES {
                self.slices.clear();
            } else {
                index = newest;
            }
        }
        self.slices
            .retain(|slice| slice.index.saturating_add(SLICES) >= index);
        index
    }

    /// The slice numbered `index`, made if it is not there yet (it is the newest).
    fn slice(&mut self, index: u64) -> &mut Slice {
        if self.slices.last().is_none_or(|slice| slice.index != index) {
            self.slices.push(Slice {
                index,
                ..Slice::default()
            });
        }
        self.slices.last_mut().expect("just made")
    }

    /// The counts in the window at `now`, and the balance they leave under `policy`.
    pub(crate) fn view(&mut self, now: u64, policy: &BudgetPolicy) -> BudgetView {
        self.align(now, policy);
        let (firsts, retries) = self.slices.iter().fold((0u64, 0u64), |(f, r), slice| {
            (
                f.saturating_add(slice.firsts),
                r.saturating_add(slice.retries),
            )
        });
        let balance = policy.floor as f64 + policy.ratio * firsts as f64 - retries as f64;
        BudgetView {
            firsts,
            retries,
            balance,
        }
    }

    /// A run's first attempt: never held back, and it earns `ratio`.
    pub(crate) fn first_attempt(&mut self, now: u64, policy: &BudgetPolicy) {
        let index = self.align(now, policy);
        let slice = self.slice(index);
        slice.firsts = slice.firsts.saturating_add(1);
    }

    /// A retry asks to be paid for: it is, and counted, when the balance is at least 1.
    pub(crate) fn try_retry(&mut self, now: u64, policy: &BudgetPolicy) -> bool {
        if self.view(now, policy).balance < 1.0 {
            return false;
        }
        let index = self.align(now, policy);
        let slice = self.slice(index);
        slice.retries = slice.retries.saturating_add(1);
        true
    }
}

/// The one attempt that may run while a breaker's cooldown is over, and until when its run
/// holds that right (so that a run killed without a word does not hold it for ever).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Probe {
    pub(crate) id: u64,
    pub(crate) until: u64,
}

/// A breaker's shared state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BreakerRecord {
    /// Retryable failures in a row, while closed.
    pub(crate) failures: u64,
    /// When the cooldown ends: `Some` while open (and half-open, once it has passed).
    pub(crate) open_until: Option<u64>,
    /// Probes that failed in a row since it opened: the cooldown doubles for each.
    pub(crate) failed_probes: u32,
    pub(crate) probe: Option<Probe>,
}

/// Whether an attempt may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Closed: go.
    Closed,
    /// The cooldown is over and this attempt is the one probe.
    Probe,
    /// Open, or a probe is running: no attempt starts. The next probe may go at this time.
    Open { next_probe: u64 },
}

/// What an ended attempt tells a breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    /// A retryable failure.
    Failure,
    /// A permanent failure, a command that cannot start, an interrupted attempt: nothing.
    Nothing,
}

/// A change of a breaker's state, for the run to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// The failures in a row reached the threshold: open until this time.
    Opened { until: u64 },
    /// The probe failed: open again, until this time.
    Reopened { until: u64 },
    /// A success closed it.
    Closed,
}

/// The state a breaker is in, for `--show-state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerRecord {
    /// The cooldown after `failed_probes` failed probes, under `policy`.
    fn cooldown(policy: &BreakerPolicy, failed_probes: u32) -> u64 {
        millis(policy.cooldown).saturating_mul(1 << failed_probes.min(MOST_DOUBLINGS))
    }

    pub(crate) fn state(&self, now: u64) -> BreakerState {
        match self.open_until {
            None => BreakerState::Closed,
            Some(until) if now < until => BreakerState::Open,
            Some(_) => BreakerState::HalfOpen,
        }
    }

    /// Whether an attempt of run `id` would be refused at `now`, and if so, when the next probe
    /// may go: while the cooldown runs, and after it while another run's probe holds its lease.
    /// Changes nothing, so that a run deciding whether to wait for another attempt at all can
    /// read it without the lock.
    pub(crate) fn refusal(&self, now: u64, id: u64) -> Option<u64> {
        let until = self.open_until?;
        if now < until {
            return Some(until);
        }
        self.probe
            .filter(|probe| probe.id != id && now < probe.until)
            .map(|probe| probe.until)
    }

    /// An attempt asks to start, at `now`. Once the cooldown is over, the first to ask is the
    /// probe (`id`, holding the right for `lease` milliseconds); the others are answered as if
    /// the breaker were open.
    pub(crate) fn admit(&mut self, now: u64, id: u64, lease: u64) -> Admission {
        if self.open_until.is_none() {
            return Admission::Closed;
        }
        if let Some(next_probe) = self.refusal(now, id) {
            return Admission::Open { next_probe };
        }
        self.probe = Some(Probe {
            id,
            until: now.saturating_add(lease),
        });
        Admission::Probe
    }

    /// Records how an attempt of the run `id` ended, at `now`, under the run's `policy`.
    pub(crate) fn record(
        &mut self,
        now: u64,
        id: u64,
        outcome: Outcome,
        policy: &BreakerPolicy,
    ) -> Option<Transition> {
        let was_probe = self.probe.is_some_and(|probe| probe.id == id);
        match outcome {
            Outcome::Success => {
                let was_open = self.open_until.is_some();
                *self = BreakerRecord::default();
                was_open.then_some(Transition::Closed)
            }
            Outcome::Failure if was_probe => {
                self.failed_probes = self.failed_probes.saturating_add(1).min(MOST_DOUBLINGS);
                let until = now.saturating_add(Self::cooldown(policy, self.failed_probes));
                self.open_until = Some(until);
                self.probe = None;
                Some(Transition::Reopened { until })
            }
            Outcome::Failure if self.open_until.is_none() => {
                self.failures = self.failures.saturating_add(1);
                if self.failures < policy.threshold {
                    return None;
                }
                let until = now.saturating_add(Self::cooldown(policy, 0));
                *self = BreakerRecord {
                    open_until: Some(until),
                    ..BreakerRecord::default()
                };
                Some(Transition::Opened { until })
            }
            // A failure of an attempt that started before the breaker opened: it is open already.
            Outcome::Failure => None,
            Outcome::Nothing => {
                // A probe that ended so says nothing of the service: another may go.
                if was_probe {
                    self.probe = None;
                }
                None
            }
        }
    }
}

/// One decision on the record of a name: what a store runs as one transaction. The file store
/// runs it through `Record::apply`; a store that cannot run Rust runs the same rules its own way,
/// and the same table of cases holds both to them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    /// May an attempt of run `id` start? As the probe, it holds the breaker for `lease`
    /// milliseconds. With `earn`, a first attempt let through earns its share of the budget of
    /// the same name.
    Admit {
        id: u64,
        lease: u64,
        earn: Option<BudgetPolicy>,
    },
    /// A run's first attempt: it earns its share of the budget.
    FirstAttempt(BudgetPolicy),
    /// A retry asks the budget to pay for it.
    Retry(BudgetPolicy),
    /// How an attempt of run `id` ended, for the breaker.
    Record {
        id: u64,
        outcome: Outcome,
        policy: BreakerPolicy,
    },
    /// What the budget's window holds (changes nothing).
    ShowBudget(BudgetPolicy),
    /// The breaker as it is (changes nothing).
    ShowBreaker,
    ResetBudget,
    ResetBreaker,
}

impl Op {
    /// Whether the decision changes nothing, so that the record may be read without its lock.
    pub(crate) fn reads_only(&self) -> bool {
        matches!(self, Op::ShowBudget(_) | Op::ShowBreaker)
    }
}

/// What a decision gave, with the store's time where the caller needs it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    Admitted {
        admission: Admission,
        now: u64,
    },
    Paid {
        spent: bool,
        balance: f64,
    },
    Recorded {
        transition: Option<Transition>,
        now: u64,
    },
    Budget(BudgetView),
    Breaker {
        record: BreakerRecord,
        now: u64,
    },
    Done,
}

/// Everything kept for one name: its budget and its breaker, either of them unused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) budget: BudgetRecord,
    pub(crate) breaker: BreakerRecord,
}

/// The first line of a record in its text form, with the version of the format.
const MAGIC: &str = "retry-state 1";

impl Record {
    /// Takes the decision `op` at the store's time `now`.
    pub(crate) fn apply(&mut self, op: &Op, now: u64) -> Reply {
        match *op {
            Op::Admit { id, lease, earn } => {
                let admission = self.breaker.admit(now, id, lease);
                if let (Some(policy), Admission::Closed | Admission::Probe) = (earn, admission) {
                    self.budget.first_attempt(now, &policy);
                }
                Reply::Admitted { admission, now }
            }
            Op::FirstAttempt(policy) => {
                self.budget.first_attempt(now, &policy);
                Reply::Done
            }
            Op::Retry(policy) => {
                let spent = self.budget.try_retry(now, &policy);
                let balance = self.budget.view(now, &policy).balance;
                Reply::Paid { spent, balance }
            }
            Op::Record {
                id,
                outcome,
                policy,
            } => Reply::Recorded {
                transition: self.breaker.record(now, id, outcome, &policy),
                now,
            },
            Op::ShowBudget(policy) => Reply::Budget(self.budget.view(now, &policy)),
            Op::ShowBreaker => Reply::Breaker {
                record: self.breaker.clone(),
                now,
            },
            Op::ResetBudget => {
                self.budget = BudgetRecord::default();
                Reply::Done
            }
            Op::ResetBreaker => {
                self.breaker = BreakerRecord::default();
                Reply::Done
            }
        }
    }

    /// The record as text: a small, versioned, line-based form.
    pub(crate) fn render(&self) -> String {
        let slices: Vec<String> = self
            .budget
            .slices
            .iter()
            .map(|s| format!(" {}:{}:{}", s.index, s.firsts, s.retries))
            .collect();
        let optional = |value: Option<u64>| value.map_or("-".to_string(), |v| v.to_string());
        let b = &self.breaker;
        format!(
            "{MAGIC}\nbudget {}{}\nbreaker {} {} {} {}\n",
            self.budget.slice_ms,
            slices.concat(),
            b.failures,
            optional(b.open_until),
            b.failed_probes,
            b.probe
                .map_or("-".to_string(), |p| format!("{}:{}", p.id, p.until)),
        )
    }

    /// A record from its text form; `None` when the text is not one (a corrupt file).
    pub(crate) fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut budget = lines.next()?.strip_prefix("budget ")?.split(' ');
        let slice_ms = budget.next()?.parse().ok()?;
        let mut slices = Vec::new();
        for slice in budget {
            let mut parts = slice.split(':');
            let mut number = || parts.next()?.parse::<u64>().ok();
            slices.push(Slice {
                index: number()?,
                firsts: number()?,
                retries: number()?,
            });
        }
        let ordered = slices.windows(2).all(|pair| pair[0].index < pair[1].index);
        if slices.len() as u64 > SLICES + 1 || !ordered {
            return None;
        }
        let fields: Vec<&str> = lines.next()?.strip_prefix("breaker ")?.split(' ').collect();
        let [failures, open_until, failed_probes, probe] = fields.as_slice() else {
            return None;
        };
        let optional = |text: &str| match text {
            "-" => Some(None),
            _ => text.parse().ok().map(Some),
        };
        let probe = match *probe {
            "-" => None,
            text => {
                let (id, until) = text.split_once(':')?;
                Some(Probe {
                    id: id.parse().ok()?,
                    until: until.parse().ok()?,
                })
            }
        };
        if lines.next().is_some() {
            return None;
        }
        Some(Record {
            budget: BudgetRecord { slice_ms, slices },
            breaker: BreakerRecord {
                failures: failures.parse().ok()?,
                open_until: optional(open_until)?,
                failed_probes: failed_probes.parse().ok()?,
                probe,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn budget(ratio: f64, floor: u64, window_ms: u64) -> BudgetPolicy {
        BudgetPolicy {
            ratio,
            floor,
            window: Duration::from_millis(window_ms),
        }
    }

    fn breaker(threshold: u64, cooldown_secs: u64) -> BreakerPolicy {
        BreakerPolicy {
            threshold,
            cooldown: Duration::from_secs(cooldown_secs),
        }
    }

    /// How many of `asked` retries at `now` the budget pays for.
    fn paid(record: &mut BudgetRecord, now: u64, policy: &BudgetPolicy, asked: u64) -> u64 {
        (0..asked).filter(|_| record.try_retry(now, policy)).count() as u64
    }

    #[test]
    fn millis_are_whole_and_saturate() {
        assert_eq!(millis(Duration::from_micros(1999)), 1);
        assert_eq!(millis(Duration::from_secs(60)), 60_000);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn the_floor_alone_pays_for_n_retries_per_window() {
        let policy = budget(0.0, 3, 10_000);
        let mut record = BudgetRecord::default();
        assert_eq!(paid(&mut record, 1_000, &policy, 10), 3);
        // Still within the window: nothing more.
        assert_eq!(paid(&mut record, 9_000, &policy, 10), 0);
        // Past the window and its last slice, the floor is whole again.
        assert_eq!(paid(&mut record, 12_000, &policy, 10), 3);
    }

    #[test]
    fn each_first_attempt_earns_the_ratio() {
        let policy = budget(0.5, 0, 60_000);
        let mut record = BudgetRecord::default();
        for _ in 0..7 {
            record.first_attempt(100, &policy);
        }
        // 0 + 0.5 * 7 = 3.5: three retries, the fourth would leave 0.5 < 1.
        assert_eq!(paid(&mut record, 200, &policy, 10), 3);
        let view = record.view(300, &policy);
        assert_eq!((view.firsts, view.retries), (7, 3));
        assert!((view.balance - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_window_of_another_width_starts_over() {
        let mut record = BudgetRecord::default();
        assert_eq!(paid(&mut record, 0, &budget(0.0, 2, 10_000), 5), 2);
        assert_eq!(paid(&mut record, 0, &budget(0.0, 2, 20_000), 5), 2);
    }

    #[test]
    fn a_clock_that_steps_back_counts_no_time_or_starts_over() {
        let policy = budget(0.0, 2, 10_000);
        let mut record = BudgetRecord::default();
        assert_eq!(paid(&mut record, 100_000, &policy, 5), 2);
        // A little back: still the same window, nothing more.
        assert_eq!(paid(&mut record, 95_000, &policy, 5), 0);
        // Far back: the counts start over.
        assert_eq!(paid(&mut record, 1_000, &policy, 5), 2);
        // The edge, in whole slices: back by a window is still no time passing; by more, the
        // counts start over.
        for (back, paid_again) in [(9_000, 0), (10_000, 0), (10_001, 2)] {
            let mut record = BudgetRecord::default();
            assert_eq!(paid(&mut record, 100_000, &policy, 5), 2);
            assert_eq!(
                paid(&mut record, 100_000 - back, &policy, 5),
                paid_again,
                "{back}"
            );
        }
    }

    #[test]
    fn the_breaker_opens_at_the_threshold_and_a_probe_closes_it() {
        let policy = breaker(3, 60);
        let mut b = BreakerRecord::default();
        assert_eq!(b.record(0, 1, Outcome::Failure, &policy), None);
        assert_eq!(b.record(0, 2, Outcome::Failure, &policy), None);
        assert_eq!(b.admit(0, 3, 1000), Admission::Closed);
        assert_eq!(
            b.record(10, 3, Outcome::Failure, &policy),
            Some(Transition::Opened { until: 60_010 })
        );
        assert_eq!(b.state(10), BreakerState::Open);
        assert_eq!(b.admit(20, 4, 1000), Admission::Open { next_probe: 60_010 });
        assert_eq!(b.state(60_010), BreakerState::HalfOpen);
        assert_eq!(b.admit(60_010, 5, 1000), Admission::Probe);
        // One probe at a time: another run is answered as if open, until the lease ends.
        assert_eq!(
            b.admit(60_020, 6, 1000),
            Admission::Open { next_probe: 61_010 }
        );
        // The probe's own run may ask again (its next attempt).
        assert_eq!(b.admit(60_030, 5, 1000), Admission::Probe);
        assert_eq!(
            b.record(60_500, 5, Outcome::Success, &policy),
            Some(Transition::Closed)
        );
        assert_eq!(b, BreakerRecord::default());
    }

    #[test]
    fn a_failed_probe_doubles_the_cooldown_up_to_sixteen_times() {
        let policy = breaker(1, 1);
        let mut b = BreakerRecord::default();
        b.record(0, 1, Outcome::Failure, &policy);
        assert_eq!(b.open_until, Some(1_000));
        let mut now = 1_000;
        for expected in [2_000, 4_000, 8_000, 16_000, 16_000, 16_000] {
            assert_eq!(b.admit(now, 9, 100), Admission::Probe);
            assert_eq!(
                b.record(now, 9, Outcome::Failure, &policy),
                Some(Transition::Reopened {
                    until: now + expected
                })
            );
            now += expected;
        }
    }

    #[test]
    fn a_dead_probe_is_forgotten_after_its_lease() {
        let policy = breaker(1, 1);
        let mut b = BreakerRecord::default();
        b.record(0, 1, Outcome::Failure, &policy);
        assert_eq!(b.admit(1_000, 2, 500), Admission::Probe);
        // Run 2 dies without a word. Until its lease ends, nobody probes.
        assert_eq!(
            b.admit(1_499, 3, 500),
            Admission::Open { next_probe: 1_500 }
        );
        assert_eq!(b.admit(1_500, 3, 500), Admission::Probe);
    }

    /// Who would be refused, as `admit` refuses, without changing the record.
    #[test]
    fn a_refusal_is_read_without_changing_anything() {
        let policy = breaker(1, 1);
        let mut b = BreakerRecord::default();
        assert_eq!(b.refusal(0, 1), None);
        b.record(0, 1, Outcome::Failure, &policy);
        assert_eq!(b.refusal(999, 1), Some(1_000));
        let before = b.clone();
        assert_eq!(
            b.refusal(1_000, 2),
            None,
            "the cooldown is over: a probe may go"
        );
        assert_eq!(b, before);
        assert_eq!(b.admit(1_000, 2, 500), Admission::Probe);
        assert_eq!(b.refusal(1_200, 3), Some(1_500), "another run's probe runs");
        assert_eq!(b.refusal(1_200, 2), None, "the probe's own run");
        assert_eq!(b.refusal(1_500, 3), None, "its lease is over");
    }

    #[test]
    fn permanent_failures_record_nothing_but_free_the_probe() {
        let policy = breaker(2, 1);
        let mut b = BreakerRecord::default();
        b.record(0, 1, Outcome::Failure, &policy);
        assert_eq!(b.record(0, 1, Outcome::Nothing, &policy), None);
        assert_eq!(b.failures, 1, "nothing recorded");
        b.record(0, 1, Outcome::Failure, &policy);
        assert_eq!(b.admit(1_000, 2, 10_000), Admission::Probe);
        assert_eq!(b.record(1_100, 2, Outcome::Nothing, &policy), None);
        assert_eq!(b.admit(1_200, 3, 10_000), Admission::Probe, "freed");
        // A late failure while open changes nothing.
        let before = b.clone();
        assert_eq!(b.record(1_300, 7, Outcome::Failure, &policy), None);
        assert_eq!(b, before);
    }

    #[test]
    fn records_read_back_and_corrupt_text_is_refused() {
        let record = Record {
            budget: BudgetRecord {
                slice_ms: 6_000,
                slices: vec![
                    Slice {
                        index: 5,
                        firsts: 3,
                        retries: 1,
                    },
                    Slice {
                        index: 7,
                        firsts: 0,
                        retries: 2,
                    },
                ],
            },
            breaker: BreakerRecord {
                failures: 2,
                open_until: Some(99),
                failed_probes: 1,
                probe: Some(Probe { id: 42, until: 100 }),
            },
        };
        assert_eq!(Record::parse(&record.render()), Some(record));
        assert_eq!(
            Record::parse(&Record::default().render()),
            Some(Record::default())
        );
        for corrupt in [
            "",
            "retry-state 2\nbudget 0\nbreaker 0 - 0 -\n",
            "retry-state 1\nbudget x\nbreaker 0 - 0 -\n",
            "retry-state 1\nbudget 0 7:1:1 5:1:1\nbreaker 0 - 0 -\n",
            "retry-state 1\nbudget 0\nbreaker 0 - 0\n",
            "retry-state 1\nbudget 0\nbreaker 0 - 0 -\nmore\n",
            "retry-state 1\nbudget 0 1:2\nbreaker 0 - 0 -\n",
            "retry-state 1\nbudget 0 5:1:1 5:1:1\nbreaker 0 - 0 -\n",
        ] {
            assert_eq!(Record::parse(corrupt), None, "{corrupt:?}");
        }
        // At most the slices of a window and the one the clock is in.
        let with_slices = |n: u64| {
            let slices: String = (0..n).map(|i| format!(" {i}:1:0")).collect();
            format!("retry-state 1\nbudget 100{slices}\nbreaker 0 - 0 -\n")
        };
        for n in [0, 1, SLICES, SLICES + 1] {
            let record = Record::parse(&with_slices(n)).expect("a record");
            assert_eq!(record.budget.slices.len() as u64, n);
        }
        assert_eq!(Record::parse(&with_slices(SLICES + 2)), None);
    }

    /// Only the decisions that change nothing may be taken without the lock.
    #[test]
    fn only_the_views_read_only() {
        let budget = budget(0.1, 10, 60_000);
        let breaker = breaker(5, 60);
        let changing = [
            Op::Admit {
                id: 1,
                lease: 1,
                earn: None,
            },
            Op::FirstAttempt(budget),
            Op::Retry(budget),
            Op::Record {
                id: 1,
                outcome: Outcome::Nothing,
                policy: breaker,
            },
            Op::ResetBudget,
            Op::ResetBreaker,
        ];
        assert!(changing.iter().all(|op| !op.reads_only()));
        assert!(Op::ShowBudget(budget).reads_only() && Op::ShowBreaker.reads_only());
    }

    proptest! {
        /// A retry is paid for exactly when the balance is at least 1, and then the retries in
        /// the window stay within the floor plus the ratio times its first attempts, whatever
        /// the times asked.
        #[test]
        fn the_budget_never_pays_for_more_than_it_has(
            events in proptest::collection::vec((0u64..200_000, any::<bool>()), 1..300),
            ratio in 0.0f64..=1.0,
            floor in 1u64..20,
            window_ms in 1u64..100_000,
        ) {
            let policy = budget(ratio, floor, window_ms);
            let mut record = BudgetRecord::default();
            let mut now = 0;
            for (step, first) in events {
                now += step % (window_ms + 1);
                if first {
                    record.first_attempt(now, &policy);
                } else {
                    let before = record.view(now, &policy);
                    let paid = record.try_retry(now, &policy);
                    prop_assert_eq!(paid, before.balance >= 1.0);
                    if paid {
                        // Paid for: the window's retries stay within what it earned.
                        let view = record.view(now, &policy);
                        prop_assert!(view.retries as f64 <= floor as f64 + ratio * view.firsts as f64 + 1e-6);
                    }
                }
                prop_assert!(record.slices.len() as u64 <= SLICES + 1);
            }
        }

        /// No time, clock step, policy or record makes a rule panic or overflow.
        #[test]
        fn any_time_and_policy_is_safe(
            times in proptest::collection::vec(any::<u64>(), 1..40),
            window_ms in any::<u64>(),
            cooldown_ms in any::<u64>(),
            threshold in 1u64..5,
        ) {
            let policy = budget(1.0, u64::MAX, window_ms);
            let breaker = BreakerPolicy { threshold, cooldown: Duration::from_millis(cooldown_ms) };
            let mut record = Record::default();
            for (i, now) in times.into_iter().enumerate() {
                record.budget.first_attempt(now, &policy);
                let _ = record.budget.try_retry(now, &policy);
                let _ = record.budget.view(now, &policy);
                let id = i as u64 % 3;
                let _ = record.breaker.admit(now, id, u64::MAX);
                let outcome = [Outcome::Failure, Outcome::Success, Outcome::Nothing][i % 3];
                let _ = record.breaker.record(now, id, outcome, &breaker);
                prop_assert_eq!(Record::parse(&record.render()), Some(record.clone()));
            }
        }
    }
}
