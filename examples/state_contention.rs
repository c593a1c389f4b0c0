//! Measures the state directory under contention: PROCESSES processes each run COUNT
//! transactions (lock, load, decide, store) on one budget, all at once; then checks that no
//! update was lost.
//!
//! Usage: cargo run --release --example state_contention -- [PROCESSES] [COUNT]
//! Prints the transactions per second in all, and the first attempts the record holds against
//! the number made.

use std::process::Command;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--worker") {
        let count = args[3].parse().expect("a count");
        retry::bench_state_transactions(std::path::Path::new(&args[2]), "bench", count)
            .expect("transactions");
        return;
    }
    let processes: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let count: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    let started = Instant::now();
    let children: Vec<_> = (0..processes)
        .map(|_| {
            Command::new(&args[0])
                .args([
                    "--worker",
                    state.to_str().expect("UTF-8"),
                    &count.to_string(),
                ])
                .spawn()
                .expect("a worker")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("a worker's end").success());
    }
    let took = started.elapsed();
    let made = processes * count;
    // The record the workers left: its budget line holds each slice as index:firsts:retries.
    let text = std::fs::read_to_string(state.join("bench.state")).expect("the record");
    let firsts: u64 = text
        .lines()
        .nth(1)
        .expect("a budget line")
        .split(' ')
        .skip(2)
        .map(|slice| {
            slice
                .split(':')
                .nth(1)
                .expect("firsts")
                .parse::<u64>()
                .expect("a count")
        })
        .sum();
    println!(
        "{processes} processes x {count} transactions: {:.0} per second in all ({:.2?}); first attempts recorded {firsts} of {made}{}",
        made as f64 / took.as_secs_f64(),
        took,
        if firsts == made {
            ", none lost"
        } else {
            ": LOST UPDATES"
        }
    );
}
