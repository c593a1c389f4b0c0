//! Measures how far `retry`'s real, signal-interruptible sleep overshoots its target.
//!
//! Usage: cargo run --release --example sleep_overshoot -- [MILLIS] [ROUNDS]
//! Prints the median and p99 overshoot in microseconds.

use std::time::{Duration, Instant};

use retry::clock::RealClock;
use retry::driver::Sleep;
use retry::signals::SignalQueue;

fn main() {
    let mut args = std::env::args().skip(1);
    let millis: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let events = SignalQueue::listen().expect("signal handlers");
    let mut clock = RealClock::new(&events);
    let target = Duration::from_millis(millis);
    let mut overshoots: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            clock.sleep(target).expect("not interrupted");
            (start.elapsed() - target).as_secs_f64() * 1e6
        })
        .collect();
    overshoots.sort_by(f64::total_cmp);
    let at = |q: f64| overshoots[((overshoots.len() - 1) as f64 * q).round() as usize];
    println!(
        "sleep {millis}ms x{rounds}: overshoot median {:.0}us p99 {:.0}us max {:.0}us",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
