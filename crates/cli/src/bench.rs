//! `kubeplane bench`: the performance workloads (filled in below).

use std::process::ExitCode;

use crate::cli::BenchArgs;

pub fn run(_args: BenchArgs) -> ExitCode {
    ExitCode::SUCCESS
}
