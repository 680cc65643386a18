//! `kubeplane serve`: reads the FILE arguments as `simulate` does, checks the flags, and runs
//! the server (crates/server) until SIGINT or SIGTERM.

use std::process::ExitCode;

use kubeplane_server::clock::ClockMode;
use kubeplane_server::{Config, ServeError};
use kubeplane_sim::scenario::parse_files_for;

use crate::cli::{ClockArg, ServeArgs};
use crate::simulate::input_error;

pub fn run(args: ServeArgs) -> ExitCode {
    if args.etcd_servers.is_some() {
        return input_error("--etcd-servers: etcd storage is not available yet (use --data-dir, or no flag for memory)");
    }
    let clock = match args.clock {
        ClockArg::Wall if args.speed != 1.0 => {
            return input_error("--speed: only with --clock virtual (the wall clock runs at 1)")
        }
        ClockArg::Wall => ClockMode::Wall,
        ClockArg::Virtual if !(args.speed.is_finite() && args.speed > 0.0) => {
            return input_error(format!(
                "--speed: must be a positive number, not {}",
                args.speed
            ))
        }
        ClockArg::Virtual => ClockMode::Virtual { speed: args.speed },
    };
    let files = match crate::inputs::read_inputs(&args.files, args.recursive) {
        Ok(f) => f,
        Err(e) => return input_error(e),
    };
    let version = match args
        .kubernetes_version
        .as_deref()
        .map(str::parse)
        .transpose()
    {
        Ok(v) => v,
        Err(e) => return input_error(format!("--kubernetes-version: {e}")),
    };
    let mut input = match parse_files_for(&files, version) {
        Ok(i) => i,
        Err(e) => return input_error(e),
    };
    if let Some(path) = &args.scheduler_config {
        match crate::inputs::read_scheduler_config(path, "--scheduler-config") {
            Ok(c) => input.scheduler_configs.push(c),
            Err(e) => return input_error(e),
        }
    }
    if let Some(dir) = &args.data_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return input_error(format!("--data-dir {}: {e}", dir.display()));
        }
    }
    let config = Config {
        listen: args.listen,
        data_dir: args.data_dir,
        kubeconfig_out: args.kubeconfig_out,
        clock,
    };
    match kubeplane_server::run(config, input) {
        Ok(()) => ExitCode::SUCCESS,
        Err(ServeError::Input(e)) => input_error(e),
        Err(ServeError::Runtime(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
