//! `kubeplane scheduler`: reads the configuration file, checks the flags, and runs the live
//! scheduler (crates/live) until SIGINT or SIGTERM or a lost lease.

use std::process::ExitCode;

use kubeplane_live::{LiveError, Options};

use crate::cli::SchedulerArgs;
use crate::simulate::input_error;

pub fn run(args: SchedulerArgs) -> ExitCode {
    if let Err(e) = std::fs::metadata(&args.kubeconfig) {
        return input_error(format!("--kubeconfig {}: {e}", args.kubeconfig.display()));
    }
    let config = match &args.config {
        Some(path) => match crate::inputs::read_scheduler_config(path, "--config") {
            Ok((source, value)) => Some((source.to_string(), value)),
            Err(e) => return input_error(e),
        },
        None => None,
    };
    let opts = Options {
        kubeconfig: args.kubeconfig,
        config,
        leader_elect: args.leader_elect,
        serve: (args.secure_port != 0)
            .then(|| std::net::SocketAddr::new(args.bind_address, args.secure_port)),
    };
    match kubeplane_live::run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(LiveError::Input(e)) => input_error(e),
        Err(LiveError::LeaseLost) => {
            eprintln!("error: leaderelection lost");
            ExitCode::FAILURE
        }
        Err(LiveError::Runtime(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
