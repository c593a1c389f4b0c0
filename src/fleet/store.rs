//! What a store of budgets and breakers is to the fleet: one transaction per decision on a
//! name's record (`Store`), what it gave, and why it could not. The table of cases every store
//! must pass lives here too, for each store's tests.

use crate::fleet::rules::{Op, Reply};

/// Why a store could not do a transaction: the run fails open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoreError(pub String);

/// Keeps the record of each name and takes each decision on it as one transaction, atomic with
/// respect to every other run, on the store's own clock.
pub(crate) trait Store {
    /// Takes the decision `op` on the record of `name` (a fresh one if there is none, or if it
    /// was corrupt: then `replaced` says so). A decision that changes nothing may read the
    /// record as some run last stored it, without waiting for its lock.
    fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError>;
}

/// What a decision gave, and whether the record it found was corrupt (and replaced, but by a
/// look at the state, which changes nothing).
pub(crate) struct Applied {
    pub(crate) reply: Reply,
    pub(crate) replaced: bool,
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::fleet::rules::{
        Admission, BreakerPolicy, BreakerRecord, BudgetPolicy, Outcome, Record, Transition,
    };

    /// The table of cases every store must agree on, on the store's own clock: the budget's
    /// exact counts and window, every breaker transition, the single probe, a dead probe's
    /// lease. A step that must come before a time passes is given a minute, and a step that
    /// must come after it first sleeps past it (a late step only passes it further), so no
    /// answer depends on how fast a loaded machine gets from one step to the next; a doubled
    /// cooldown is read off the store's reply, on its clock.
    /// Returns how many steps ran, so a caller sees the table was walked.
    pub(crate) fn scenarios<S: Store>(store: &mut S) -> usize {
        const LONG: Duration = Duration::from_secs(60);
        const SHORT: Duration = Duration::from_millis(100);
        let floor = |floor, ratio| BudgetPolicy {
            ratio,
            floor,
            window: LONG,
        };
        let breaker = |cooldown| BreakerPolicy {
            threshold: 2,
            cooldown,
        };
        let failure = |id, cooldown| Op::Record {
            id,
            outcome: Outcome::Failure,
            policy: breaker(cooldown),
        };
        let success = |id| Op::Record {
            id,
            outcome: Outcome::Success,
            policy: breaker(SHORT),
        };
        let admit = |id, lease: Duration| Op::Admit {
            id,
            lease: lease.as_millis() as u64,
            earn: None,
        };
        let past = |time: Duration| std::thread::sleep(time + Duration::from_millis(15));
        let mut apply = |name: &str, op: Op| store.apply(name, &op).expect("the store").reply;
        let paid = |reply: Reply| match reply {
            Reply::Paid { spent, .. } => spent,
            other => panic!("{other:?}"),
        };
        let kind = |reply: Reply| match reply {
            Reply::Admitted { admission, .. } => match admission {
                Admission::Closed => "closed",
                Admission::Probe => "probe",
                Admission::Open { .. } => "open",
            },
            Reply::Recorded { transition, .. } => match transition {
                None => "-",
                Some(Transition::Opened { .. }) => "opened",
                Some(Transition::Reopened { .. }) => "reopened",
                Some(Transition::Closed) => "closed",
            },
            other => panic!("{other:?}"),
        };
        let mut steps = 0;
        let mut check = |ok: bool, what: &str| {
            steps += 1;
            assert!(ok, "step {steps}: {what}");
        };
        // The floor alone: two retries, then none; a first attempt is always counted.
        apply("floor", Op::FirstAttempt(floor(2, 0.0)));
        check(
            paid(apply("floor", Op::Retry(floor(2, 0.0)))),
            "first retry paid",
        );
        check(
            paid(apply("floor", Op::Retry(floor(2, 0.0)))),
            "second retry paid",
        );
        check(
            !paid(apply("floor", Op::Retry(floor(2, 0.0)))),
            "third retry refused",
        );
        let shown = apply("floor", Op::ShowBudget(floor(2, 0.0)));
        check(
            matches!(shown, Reply::Budget(view) if view.firsts == 1 && view.retries == 2),
            "the window holds 1 first attempt and 2 retries",
        );
        // The ratio: 1 + 0.5 x 4 = 3 retries.
        for _ in 0..4 {
            apply("ratio", Op::FirstAttempt(floor(1, 0.5)));
        }
        let paid_count = (0..5)
            .filter(|_| paid(apply("ratio", Op::Retry(floor(1, 0.5)))))
            .count();
        check(paid_count == 3, "three retries for 1 + 0.5 x 4");
        // The breaker: opens at the threshold and holds for its cooldown.
        check(
            kind(apply("b", admit(1, LONG))) == "closed",
            "closed at first",
        );
        check(kind(apply("b", failure(1, LONG))) == "-", "one failure");
        check(
            kind(apply("b", failure(2, LONG))) == "opened",
            "opens at the threshold",
        );
        check(
            kind(apply("b", admit(3, LONG))) == "open",
            "no attempt while open",
        );
        // One probe after the cooldown, alone while its lease runs; a failed probe opens it
        // again for twice the cooldown, a successful one closes it.
        apply("p", failure(1, SHORT));
        apply("p", failure(1, SHORT));
        past(SHORT);
        check(
            kind(apply("p", admit(4, LONG))) == "probe",
            "the first to ask probes",
        );
        check(
            kind(apply("p", admit(5, LONG))) == "open",
            "one probe at a time",
        );
        let refusal = |reply: Reply, id| match reply {
            Reply::Breaker { record, now } => record.refusal(now, id),
            other => panic!("{other:?}"),
        };
        check(
            refusal(apply("p", Op::ShowBreaker), 5).is_some(),
            "the record read back refuses another run while the probe runs",
        );
        check(
            refusal(apply("p", Op::ShowBreaker), 4).is_none(),
            "and not the probe's own run",
        );
        let reopened = apply("p", failure(4, SHORT));
        check(
            matches!(reopened, Reply::Recorded { transition: Some(Transition::Reopened { until }), now }
                if until == now + 2 * SHORT.as_millis() as u64),
            "a failed probe reopens for twice the cooldown",
        );
        past(2 * SHORT);
        check(
            kind(apply("p", admit(6, LONG))) == "probe",
            "a probe again after twice the cooldown",
        );
        check(
            kind(apply("p", success(6))) == "closed",
            "a good probe closes",
        );
        check(
            matches!(apply("p", Op::ShowBreaker), Reply::Breaker { record, .. } if record == BreakerRecord::default()),
            "closed and clear",
        );
        apply("reopened", failure(1, SHORT));
        apply("reopened", failure(1, SHORT));
        past(SHORT);
        apply("reopened", admit(1, LONG));
        apply("reopened", failure(1, LONG));
        check(
            kind(apply("reopened", admit(2, LONG))) == "open",
            "open again after a failed probe",
        );
        // Reset: a full budget.
        apply("floor", Op::ResetBudget);
        check(
            paid(apply("floor", Op::Retry(floor(2, 0.0)))),
            "whole after a reset",
        );
        // The window: spent within it, whole again once it (and its last slice) has passed.
        let window = |window| BudgetPolicy {
            ratio: 0.0,
            floor: 1,
            window,
        };
        check(
            paid(apply("window", Op::Retry(window(LONG)))),
            "the floor of the window",
        );
        check(
            !paid(apply("window", Op::Retry(window(LONG)))),
            "spent within the window",
        );
        let short = Duration::from_millis(300);
        check(
            paid(apply("short", Op::Retry(window(short)))),
            "the floor of a short window",
        );
        past(short + short / 10);
        check(
            paid(apply("short", Op::Retry(window(short)))),
            "whole once the window passed",
        );
        // A probe whose run died holds the breaker only for its lease.
        for name in ["held", "lease"] {
            apply(name, failure(1, SHORT));
            apply(name, failure(1, SHORT));
        }
        past(SHORT);
        check(
            kind(apply("held", admit(7, LONG))) == "probe",
            "a probe, that then dies",
        );
        check(
            kind(apply("held", admit(8, LONG))) == "open",
            "held while its lease runs",
        );
        check(
            kind(apply("lease", admit(7, SHORT))) == "probe",
            "a probe with a short lease, that then dies",
        );
        past(SHORT);
        check(
            kind(apply("lease", admit(8, LONG))) == "probe",
            "forgotten after its lease",
        );
        steps
    }

    #[test]
    fn the_rules_in_memory_pass_the_table_of_cases() {
        /// The rules alone, on the real clock.
        struct Clocked(BTreeMap<String, Record>);
        impl Store for Clocked {
            fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as u64;
                let record = self.0.entry(name.to_string()).or_default();
                Ok(Applied {
                    reply: record.apply(op, now),
                    replaced: false,
                })
            }
        }
        assert_eq!(scenarios(&mut Clocked(BTreeMap::new())), 27);
    }
}
