//! `kubeplane scheduler`: reads the configuration file, checks the flags, and runs the live
//! scheduler (crates/live) until SIGINT or SIGTERM or a lost lease.

use std::process::ExitCode;

use kubeplane_live::health::Access;
use kubeplane_live::tls::TlsFiles;
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
    let tokens = match &args.authentication_token_file {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Access::parse_tokens(&text),
            Err(e) => {
                return input_error(format!(
                    "--authentication-token-file {}: {e}",
                    path.display()
                ))
            }
        },
        None => Vec::new(),
    };
    if args.authentication_token_file.is_some() && tokens.is_empty() {
        return input_error("--authentication-token-file: the file holds no token");
    }
    let opts = Options {
        kubeconfig: args.kubeconfig,
        config,
        leader_elect: args.leader_elect,
        serve: (args.secure_port != 0)
            .then(|| std::net::SocketAddr::new(args.bind_address, args.secure_port)),
        tls: TlsFiles {
            cert: args.tls_cert_file,
            key: args.tls_private_key_file,
        },
        access: Access {
            tokens,
            always_allow: args.authorization_always_allow_paths,
        },
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
