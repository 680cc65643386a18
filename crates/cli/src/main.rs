//! The `kubeplane` command.

mod bench;
mod bench_controllers;
mod bench_envelope;
mod bench_run;
mod bench_scheduler;
mod bench_serve;
mod bench_support;
mod cli;
mod compare;
mod controller_manager;
mod generate;
mod inputs;
mod output;
mod progress;
mod report;
mod scheduler;
mod serve;
mod simulate;
mod snapshot;
mod summary;
mod whatif;
mod why;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// mimalloc: the simulator allocates many small short-lived objects (one per store write).
/// Without the `mimalloc` feature the system allocator serves, so that heap profilers
/// (massif, heaptrack) see every allocation (docs/performance/until-session-12.md, "Where the memory goes").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's number for its purge-delay option (`mi_option_purge_delay`, 15 in both its v2 and
/// v3 headers; libmimalloc-sys has no constant for it). A test checks it against the default.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory for reuse instead of returning it to the OS a second after it is freed
/// (mimalloc's default). A run is a batch job whose memory churns: every pod version is a few
/// kilobytes allocated and freed again, and with transparent huge pages each page given back
/// and touched again costs the kernel 2 MiB of zeroing. Measured on `bench deployment-scale`:
/// system time 0.17 s → 0.05 s and page faults 782 → 536 (medians of 12 alternating runs),
/// peak memory unchanged.
/// `MIMALLOC_PURGE_DELAY` in the environment still decides when set.
#[cfg(feature = "mimalloc")]
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads options on every purge decision and
        // allows setting them at any time. Called before any other thread starts.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}

/// The system allocator has no such option.
#[cfg(not(feature = "mimalloc"))]
fn keep_freed_memory() {}

fn main() -> ExitCode {
    keep_freed_memory();
    let parsed = cli::Cli::command()
        .try_get_matches()
        .and_then(|m| cli::Cli::from_arg_matches(&m).map(|a| (a, m)));
    let (mut args, matches) = match parsed {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match (&mut args.command, matches.subcommand()) {
        (cli::Command::Simulate(a), Some((_, m))) => a.collect_what_ifs(m),
        (cli::Command::Why(a), Some((_, m))) => a.simulate.collect_what_ifs(m),
        _ => {}
    }
    match args.command {
        cli::Command::Simulate(a) => simulate::run(a),
        cli::Command::Why(mut a) => {
            a.simulate.why = Some(a.pod);
            simulate::run(a.simulate)
        }
        cli::Command::Compare(a) => compare::run(a),
        cli::Command::Bench(a) => bench::run(a),
        cli::Command::Serve(a) => serve::run(a),
        cli::Command::Scheduler(a) => scheduler::run(a),
        cli::Command::Snapshot(a) => snapshot::run(a),
        cli::Command::ControllerManager(a) => controller_manager::run(a),
        cli::Command::Completion(a) => generate::completion(a.shell),
        cli::Command::Man => generate::man(),
        cli::Command::Schema => generate::schema(),
    }
}

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_number_is_mimallocs_purge_delay() {
        // SAFETY: reads an integer option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // mimalloc v3's default purge delay (ms); the neighbouring options default to 0 or 1.
            assert_eq!(
                get(),
                1000,
                "option {MI_OPTION_PURGE_DELAY} is not the purge delay"
            );
        }
        keep_freed_memory();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), -1);
        }
    }
}
