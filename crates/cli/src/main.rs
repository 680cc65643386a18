//! The `kubeplane` command.

mod bench;
mod bench_scheduler;
mod cli;
mod output;
mod simulate;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: the simulator allocates many small short-lived objects (one per store write).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match args.command {
        cli::Command::Simulate(a) => simulate::run(a),
        cli::Command::Bench(a) => bench::run(a),
    }
}
