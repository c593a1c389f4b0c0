//! End-to-end tests against the real `retry` binary, one module per concern.
// The test binary is its own crate: `pub` in its modules is how they share helpers.
#![allow(unreachable_pub)]

mod support;

mod bad_input;
mod config;
mod debian;
mod dry_run;
mod ecosystem;
mod exit_status;
mod failed_output;
mod fidelity;
mod fleet;
mod generated;
mod hooks;
mod http;
mod input;
mod layout;
mod leftovers;
mod limits;
mod messages;
mod metrics;
mod packaging;
mod paths;
mod processes;
mod recipes;
mod redis;
mod report;
mod schedule;
mod streams;
mod supervision;
