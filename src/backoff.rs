//! The delay schedule: nominal delays per backoff kind, the cap, and jitter.
//!
//! Pure arithmetic over `Duration`s and a caller-supplied random generator; no clock, no sleep,
//! no process. Every computation saturates at `max`, so no attempt number, base or multiplier a
//! user can type overflows or panics.

use std::time::Duration;

use crate::draws::Draws;

/// How the nominal delay grows from one retry to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backoff {
    /// base * multiplier^(n-1)
    Exponential,
    /// base, every time
    Constant,
    /// base * n
    Linear,
    /// base * fib(n): 1, 1, 2, 3, 5, ...
    Fibonacci,
    /// IEEE 802.3 truncated binary exponential backoff: r * base, r in [0, 2^min(n,10) - 1]
    Ethernet,
}

impl Backoff {
    pub fn name(self) -> &'static str {
        match self {
            Backoff::Exponential => "exponential",
            Backoff::Constant => "constant",
            Backoff::Linear => "linear",
            Backoff::Fibonacci => "fibonacci",
            Backoff::Ethernet => "ethernet",
        }
    }
}

/// How a nominal delay is randomised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    None,
    /// uniform in [0, d]
    Full,
    /// d/2 + uniform in [0, d/2]
    Equal,
    /// min(max, uniform in [base, 3 * previous delay])
    Decorrelated,
    /// d * (1 + uniform in [-f, f])
    Factor(f64),
    /// d + uniform in [0, a]
    Addend(Duration),
}

/// Attempts `ethernet` makes when no attempt limit is given, as in IEEE 802.3.
pub const ETHERNET_ATTEMPTS: u64 = 16;

/// The exponent cap of `ethernet`: past ten collisions the range stops growing.
const ETHERNET_MAX_EXPONENT: u64 = 10;

#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub backoff: Backoff,
    pub jitter: Jitter,
    pub base: Duration,
    pub max: Duration,
    pub multiplier: f64,
    /// The delays given outright (`--delays`): retry n waits entry n, and the last repeats.
    /// When not empty, it replaces `backoff`, `base` and `multiplier`.
    pub list: Vec<Duration>,
}

impl Schedule {
    /// The nominal delay d(n) before retry `n` (1-based), capped at `max`. For `ethernet`, the
    /// top of its random range.
    pub fn nominal(&self, n: u64) -> Duration {
        let n = n.max(1);
        if let Some(last) = self.list.last() {
            let entry = usize::try_from(n - 1).map_or(last, |i| self.list.get(i).unwrap_or(last));
            return (*entry).min(self.max);
        }
        let max = nanos(self.max);
        let base = nanos(self.base);
        let uncapped = match self.backoff {
            Backoff::Constant => base,
            Backoff::Linear => base.saturating_mul(u128::from(n)),
            Backoff::Exponential => exponential(base, self.multiplier, n - 1, max),
            Backoff::Fibonacci => fibonacci_times(base, n, max),
            Backoff::Ethernet => base.saturating_mul(ethernet_slots(n)),
        };
        duration(uncapped.min(max))
    }

    /// The least and the most retry `n` can wait, jitter included.
    pub fn range(&self, n: u64) -> (Duration, Duration) {
        let d = self.nominal(n);
        if self.is_ethernet() {
            return (Duration::ZERO, d);
        }
        match self.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (Duration::ZERO, d),
            Jitter::Equal => (d / 2, d),
            Jitter::Factor(f) => (scale(d, 1.0 - f), scale(d, 1.0 + f).min(self.max)),
            Jitter::Addend(a) => (d, d.saturating_add(a).min(self.max)),
            Jitter::Decorrelated => {
                let low = self.base.min(self.max);
                let mut high = low;
                // The top of the range triples per retry until it reaches max (or stays at
                // zero): at most ~60 steps from 1ns, so a large n costs nothing.
                for _ in 0..n {
                    if high >= self.max || high.is_zero() {
                        break;
                    }
                    high = self.decorrelated_top(high);
                }
                (low, high)
            }
        }
    }

    /// Whether the delays are `ethernet`'s random slots, which ignore the jitter.
    pub fn is_ethernet(&self) -> bool {
        self.backoff == Backoff::Ethernet && self.list.is_empty()
    }

    fn decorrelated_top(&self, previous: Duration) -> Duration {
        duration(nanos(previous).saturating_mul(3).min(nanos(self.max)))
    }
}

/// Draws the actual delays of one run, in order: the splay, then one delay per retry.
pub struct Delays {
    schedule: Schedule,
    draws: Draws,
    previous: Duration,
}

impl Delays {
    pub fn new(schedule: Schedule, draws: Draws) -> Self {
        Delays {
            previous: schedule.base,
            schedule,
            draws,
        }
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// A uniform wait in [0, limit], drawn from the same generator as the delays: the splay
    /// before a first attempt, or the spread added to a hinted wait.
    pub fn up_to(&mut self, limit: Duration) -> Duration {
        self.uniform(Duration::ZERO, limit)
    }

    /// The wait before retry `n` (1-based).
    pub fn delay(&mut self, n: u64) -> Duration {
        let s = &self.schedule;
        let d = s.nominal(n);
        let (base, max) = (s.base, s.max);
        let wait = if s.is_ethernet() {
            let slots = self.draws.up_to(ethernet_slots(n));
            duration(slots.saturating_mul(nanos(base)).min(nanos(max)))
        } else {
            match s.jitter {
                Jitter::None => d,
                Jitter::Full => self.uniform(Duration::ZERO, d),
                Jitter::Equal => d / 2 + self.uniform(Duration::ZERO, d - d / 2),
                Jitter::Factor(f) => {
                    let (low, high) = s.range(n);
                    let factor = 1.0 + f * self.draws.signed_unit();
                    scale(d, factor).clamp(low, high)
                }
                Jitter::Addend(a) => d.saturating_add(self.uniform(Duration::ZERO, a)).min(max),
                Jitter::Decorrelated => {
                    let top = s.decorrelated_top(self.previous);
                    let (low, high) = (base.min(top), base.max(top));
                    self.uniform(low, high).min(max)
                }
            }
        };
        self.previous = wait;
        wait
    }

    /// Starts the schedule over from its first delay (after a success under `--consecutive`).
    pub fn restart(&mut self) {
        self.previous = self.schedule.base;
    }

    fn uniform(&mut self, low: Duration, high: Duration) -> Duration {
        duration(nanos(low) + self.draws.up_to(nanos(high) - nanos(low)))
    }
}

fn nanos(d: Duration) -> u128 {
    d.as_nanos()
}

/// Nanoseconds back to a `Duration`, saturating at `Duration::MAX`.
fn duration(nanos: u128) -> Duration {
    const PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(nanos / PER_SEC) {
        Ok(secs) => Duration::new(secs, (nanos % PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

/// `d * factor` rounded to the nanosecond; a factor <= 0 gives zero and an overflow saturates.
fn scale(d: Duration, factor: f64) -> Duration {
    // A float-to-integer `as` saturates: below zero (or NaN) it gives 0, past the top u128::MAX.
    duration((nanos(d) as f64 * factor).round() as u128)
}

/// base * multiplier^exponent in nanoseconds, saturating at `cap`.
///
/// Raised by squaring rather than with `f64::powf`: `powf` is the only libm function `retry`
/// would call, and not linking libm spares a dynamically linked `retry` loading it at every
/// start. Stops at the cap, so any exponent costs at most 64 steps.
fn exponential(base: u128, multiplier: f64, exponent: u64, cap: u128) -> u128 {
    if base == 0 || multiplier <= 1.0 || exponent == 0 {
        return base;
    }
    let cap_f = cap as f64;
    let (mut value, mut factor, mut rest) = (base as f64, multiplier, exponent);
    loop {
        if rest & 1 == 1 {
            value *= factor;
            if value.is_nan() || value >= cap_f {
                return cap;
            }
        }
        rest >>= 1;
        if rest == 0 {
            return value.round() as u128;
        }
        factor *= factor;
    }
}

/// base * fib(n) in nanoseconds, saturating at `cap`; stops as soon as the cap is reached, so
/// any `n` costs at most ~140 steps.
fn fibonacci_times(base: u128, n: u64, cap: u128) -> u128 {
    if base == 0 {
        return 0;
    }
    let (mut current, mut next) = (base, base);
    for _ in 1..n {
        if current >= cap {
            return cap;
        }
        (current, next) = (next, current.saturating_add(next));
    }
    current
}

/// The largest slot multiple `ethernet` can draw for retry `n`: 2^min(n, 10) - 1.
fn ethernet_slots(n: u64) -> u128 {
    (1u128 << n.clamp(1, ETHERNET_MAX_EXPONENT)) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ms;
    use clap::ValueEnum;
    use proptest::prelude::*;

    fn schedule(backoff: Backoff, jitter: Jitter) -> Schedule {
        Schedule {
            backoff,
            jitter,
            base: ms(100),
            max: ms(5000),
            multiplier: 2.0,
            list: Vec::new(),
        }
    }

    fn delays(s: Schedule, count: u64) -> Vec<Duration> {
        let mut delays = Delays::new(s.clone(), Draws::seeded(1));
        (1..=count).map(|n| delays.delay(n)).collect()
    }

    fn millis(values: &[u64]) -> Vec<Duration> {
        values.iter().copied().map(ms).collect()
    }

    #[test]
    fn exponential_sequence() {
        let s = schedule(Backoff::Exponential, Jitter::None);
        assert_eq!(
            delays(s.clone(), 8),
            millis(&[100, 200, 400, 800, 1600, 3200, 5000, 5000])
        );
    }

    #[test]
    fn exponential_with_a_fractional_multiplier() {
        let s = Schedule {
            multiplier: 1.5,
            ..schedule(Backoff::Exponential, Jitter::None)
        };
        assert_eq!(
            delays(s.clone(), 4),
            [100_000, 150_000, 225_000, 337_500].map(Duration::from_micros)
        );
    }

    #[test]
    fn constant_sequence() {
        let s = schedule(Backoff::Constant, Jitter::None);
        assert_eq!(delays(s.clone(), 4), millis(&[100, 100, 100, 100]));
    }

    #[test]
    fn linear_sequence() {
        let s = schedule(Backoff::Linear, Jitter::None);
        assert_eq!(delays(s.clone(), 5), millis(&[100, 200, 300, 400, 500]));
        assert_eq!(s.nominal(60), ms(5000));
    }

    #[test]
    fn fibonacci_sequence() {
        let s = schedule(Backoff::Fibonacci, Jitter::None);
        assert_eq!(
            delays(s.clone(), 10),
            millis(&[100, 100, 200, 300, 500, 800, 1300, 2100, 3400, 5000])
        );
    }

    fn listed(list: &[u64], jitter: Jitter) -> Schedule {
        Schedule {
            list: millis(list),
            ..schedule(Backoff::Exponential, jitter)
        }
    }

    #[test]
    fn a_list_is_waited_entry_by_entry_and_its_last_entry_repeats() {
        let s = listed(&[0, 200, 50, 1000], Jitter::None);
        assert_eq!(
            delays(s.clone(), 7),
            millis(&[0, 200, 50, 1000, 1000, 1000, 1000])
        );
        assert_eq!(s.nominal(u64::MAX), ms(1000));
        assert_eq!(s.nominal(0), ms(0), "retry 0 reads as the first");
        assert!(
            !s.is_ethernet(),
            "a list replaces the curve, ethernet's too"
        );
    }

    #[test]
    fn max_caps_every_entry() {
        let s = listed(&[100, 9000, 20_000], Jitter::None);
        assert_eq!(delays(s.clone(), 4), millis(&[100, 5000, 5000, 5000]));
    }

    #[test]
    fn jitter_applies_to_each_entry_as_to_a_nominal_delay() {
        let s = listed(&[100, 2000], Jitter::Equal);
        assert_eq!(s.range(1), (ms(50), ms(100)));
        assert_eq!(s.range(9), (ms(1000), ms(2000)));
        let mut d = Delays::new(s.clone(), Draws::seeded(5));
        for n in 1..=50u64 {
            let wait = d.delay(n);
            let (low, high) = listed(&[100, 2000], Jitter::Equal).range(n);
            assert!(low <= wait && wait <= high, "retry {n}: {wait:?}");
        }
        let s = listed(&[1000], Jitter::Factor(0.5));
        assert_eq!(s.range(3), (ms(500), ms(1500)));
    }

    #[test]
    fn ethernet_draws_whole_slots_within_its_window() {
        let s = schedule(Backoff::Ethernet, Jitter::None);
        let mut d = Delays::new(s.clone(), Draws::seeded(3));
        for n in 1..=20u64 {
            let top = (1u64 << n.min(10)) - 1;
            for _ in 0..200 {
                let wait = d.delay(n);
                assert_eq!(wait.as_nanos() % ms(100).as_nanos(), 0, "whole slots");
                assert!(wait <= ms(100 * top).min(ms(5000)), "retry {n}: {wait:?}");
            }
        }
        assert_eq!(s.nominal(1), ms(100));
        assert_eq!(s.nominal(2), ms(300));
        assert_eq!(s.range(3), (Duration::ZERO, ms(700)));
    }

    #[test]
    fn ethernet_ignores_jitter() {
        let a = delays(schedule(Backoff::Ethernet, Jitter::None), 12);
        let b = delays(schedule(Backoff::Ethernet, Jitter::Full), 12);
        assert_eq!(a, b);
    }

    #[test]
    fn base_above_max_gives_max() {
        let s = Schedule {
            base: ms(10_000),
            ..schedule(Backoff::Exponential, Jitter::None)
        };
        assert_eq!(delays(s.clone(), 3), millis(&[5000, 5000, 5000]));
    }

    #[test]
    fn zero_base_gives_zero_for_every_kind() {
        for &backoff in Backoff::value_variants() {
            for jitter in [
                Jitter::None,
                Jitter::Full,
                Jitter::Equal,
                Jitter::Decorrelated,
            ] {
                let s = Schedule {
                    base: Duration::ZERO,
                    ..schedule(backoff, jitter)
                };
                assert!(
                    delays(s.clone(), 50).iter().all(|d| d.is_zero()),
                    "{backoff:?}/{jitter:?}"
                );
            }
        }
    }

    fn check_bounds(
        jitter: Jitter,
        low_of: impl Fn(Duration) -> Duration,
        high_of: impl Fn(Duration) -> Duration,
    ) {
        let s = schedule(Backoff::Exponential, jitter);
        for seed in 0..20 {
            let mut d = Delays::new(s.clone(), Draws::seeded(seed));
            for n in 1..=10 {
                let nominal = s.nominal(n);
                for _ in 0..25 {
                    let wait = d.delay(n);
                    assert!(
                        wait >= low_of(nominal),
                        "{jitter:?} n={n}: {wait:?} < {:?}",
                        low_of(nominal)
                    );
                    assert!(
                        wait <= high_of(nominal),
                        "{jitter:?} n={n}: {wait:?} > {:?}",
                        high_of(nominal)
                    );
                    let (low, high) = s.range(n);
                    assert!(low <= wait && wait <= high, "{jitter:?} range({n})");
                }
            }
        }
    }

    #[test]
    fn full_jitter_bounds() {
        check_bounds(Jitter::Full, |_| Duration::ZERO, |d| d);
    }

    #[test]
    fn equal_jitter_bounds() {
        check_bounds(Jitter::Equal, |d| d / 2, |d| d);
    }

    #[test]
    fn factor_jitter_bounds() {
        check_bounds(
            Jitter::Factor(0.2),
            |d| d.mul_f64(0.8),
            |d| d.mul_f64(1.2).min(ms(5000)),
        );
    }

    #[test]
    fn addend_jitter_bounds() {
        check_bounds(
            Jitter::Addend(ms(300)),
            |d| d,
            |d| (d + ms(300)).min(ms(5000)),
        );
    }

    #[test]
    fn decorrelated_jitter_bounds() {
        let s = schedule(Backoff::Exponential, Jitter::Decorrelated);
        for seed in 0..50 {
            let mut d = Delays::new(s.clone(), Draws::seeded(seed));
            let mut previous = s.base;
            for n in 1..=30 {
                let wait = d.delay(n);
                assert!(wait >= s.base && wait <= s.max, "{wait:?}");
                assert!(
                    wait <= (previous * 3).min(s.max),
                    "{wait:?} vs previous {previous:?}"
                );
                let (low, high) = s.range(n);
                assert!(
                    low <= wait && wait <= high,
                    "range({n}) = {low:?}..{high:?}, got {wait:?}"
                );
                previous = wait;
            }
        }
    }

    #[test]
    fn restart_resets_decorrelated_state() {
        let s = schedule(Backoff::Exponential, Jitter::Decorrelated);
        let mut d = Delays::new(s.clone(), Draws::seeded(9));
        for n in 1..=20 {
            d.delay(n);
        }
        d.restart();
        assert!(d.delay(1) <= ms(300));
    }

    #[test]
    fn jitter_spreads_delays_at_the_cap() {
        let s = schedule(Backoff::Exponential, Jitter::Equal);
        let mut d = Delays::new(s.clone(), Draws::seeded(5));
        let waits: std::collections::BTreeSet<_> = (0..100).map(|_| d.delay(40)).collect();
        assert!(waits.len() > 90, "equal jitter at the cap still spreads");
        assert!(waits.iter().all(|&w| w >= ms(2500) && w <= ms(5000)));
    }

    #[test]
    fn each_jitter_kind_has_its_formulas_range() {
        let constant = |jitter, max| Schedule {
            max: ms(max),
            ..schedule(Backoff::Constant, jitter)
        };
        for (jitter, max, n, expected) in [
            (Jitter::None, 5000, 1, (100, 100)),
            (Jitter::Full, 5000, 1, (0, 100)),
            (Jitter::Equal, 5000, 1, (50, 100)),
            (Jitter::Factor(0.2), 5000, 1, (80, 120)),
            (Jitter::Factor(0.2), 110, 1, (80, 110)),
            (Jitter::Factor(1.0), 5000, 1, (0, 200)),
            (Jitter::Addend(ms(300)), 5000, 1, (100, 400)),
            (Jitter::Addend(ms(300)), 250, 1, (100, 250)),
            (Jitter::Decorrelated, 5000, 1, (100, 300)),
            (Jitter::Decorrelated, 5000, 2, (100, 900)),
            (Jitter::Decorrelated, 500, 2, (100, 500)),
        ] {
            assert_eq!(
                constant(jitter, max).range(n),
                (ms(expected.0), ms(expected.1)),
                "{jitter:?} max {max}ms, retry {n}"
            );
        }
    }

    /// Draws spread evenly over the whole range, not only within it: each of 20 equal slices of
    /// it gets some of 5000 draws and at most twice its share (250), where a uniform draw's
    /// count is 250 +- 16 (so no bound is near).
    #[test]
    fn each_jitter_kind_covers_its_whole_range() {
        for jitter in [
            Jitter::Full,
            Jitter::Equal,
            Jitter::Factor(0.2),
            Jitter::Addend(ms(300)),
            Jitter::Decorrelated,
        ] {
            let s = schedule(Backoff::Constant, jitter);
            let (low, high) = s.range(1);
            let mut d = Delays::new(s.clone(), Draws::seeded(11));
            let mut slices = [0u32; 20];
            for _ in 0..5000 {
                d.restart();
                let wait = d.delay(1);
                let slice = (wait - low).as_secs_f64() / (high - low).as_secs_f64() * 20.0;
                slices[(slice as usize).min(19)] += 1;
            }
            assert!(
                slices.iter().all(|&n| n > 0 && n <= 500),
                "{jitter:?}: {slices:?}"
            );
        }
    }

    #[test]
    fn scaling_saturates_at_both_ends() {
        assert_eq!(scale(ms(100), 0.5), ms(50));
        assert_eq!(scale(ms(100), 1.2), ms(120));
        assert_eq!(scale(ms(100), -0.5), Duration::ZERO);
        assert_eq!(scale(ms(100), f64::NAN), Duration::ZERO);
        assert_eq!(scale(Duration::MAX, 2.0), Duration::MAX);
        assert_eq!(scale(ms(100), f64::INFINITY), Duration::MAX);
    }

    #[test]
    fn same_seed_same_delays() {
        let s = schedule(Backoff::Exponential, Jitter::Equal);
        assert_eq!(delays(s.clone(), 20), delays(s.clone(), 20));
        let mut other = Delays::new(s.clone(), Draws::seeded(2));
        let other: Vec<_> = (1..=20).map(|n| other.delay(n)).collect();
        assert_ne!(delays(s.clone(), 20), other);
    }

    #[test]
    fn splay_is_within_its_bound() {
        let s = schedule(Backoff::Exponential, Jitter::Equal);
        let mut d = Delays::new(s.clone(), Draws::seeded(4));
        for _ in 0..1000 {
            assert!(d.up_to(ms(700)) <= ms(700));
        }
        assert_eq!(d.up_to(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn extreme_values_saturate() {
        let years = Duration::from_secs(3600 * 24 * 365 * 100);
        for &backoff in Backoff::value_variants() {
            let s = Schedule {
                backoff,
                jitter: Jitter::Equal,
                base: years,
                max: Duration::MAX,
                multiplier: 1e6,
                list: Vec::new(),
            };
            let mut d = Delays::new(s.clone(), Draws::seeded(0));
            for n in [1, 2, 10, 1000, u64::from(u32::MAX), u64::MAX] {
                let (low, high) = s.range(n);
                let wait = d.delay(n);
                assert!(
                    low <= wait && wait <= high,
                    "{backoff:?} retry {n}: {wait:?}"
                );
                let saturates = match backoff {
                    Backoff::Exponential | Backoff::Fibonacci => n >= 1000,
                    Backoff::Linear => n == u64::MAX,
                    Backoff::Constant | Backoff::Ethernet => false,
                };
                if saturates {
                    assert_eq!(s.nominal(n), Duration::MAX, "{backoff:?} retry {n}");
                }
            }
        }
    }

    #[test]
    fn exponential_growth_agrees_with_powf() {
        let base = 1_000_000_000u128;
        for multiplier in [1.000_001f64, 1.1, 1.5, 2.0, 2.5, 3.7, 10.0, 1e6] {
            for exponent in 0..200u64 {
                let expected = base as f64 * multiplier.powf(exponent as f64);
                let got = exponential(base, multiplier, exponent, u128::MAX);
                if expected >= u128::MAX as f64 {
                    assert_eq!(got, u128::MAX, "{multiplier}^{exponent}");
                } else {
                    // Rounded to the nanosecond, and squaring may differ from powf in the
                    // last bits.
                    let error = (got as f64 - expected).abs();
                    assert!(
                        error <= 0.5 + expected * 1e-13,
                        "{multiplier}^{exponent}: {got} vs {expected}"
                    );
                }
            }
        }
        assert_eq!(exponential(base, 2.0, 63, 5 * base), 5 * base);
        assert_eq!(exponential(base, 2.0, u64::MAX, u128::MAX), u128::MAX);
    }

    fn any_backoff() -> impl Strategy<Value = Backoff> {
        prop_oneof![
            Just(Backoff::Exponential),
            Just(Backoff::Constant),
            Just(Backoff::Linear),
            Just(Backoff::Fibonacci),
            Just(Backoff::Ethernet),
        ]
    }

    fn any_jitter() -> impl Strategy<Value = Jitter> {
        prop_oneof![
            Just(Jitter::None),
            Just(Jitter::Full),
            Just(Jitter::Equal),
            Just(Jitter::Decorrelated),
            (0.0..=1.0f64).prop_map(Jitter::Factor),
            any::<u64>().prop_map(|n| Jitter::Addend(Duration::from_nanos(n))),
        ]
    }

    fn any_duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            (0u64..10_000_000_000).prop_map(Duration::from_nanos),
            any::<u64>().prop_map(Duration::from_secs),
            Just(Duration::MAX),
            Just(Duration::ZERO),
        ]
    }

    proptest! {
        #[test]
        fn every_delay_is_within_its_range_and_the_cap(
            backoff in any_backoff(),
            jitter in any_jitter(),
            base in any_duration(),
            max in any_duration(),
            multiplier in prop_oneof![1.0..=1e6f64, Just(1.0), Just(1e6)],
            n in prop_oneof![1u64..100, any::<u64>(), Just(u64::from(u32::MAX))],
            seed in any::<u64>(),
        ) {
            let s = Schedule { backoff, jitter, base, max, multiplier, list: Vec::new() };
            let mut d = Delays::new(s.clone(), Draws::seeded(seed));
            let nominal = s.nominal(n);
            prop_assert!(nominal <= max);
            let (low, high) = s.range(n);
            prop_assert!(low <= high && high <= max);
            for step in 0..3 {
                let wait = d.delay(n + step.min(u64::MAX - n));
                prop_assert!(wait <= max, "{:?} > max {:?}", wait, max);
            }
            let wait = d.delay(n);
            if jitter != Jitter::Decorrelated {
                prop_assert!(low <= wait && wait <= high, "{:?} outside {:?}..{:?}", wait, low, high);
            }
        }

        #[test]
        fn nominal_delays_never_shrink(
            backoff in prop_oneof![Just(Backoff::Exponential), Just(Backoff::Linear), Just(Backoff::Fibonacci), Just(Backoff::Ethernet)],
            base in any_duration(),
            max in any_duration(),
            multiplier in 1.0..=1e6f64,
            n in 1u64..10_000,
        ) {
            let s = Schedule { backoff, jitter: Jitter::None, base, max, multiplier, list: Vec::new() };
            prop_assert!(s.nominal(n) <= s.nominal(n + 1));
        }
    }
}

#[cfg(test)]
mod golden {
    //! The delays each seed draws, held for every release with the same minor version: a
    //! change here changes what `--seed N` predicts, and must not happen by accident.

    use super::*;

    /// The splay drawn up to 1s, then the waits before retries 1 to 4, in nanoseconds.
    fn drawn(seed: u64, backoff: Backoff, jitter: Jitter) -> Vec<u128> {
        let schedule = Schedule {
            backoff,
            jitter,
            base: Duration::from_millis(100),
            max: Duration::from_secs(5),
            multiplier: 2.0,
            list: Vec::new(),
        };
        let mut delays = Delays::new(schedule, Draws::seeded(seed));
        let mut drawn = vec![delays.up_to(Duration::from_secs(1)).as_nanos()];
        drawn.extend((1..=4).map(|n| delays.delay(n).as_nanos()));
        drawn
    }

    #[test]
    fn each_seed_draws_the_same_delays_in_every_release() {
        let table: &[(u64, Backoff, Jitter, [u128; 5])] = &[
            (
                0,
                Backoff::Exponential,
                Jitter::Equal,
                [883310809, 71576400, 102643377, 394176396, 442538676],
            ),
            (
                0,
                Backoff::Exponential,
                Jitter::Full,
                [883310809, 43152800, 5286754, 388352792, 85077353],
            ),
            (
                0,
                Backoff::Exponential,
                Jitter::Decorrelated,
                [883310809, 186305599, 112130901, 329509416, 194492039],
            ),
            (
                0,
                Backoff::Linear,
                Jitter::Factor(0.2),
                [883310809, 97261120, 162114702, 356505837, 337015471],
            ),
            (
                0,
                Backoff::Constant,
                Jitter::Addend(Duration::from_millis(300)),
                [883310809, 229458399, 107930131, 391264594, 131904007],
            ),
            (
                0,
                Backoff::Ethernet,
                Jitter::None,
                [883310809, 0, 0, 700000000, 100000000],
            ),
            (
                1,
                Backoff::Exponential,
                Jitter::Equal,
                [566561575, 87289088, 197100276, 288871843, 577705880],
            ),
            (
                1,
                Backoff::Exponential,
                Jitter::Full,
                [566561575, 74578176, 194200551, 177743687, 355411761],
            ),
            (
                1,
                Backoff::Exponential,
                Jitter::Decorrelated,
                [566561575, 249156352, 728694237, 1026970080, 1424313196],
            ),
            (
                1,
                Backoff::Linear,
                Jitter::Factor(0.2),
                [566561575, 109831270, 237680220, 293323106, 391082352],
            ),
            (
                1,
                Backoff::Constant,
                Jitter::Addend(Duration::from_millis(300)),
                [566561575, 323734527, 391300827, 233307765, 233279410],
            ),
            (
                1,
                Backoff::Ethernet,
                Jitter::None,
                [566561575, 100000000, 300000000, 300000000, 700000000],
            ),
            (
                7,
                Backoff::Exponential,
                Jitter::Equal,
                [389829748, 50839414, 190076068, 316586059, 580976758],
            ),
            (
                7,
                Backoff::Exponential,
                Jitter::Full,
                [389829748, 1678829, 180152137, 233172117, 361953516],
            ),
            (
                7,
                Backoff::Exponential,
                Jitter::Decorrelated,
                [389829748, 103357658, 289225475, 547501843, 797894125],
            ),
            (
                7,
                Backoff::Linear,
                Jitter::Factor(0.2),
                [389829748, 80671532, 232060854, 309951635, 392390703],
            ),
            (
                7,
                Backoff::Constant,
                Jitter::Addend(Duration::from_millis(300)),
                [389829748, 105036488, 370228205, 274879088, 235732568],
            ),
            (
                7,
                Backoff::Ethernet,
                Jitter::None,
                [389829748, 0, 300000000, 400000000, 700000000],
            ),
            (
                42,
                Backoff::Exponential,
                Jitter::Equal,
                [741564879, 57995519, 127860113, 268838143, 415212067],
            ),
            (
                42,
                Backoff::Exponential,
                Jitter::Full,
                [741564879, 15991039, 55720226, 137676286, 30424134],
            ),
            (
                42,
                Backoff::Exponential,
                Jitter::Decorrelated,
                [741564879, 131982078, 182450955, 253974703, 125173085],
            ),
            (
                42,
                Backoff::Linear,
                Jitter::Factor(0.2),
                [741564879, 86396416, 182288090, 281302886, 326084827],
            ),
            (
                42,
                Backoff::Constant,
                Jitter::Addend(Duration::from_millis(300)),
                [741564879, 147973118, 183580339, 203257215, 111409050],
            ),
            (
                42,
                Backoff::Ethernet,
                Jitter::None,
                [741564879, 0, 100000000, 200000000, 0],
            ),
            (
                u64::MAX,
                Backoff::Exponential,
                Jitter::Equal,
                [893942921, 95629861, 121948196, 285246890, 682228260],
            ),
            (
                u64::MAX,
                Backoff::Exponential,
                Jitter::Full,
                [893942921, 91259721, 43896392, 170493780, 564456519],
            ),
            (
                u64::MAX,
                Backoff::Exponential,
                Jitter::Decorrelated,
                [893942921, 282519441, 264075568, 395050868, 865651827],
            ),
            (
                u64::MAX,
                Backoff::Linear,
                Jitter::Factor(0.2),
                [893942921, 116503888, 177558557, 291148134, 432891304],
            ),
            (
                u64::MAX,
                Backoff::Constant,
                Jitter::Addend(Duration::from_millis(300)),
                [893942921, 373779161, 165844589, 227870335, 311671195],
            ),
            (
                u64::MAX,
                Backoff::Ethernet,
                Jitter::None,
                [893942921, 100000000, 0, 300000000, 1100000000],
            ),
        ];
        for &(seed, backoff, jitter, expected) in table {
            assert_eq!(
                drawn(seed, backoff, jitter),
                expected,
                "seed {seed}, {backoff:?}, {jitter:?}"
            );
        }
    }
}
