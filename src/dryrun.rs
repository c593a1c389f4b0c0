//! `--dry-run`: the planned schedule as text. Pure: settings in, text out.
//!
//! With `--seed`, it draws the delays with the same generator, in the same order, as a real run
//! does (the splay first, then one delay per retry), so it predicts that run exactly, assuming
//! every attempt fails at once.

use std::fmt::Write;
use std::time::Duration;

use crate::backoff::{Backoff, Delays, Jitter, Schedule};
use crate::deadline::{self, Fit, LAST_CHANCE_MARGIN, WaitKind};
use crate::draws::Draws;
use crate::settings::{Settings, Timeouts};
use crate::text::human;

/// Rows shown before the table is cut short.
const MAX_ROWS: u64 = 100;
/// Width of the bar chart, in cells.
const BAR_WIDTH: usize = 40;

struct Row {
    label: String,
    nominal: Option<Duration>,
    least: Duration,
    most: Duration,
    elapsed_least: Duration,
    elapsed_most: Duration,
    /// The time limit of the attempt after the wait.
    limit: Option<Duration>,
    drawn: Option<Duration>,
    note: &'static str,
}

pub fn plan(settings: &Settings) -> String {
    let mut out = preamble(settings);
    out.push('\n');
    out += &table(settings);
    for note in [timeout_note(settings), hint_note(settings)]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// What the plan is for: the command, the schedule, the limits, the streak, the fleet limits
/// and the seed.
fn preamble(settings: &Settings) -> String {
    let command = if settings.command.is_empty() {
        "(no command given)".to_string()
    } else {
        crate::text::shell_words(&settings.command)
    };
    let mut lines = vec![
        format!("dry run: {command}"),
        schedule_line(&settings.schedule),
        limits_line(settings),
    ];
    lines.extend(code_limits_line(settings));
    lines.extend(streak_lines(settings));
    lines.extend(fleet_lines(settings));
    lines.push(format!(
        "seed: {}",
        settings.seed.map_or(
            "none (each run draws its own delays; --seed N shows them)".to_string(),
            |s| s.to_string()
        )
    ));
    lines.push("elapsed counts waits only: each attempt adds its own running time".into());
    let mut out = String::new();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The curve or the list of delays, its cap and its jitter.
fn schedule_line(schedule: &Schedule) -> String {
    let jitter = match (schedule.is_ethernet(), schedule.jitter) {
        (true, _) => "random slots".to_string(),
        (_, Jitter::None) => "no jitter".to_string(),
        (_, Jitter::Full) => "full jitter".to_string(),
        (_, Jitter::Equal) => "equal jitter".to_string(),
        (_, Jitter::Decorrelated) => "decorrelated jitter".to_string(),
        // To a hundredth of a percent, so 0.07 shows as 7%, not 7.000000000000001%.
        (_, Jitter::Factor(f)) => format!("jitter ±{}%", (f * 1e4).round() / 100.0),
        (_, Jitter::Addend(a)) => format!("jitter +0..{}", human(a)),
    };
    if schedule.list.is_empty() {
        let growth = match schedule.backoff {
            Backoff::Exponential => format!(", multiplier {}", schedule.multiplier),
            _ => String::new(),
        };
        return format!(
            "schedule: {} backoff, base {}, max {}{growth}, {jitter}",
            schedule.backoff.name(),
            human(schedule.base),
            human(schedule.max),
        );
    }
    let list: Vec<String> = schedule.list.iter().copied().map(human).collect();
    format!(
        "schedule: delays {} (the last repeats), {}, {jitter}",
        list.join(", "),
        if schedule.max == Duration::MAX {
            "no cap".to_string()
        } else {
            format!("max {}", human(schedule.max))
        },
    )
}

/// The attempts, `--max-time` and the attempts' time limits.
fn limits_line(settings: &Settings) -> String {
    format!(
        "limits: {}, max-time {}, {}",
        match settings.max_attempts {
            Some(1) => "1 attempt".to_string(),
            Some(n) => format!("{n} attempts"),
            None => "no attempt limit".to_string(),
        },
        settings.max_time.map_or("none".into(), human),
        timeouts(&settings.timeouts),
    )
}

/// The retries each `CODE@N` of `--retry-on-exit` allows, if any.
fn code_limits_line(settings: &Settings) -> Option<String> {
    let limits = &settings.code_limits;
    if limits.is_empty() {
        return None;
    }
    let rules: Vec<String> = limits
        .iter()
        .map(|limit| {
            let codes = if limit.low == limit.high {
                format!("exit {}", limit.low)
            } else {
                format!("exits {}-{} together", limit.low, limit.high)
            };
            match limit.retries {
                0 => format!("{codes}: never retried"),
                1 => format!("{codes}: at most 1 retry"),
                n => format!("{codes}: at most {n} retries"),
            }
        })
        .collect();
    let overlap = limits.iter().enumerate().any(|(i, a)| {
        limits[i + 1..]
            .iter()
            .any(|b| a.low <= b.high && b.low <= a.high)
    });
    Some(format!(
        "retry limits (over the whole run, then a permanent failure): {}{}",
        rules.join("; "),
        if overlap {
            " (a code under two rules is retried while both allow it)"
        } else {
            ""
        }
    ))
}

/// What starts the schedule afresh or ends a run other than a failure: `--reset-after`,
/// `--restart`, `--consecutive`.
fn streak_lines(settings: &Settings) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(long) = settings.reset_after {
        lines.push(format!(
            "reset: a failed attempt that runs {} or longer starts the schedule and the attempt limit afresh",
            human(long)
        ));
    }
    if settings.restart {
        lines.push(
            "restart: a success starts the command again after retry 1's delay; the run ends by failures in a row past the limit, --max-time, a permanent failure, the budget or breaker, or a signal"
                .into(),
        );
    }
    if settings.consecutive > 1 {
        let n = settings.consecutive;
        lines.push(format!(
            "success: {n} successful attempts in a row; a success short of that waits retry 1's delay, and the schedule starts over"
        ));
        if let Some(max) = settings.max_attempts.filter(|&max| max < n) {
            lines.push(format!(
                "warning: --consecutive {n} needs {n} attempts, but at most {max} run: this run cannot succeed"
            ));
        }
    }
    lines
}

/// The attempts' time limits: one for all, or the list (the table shows which attempt gets
/// which).
fn timeouts(timeouts: &Timeouts) -> String {
    let limit = |limit: Option<Duration>| limit.map_or("none".into(), human);
    if !timeouts.vary() {
        return format!("timeout {}", limit(timeouts.of(1)));
    }
    // A list of thousands is said by its first entries; the table shows the rest.
    let shown = timeouts.list().len().min(10);
    let mut list: Vec<String> = timeouts.list()[..shown]
        .iter()
        .map(|&d| limit(Some(d).filter(|d| !d.is_zero())))
        .collect();
    if timeouts.list().len() > shown {
        list.push(format!("... ({} in all)", timeouts.list().len()));
    }
    format!(
        "timeouts {} (the last repeats; attempt 1 gets {}, and each row's timeout is the limit of the attempt after its wait)",
        list.join(", "),
        limit(timeouts.of(1))
    )
}

/// The table of retries, one row each, with a bar chart of their waits, and what follows it
/// when the rows stop short.
fn table(settings: &Settings) -> String {
    let mut out = String::new();
    let (rows, more) = rows(settings);
    let max_most = rows.iter().map(|r| r.most).max().unwrap_or_default();
    let header = ["retry", "nominal", "wait", "elapsed", "timeout", "drawn"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            [
                row.label.clone(),
                row.nominal.map_or("-".into(), human),
                span(row.least, row.most),
                span(row.elapsed_least, row.elapsed_most),
                row.limit.map_or("none".into(), human),
                row.drawn.map_or("-".into(), human),
            ]
        })
        .collect();
    // The usual widths, widened for durations of days or more so the columns stay aligned.
    let mut widths = [6, 9, 19, 21, 9, 9];
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // The timeout column when the limits differ from attempt to attempt; the drawn one with a
    // seed.
    let shown = [
        true,
        true,
        true,
        true,
        settings.timeouts.vary(),
        settings.seed.is_some(),
    ];
    let line = |cells: [&str; 6], chart: &str| {
        let mut line = String::new();
        for ((cell, width), _) in cells
            .iter()
            .zip(widths)
            .zip(shown)
            .filter(|(_, shown)| *shown)
        {
            let _ = write!(line, "{cell:>width$}  ");
        }
        line.push_str(chart);
        line.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(header, "delays"));
    for (row, cells) in rows.iter().zip(&cells) {
        let chart = format!("{}{}", bar(row.least, row.most, max_most), row.note);
        let _ = writeln!(
            out,
            "{}",
            line(cells.each_ref().map(String::as_str), &chart)
        );
    }
    if let Some(more) = more {
        let _ = writeln!(out, "{more}");
    }
    out
}

/// The budget and breaker named, with this run's policies; a dry run records nothing.
fn fleet_lines(settings: &Settings) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some((name, policy)) = &settings.fleet.budget {
        lines.push(format!(
            "budget: '{name}', {} retries per {} and {} per first attempt (a dry run records nothing)",
            policy.floor,
            human(policy.window),
            policy.ratio
        ));
    }
    if let Some((name, policy)) = &settings.fleet.breaker {
        lines.push(format!(
            "breaker: '{name}', opens after {} failed attempts in a row, for {} (up to {} after failed probes); a run that finds it open ends with 75 before any attempt",
            policy.threshold,
            human(policy.cooldown),
            human(policy.cooldown.saturating_mul(16))
        ));
    }
    lines
}

/// When the attempts may ask for their own waits (`Retry-After`, `--retry-after-*`): that the
/// waits above are the least, and how long a hint may make one.
fn hint_note(settings: &Settings) -> Option<String> {
    let rules = [&settings.stdout_rules, &settings.stderr_rules];
    let from_headers = rules.iter().any(|rules| rules.http.retry_after);
    let from_patterns = rules.iter().any(|rules| rules.hint.is_some());
    let what = match (from_headers, from_patterns) {
        (false, false) => return None,
        (true, false) => "a Retry-After header",
        (false, true) => "a hint the command prints",
        (true, true) => "a Retry-After header or a hint the command prints",
    };
    let most = settings.retry_after_max;
    Some(format!(
        "hints: {what} may lengthen a wait after a failure, past --max, up to --retry-after-max {} plus a spread of up to {}",
        human(most),
        human(crate::http::spread_limit(most, most))
    ))
}

/// Attempts counted at most, for `timeout_note`: past that, the note is left out.
const MAX_COUNTED: u64 = 100_000;

/// With both a time limit for every attempt and `--max-time`, how many attempts start at the
/// least: when every attempt runs its full limit and every wait is at its longest. The table
/// counts waits only; this is the other bound.
fn timeout_note(settings: &Settings) -> Option<String> {
    let limit = settings.max_time?;
    settings.timeouts.longest()?;
    let most = settings
        .max_attempts
        .unwrap_or(u64::MAX)
        .min(MAX_COUNTED + 1);
    // When the next attempt starts, at the latest; a wait that would cross the deadline ends
    // the run instead, so an attempt starts only before it.
    let mut start = settings.splay;
    let mut started = 0;
    while started < most && start < limit {
        started += 1;
        let own = settings.timeouts.of(started).unwrap_or_default();
        start = start
            .saturating_add(own)
            .saturating_add(settings.schedule.range(started).1);
    }
    let (each, the_one) = if settings.timeouts.vary() {
        (
            "even if each runs its full limit".to_string(),
            "even if it runs its full limit".to_string(),
        )
    } else {
        let timeout = human(settings.timeouts.of(1).unwrap_or_default());
        (
            format!("even if each runs its full --timeout {timeout}"),
            format!("even if it runs its full --timeout {timeout}"),
        )
    };
    Some(match started {
        // The splay alone may reach the deadline; its row says so.
        0 => return None,
        _ if started > MAX_COUNTED => return None,
        1 if settings.max_attempts == Some(1) => format!(
            "--max-time {} leaves time for the attempt, {the_one}",
            human(limit),
        ),
        n if Some(n) == settings.max_attempts => {
            format!(
                "--max-time {} leaves time for all {n} attempts, {each}",
                human(limit)
            )
        }
        1 => format!(
            "--max-time {} leaves time for at least 1 attempt, {each}",
            human(limit)
        ),
        n => format!(
            "--max-time {} leaves time for at least {n} attempts, {each}",
            human(limit)
        ),
    })
}

/// How far into the run the table has come, counting waits only: at the least, at the most,
/// and as drawn (with `--seed`; `None` without).
#[derive(Clone, Copy)]
struct Elapsed {
    least: Duration,
    most: Duration,
    drawn: Option<Duration>,
}

/// The rows of the table, and a line saying what was left out, if anything.
fn rows(settings: &Settings) -> (Vec<Row>, Option<String>) {
    let mut draws = settings
        .seed
        .map(|seed| Delays::new(settings.schedule.clone(), Draws::seeded(seed)));
    let mut rows = Vec::new();
    let mut elapsed = Elapsed {
        least: Duration::ZERO,
        most: Duration::ZERO,
        drawn: Some(Duration::ZERO),
    };
    if !settings.splay.is_zero() {
        rows.push(splay_row(settings, draws.as_mut(), &mut elapsed));
    }
    let retries = settings.max_attempts.map(|max| max - 1);
    if let (Some(limit), Some(drawn)) = (settings.max_time, elapsed.drawn)
        && drawn >= limit
    {
        // Only a drawn splay can reach the limit before any attempt: the run then exits 124.
        let footer = format!(
            "the splay this seed draws passes --max-time {}: no attempt runs, and the run exits 124",
            human(limit)
        );
        return (rows, Some(footer));
    }
    let mut n = 0u64;
    loop {
        if retries.is_some_and(|retries| n >= retries) {
            return (rows, None);
        }
        if n >= MAX_ROWS {
            let rest = match retries {
                Some(retries) => format!("{} more retries", retries - n),
                None => "retries without limit".to_string(),
            };
            return (
                rows,
                Some(format!(
                    "... {rest}, each waiting at most {}",
                    human(settings.schedule.range(n.saturating_add(1)).1)
                )),
            );
        }
        n += 1;
        let (row, last) = retry_row(settings, n, draws.as_mut(), &mut elapsed);
        rows.push(row);
        if last && let Some(limit) = settings.max_time {
            // A deadline within the margin leaves the last chance no earlier start than now.
            let start = limit.saturating_sub(LAST_CHANCE_MARGIN);
            let starts = if start.is_zero() {
                "at once".to_string()
            } else {
                format!("by {}", human(start))
            };
            let footer = format!(
                "--max-time {} allows at most {} attempts: the last starts {starts}, {} before \
                 it (or twice the longest attempt, when attempts take longer)",
                human(limit),
                n + 1,
                human(limit - start),
            );
            return (rows, Some(footer));
        }
    }
}

/// The splay's row, before the first attempt; `elapsed` moves on past it.
fn splay_row(settings: &Settings, draws: Option<&mut Delays>, elapsed: &mut Elapsed) -> Row {
    let drawn = draws.map(|d| d.up_to(settings.splay));
    elapsed.most = settings.splay;
    elapsed.drawn = drawn;
    Row {
        label: "splay".into(),
        nominal: None,
        least: Duration::ZERO,
        most: settings.splay,
        elapsed_least: elapsed.least,
        elapsed_most: elapsed.most,
        limit: settings.timeouts.of(1),
        drawn,
        note: past(
            settings.max_time,
            elapsed.least,
            elapsed.most,
            elapsed.drawn,
        ),
    }
}

/// Retry `n`'s row, its wait starting at `elapsed` (which moves on past it), and whether that
/// wait is the last chance before `--max-time`.
fn retry_row(
    settings: &Settings,
    n: u64,
    draws: Option<&mut Delays>,
    elapsed: &mut Elapsed,
) -> (Row, bool) {
    let schedule = &settings.schedule;
    let (least, most) = schedule.range(n);
    let drawn = draws.map(|d| d.delay(n));
    // Each wait as the deadline leaves it, from the elapsed time it starts at: with ranges,
    // the corners of the elapsed times and the waits bound what may happen.
    let fitted = |wait: Duration, from: Duration| match settings.max_time {
        Some(limit) => fit_to(limit, wait, from),
        None => (wait, false),
    };
    let corners = [
        (elapsed.least, least),
        (elapsed.least, most),
        (elapsed.most, least),
        (elapsed.most, most),
    ]
    .map(|(from, wait)| {
        let (wait, cut) = fitted(wait, from);
        (wait, from.saturating_add(wait), cut)
    });
    let least_cut = corners[0].2;
    let most_cut = corners.iter().any(|&(_, _, cut)| cut);
    let least = corners.iter().map(|c| c.0).min().unwrap_or_default();
    let most = corners.iter().map(|c| c.0).max().unwrap_or_default();
    let drawn = elapsed.drawn.zip(drawn).map(|(from, d)| fitted(d, from));
    elapsed.least = corners.iter().map(|c| c.1).min().unwrap_or_default();
    elapsed.most = corners.iter().map(|c| c.1).max().unwrap_or_default();
    elapsed.drawn = elapsed
        .drawn
        .zip(drawn)
        .map(|(e, (d, _))| e.saturating_add(d));
    // The last chance is certain when the shortest wait (or the drawn one) is cut.
    let last = drawn.map_or(least_cut, |(_, cut)| cut);
    let note = if last {
        "  <- the last chance: cut short so the last attempt starts before --max-time"
    } else if most_cut && drawn.is_none() {
        "  <- may be cut short into the last chance before --max-time"
    } else {
        ""
    };
    let row = Row {
        label: n.to_string(),
        nominal: Some(schedule.nominal(n)),
        least,
        most,
        elapsed_least: elapsed.least,
        elapsed_most: elapsed.most,
        limit: settings.timeouts.of(n.saturating_add(1)),
        drawn: drawn.map(|(d, _)| d),
        note,
    };
    (row, last)
}

/// A wait of `wait` after a failure, starting `from` into the run, as `--max-time` at `limit`
/// leaves it, assuming attempts take no time, and whether the deadline cut it into the last
/// chance. A wait that reaches a deadline already passed (an earlier cut left none) is none.
fn fit_to(limit: Duration, wait: Duration, from: Duration) -> (Duration, bool) {
    let left = limit.saturating_sub(from);
    match deadline::fit(
        wait,
        left,
        WaitKind::AfterFailure {
            not_before: Duration::ZERO,
        },
        Duration::ZERO,
        None,
    ) {
        Fit::Keep => (wait, false),
        Fit::LastChance(shorter) => (shorter, true),
        Fit::End => (Duration::ZERO, true),
    }
}

/// The note for the splay's row when it may reach `--max-time`: no attempt runs then.
fn past(
    max_time: Option<Duration>,
    least: Duration,
    most: Duration,
    drawn: Option<Duration>,
) -> &'static str {
    let Some(limit) = max_time else { return "" };
    match drawn {
        Some(drawn) if drawn >= limit => "  <- --max-time ends the run instead",
        Some(_) => "",
        None if least >= limit => "  <- --max-time ends the run instead",
        None if most >= limit => "  <- --max-time may end the run here",
        None => "",
    }
}

fn span(least: Duration, most: Duration) -> String {
    if least == most {
        human(least)
    } else {
        format!("{}..{}", human(least), human(most))
    }
}

/// `█` up to the least wait, `░` from there to the most, scaled to the longest wait shown.
fn bar(least: Duration, most: Duration, scale: Duration) -> String {
    if scale.is_zero() {
        return String::new();
    }
    let cells =
        |d: Duration| ((d.as_secs_f64() / scale.as_secs_f64()) * BAR_WIDTH as f64).round() as usize;
    let (solid, total) = (cells(least), cells(most).max(1));
    format!(
        "{}{}",
        "█".repeat(solid),
        "░".repeat(total.saturating_sub(solid))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_for(args: &[&str]) -> String {
        plan(&Settings::of_args(&[&["--dry-run"], args].concat()))
    }

    #[test]
    fn with_a_timeout_it_says_how_many_attempts_max_time_leaves_time_for() {
        let last_line = |args: &str| {
            let args: Vec<&str> = args.split(' ').collect();
            plan_for(&args)
                .lines()
                .last()
                .unwrap_or_default()
                .to_string()
        };
        let each = "even if each runs its full --timeout 10s";
        for (args, said) in [
            // Attempts of 10s, waits of at most 1s, 2s, 4s, 8s: attempt 5 would start at 55s.
            ("--timeout 10s --max-time 1m --retries 4", format!("--max-time 1m leaves time for all 5 attempts, {each}")),
            // ... but not at 50s.
            ("--timeout 10s --max-time 50s --retries 4", format!("--max-time 50s leaves time for at least 4 attempts, {each}")),
            // Without a limit on attempts; the splay counts too.
            ("--timeout 10s --max-time 30s --forever --base 0", format!("--max-time 30s leaves time for at least 3 attempts, {each}")),
            ("--timeout 10s --max-time 30s --forever --base 0 --splay 25s", format!("--max-time 30s leaves time for at least 1 attempt, {each}")),
            ("--timeout 10s --max-time 30s --retries 0", "--max-time 30s leaves time for the attempt, even if it runs its full --timeout 10s".to_string()),
        ] {
            assert_eq!(last_line(args), said, "{args}");
        }
        // Past 100,000 attempts the count is left out rather than worked out.
        for args in [
            &[
                "--timeout",
                "1ms",
                "--max-time",
                "1h",
                "--forever",
                "--base",
                "0",
            ][..],
            &[
                "--timeout",
                "1ms",
                "--max-time",
                "1h",
                "--retries",
                "100000",
                "--base",
                "0",
            ],
        ] {
            assert!(!plan_for(args).contains("leaves time"), "{args:?}");
        }
        assert!(
            plan_for(&[
                "--timeout",
                "1ms",
                "--max-time",
                "1h",
                "--retries",
                "99999",
                "--base",
                "0"
            ])
            .ends_with(
                "leaves time for all 100000 attempts, even if each runs its full --timeout 1ms\n"
            )
        );
        // Only with both limits, and some time left after the splay.
        let text = plan_for(&["--timeout", "10s", "--max-time", "30s", "--splay", "30s"]);
        assert!(!text.contains("leaves time"), "{text}");
        for args in [
            &["--timeout", "10s"][..],
            &["--max-time", "1m"],
            &["--timeout", "0", "--max-time", "1m"],
        ] {
            assert!(!plan_for(args).contains("leaves time"), "{args:?}");
        }
    }

    #[test]
    fn one_row_per_retry() {
        let text = plan_for(&["--retries", "3", "--jitter", "none", "--base", "1s"]);
        let table: Vec<_> = text.lines().skip(6).collect();
        assert_eq!(table.len(), 4, "{text}");
        assert!(table[1].contains("1s"), "{text}");
        assert!(table[3].contains("4s"), "{text}");
        assert!(table[3].contains("7s"), "elapsed 1+2+4: {text}");
    }

    #[test]
    fn equal_jitter_ranges_and_elapsed() {
        let text = plan_for(&["--retries", "2", "--base", "1s"]);
        assert!(text.contains("500ms..1s"), "{text}");
        assert!(text.contains("1s..2s"), "{text}");
        assert!(text.contains("1.5s..3s"), "elapsed: {text}");
    }

    #[test]
    fn the_same_seed_gives_the_same_plan() {
        let args = ["--seed", "7", "--retries", "4"];
        assert_eq!(plan_for(&args), plan_for(&args));
        assert!(plan_for(&args).contains("drawn"));
        assert_ne!(
            plan_for(&args),
            plan_for(&["--seed", "8", "--retries", "4"])
        );
    }

    /// The wait that would cross `--max-time` is cut into the last chance, which starts 100ms
    /// before the deadline when attempts take no time; the table ends there.
    #[test]
    fn max_time_cuts_the_table_at_the_last_chance() {
        let text = plan_for(&[
            "--forever",
            "--jitter",
            "none",
            "--base",
            "1s",
            "--max-time",
            "10s",
        ]);
        assert!(
            text.contains(
                "     4         8s                 2.9s                   9.9s  \
                 █████████████████████████████  <- the last chance: cut short so the last \
                 attempt starts before --max-time\n\
                 --max-time 10s allows at most 5 attempts: the last starts by 9.9s, 100ms \
                 before it"
            ),
            "{text}"
        );
        let soon = plan_for(&["--forever", "--max-time", "50ms"]);
        assert!(
            soon.contains(
                "--max-time 50ms allows at most 2 attempts: the last starts at once, 50ms before it"
            ),
            "{soon}"
        );
        let one = plan_for(&["--jitter", "none", "--base", "2s", "--max-time", "1s"]);
        assert!(
            one.contains("     1         2s                900ms                  900ms"),
            "{one}"
        );
        assert!(
            one.contains("--max-time 1s allows at most 2 attempts: the last starts by 900ms"),
            "{one}"
        );
        // With ranges, a row that only may cross says so, and the table goes on.
        let ranged = plan_for(&["--forever", "--base", "1s", "--max-time", "10s"]);
        assert!(
            ranged.contains("2.9s..6.4s             7.5s..9.9s")
                && ranged.contains("<- may be cut short into the last chance before --max-time")
                && ranged.contains("--max-time 10s allows at most 6 attempts"),
            "{ranged}"
        );
    }

    #[test]
    fn each_row_says_whether_max_time_ends_the_run_there() {
        let s = Duration::from_secs;
        let (ends, may) = (
            "  <- --max-time ends the run instead",
            "  <- --max-time may end the run here",
        );
        for (max_time, least, most, drawn, note) in [
            (None, 5, 9, None, ""),
            (Some(10), 5, 9, None, ""),
            (Some(10), 5, 10, None, may),
            (Some(10), 9, 12, None, may),
            (Some(10), 10, 12, None, ends),
            (Some(10), 5, 12, Some(9), ""),
            (Some(10), 5, 12, Some(10), ends),
        ] {
            assert_eq!(
                past(max_time.map(s), s(least), s(most), drawn.map(s)),
                note,
                "{max_time:?} {least}..{most} drawn {drawn:?}"
            );
        }
    }

    /// A drawn splay past `--max-time` leaves no attempt at all, and the run exits 124.
    #[test]
    fn a_splay_past_max_time_leaves_no_attempt() {
        let text = plan_for(&["--splay", "10s", "--max-time", "1s", "--seed", "1"]);
        assert!(
            text.ends_with(
                "the splay this seed draws passes --max-time 1s: no attempt runs, and the run \
                 exits 124\n"
            ),
            "{text}"
        );
        assert!(!text.contains("\n     1 "), "no retry row: {text}");
    }

    #[test]
    fn unlimited_runs_are_cut_short() {
        let text = plan_for(&["--forever", "--max", "1s"]);
        assert!(
            text.contains("... retries without limit, each waiting at most 1s"),
            "{text}"
        );
        assert!(text.lines().count() < 120);
    }

    #[test]
    fn a_streak_is_shown_and_one_that_cannot_complete_is_said() {
        let plan = plan_for(&["--consecutive", "3", "-r", "2"]);
        assert!(
            plan.contains("success: 3 successful attempts in a row;"),
            "{plan}"
        );
        assert!(!plan.contains("warning"), "{plan}");
        let plan = plan_for(&["--consecutive", "4", "-r", "2"]);
        assert!(
            plan.contains(
                "warning: --consecutive 4 needs 4 attempts, but at most 3 run: this run cannot succeed"
            ),
            "{plan}"
        );
        assert!(!plan_for(&["-r", "2"]).contains("success:"));
        assert!(!plan_for(&["--consecutive", "9", "--forever"]).contains("warning"));
    }

    #[test]
    fn splay_is_shown() {
        let text = plan_for(&["--splay", "30s", "--seed", "1"]);
        assert!(
            text.lines().any(|l| l.trim_start().starts_with("splay")),
            "{text}"
        );
    }

    #[test]
    fn columns_stay_aligned_for_durations_of_years() {
        let text = plan_for(&[
            "--base",
            "500000000years",
            "--max",
            "500000000years",
            "-r",
            "2",
            "--seed",
            "1",
        ]);
        let table: Vec<&str> = text
            .lines()
            .skip_while(|line| !line.contains("nominal"))
            .collect();
        assert_eq!(table.len(), 3, "{text}");
        let column = |line: &str, what: char| line.chars().position(|c| c == what);
        let chart = table[0]
            .find("delays")
            .map(|at| table[0][..at].chars().count());
        for row in &table[1..] {
            assert_eq!(column(row, '█'), chart, "{text}");
        }
    }

    #[test]
    fn huge_limits_do_not_hang_or_overflow() {
        let text = plan_for(&[
            "--retries",
            "18446744073709551615",
            "--base",
            "1000000000h",
            "--multiplier",
            "1000000",
        ]);
        assert!(text.contains("more retries"), "{text}");
    }
}
