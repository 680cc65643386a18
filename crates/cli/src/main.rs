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

/// mimalloc's number for its allow-THP option (`mi_option_allow_thp` in its v3 header;
/// libmimalloc-sys has no constant for it). A test checks it against the default.
#[cfg(feature = "mimalloc")]
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Asks for no transparent huge pages, as `MIMALLOC_ALLOW_THP=0` does (mimalloc `madvise`s its
/// arenas for huge pages by default). With huge pages, the first touch of any byte of a 2 MiB
/// range makes the whole range resident, and a run never gives memory back (see
/// `keep_freed_memory`), so every 2 MiB range the allocator ever touched counts in the peak.
/// The option alone comes too late for the arena mimalloc reserved before `main` (measured:
/// the peak did not move), so the process also turns huge pages off for itself, as mimalloc
/// does when the variable is set at its start. `MIMALLOC_ALLOW_THP` in the environment still
/// decides.
#[cfg(feature = "mimalloc")]
fn no_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: sets one integer option, read when the allocator maps memory.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        #[cfg(target_os = "linux")]
        disable_thp_for_process();
    }
}

/// `prctl(PR_SET_THP_DISABLE, 1)`: no transparent huge page is made for this process from now
/// on, in any mapping (mimalloc's own call, `prim/unix/prim.c`).
#[cfg(all(feature = "mimalloc", target_os = "linux"))]
fn disable_thp_for_process() {
    const PR_SET_THP_DISABLE: std::ffi::c_int = 41;
    unsafe extern "C" {
        fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    // SAFETY: the documented call with integer arguments; it changes a flag of the process
    // and touches no memory. A failure leaves huge pages on, which only costs memory.
    let _ = unsafe {
        prctl(
            PR_SET_THP_DISABLE,
            1 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
        )
    };
}

/// The system allocator has no such option.
#[cfg(not(feature = "mimalloc"))]
fn keep_freed_memory() {}

/// The system allocator has no such option.
#[cfg(not(feature = "mimalloc"))]
fn no_huge_pages() {}

fn main() -> ExitCode {
    no_huge_pages();
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

    #[test]
    fn the_allow_thp_option_number_is_mimallocs_allow_thp() {
        // SAFETY: reads an integer option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP) };
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            // On by default on Linux; the neighbouring options default to 16 and 0.
            assert_eq!(get(), 1, "option {MI_OPTION_ALLOW_THP} is not allow_thp");
            no_huge_pages();
            assert_eq!(get(), 0);
        }
    }
}
