//! `kubeplane scheduler`: reads the configuration file, checks the flags, and runs the live
//! scheduler (crates/live) until SIGINT or SIGTERM or a lost lease.

use std::process::ExitCode;

use kubeplane_live::health::Access;
use kubeplane_live::tls::TlsFiles;
use kubeplane_live::{LiveError, Options};

use crate::cli::{SchedulerArgs, ServingArgs};
use crate::simulate::input_error;

pub fn run(args: SchedulerArgs) -> ExitCode {
    if let Some(path) = &args.kubeconfig {
        if let Err(e) = std::fs::metadata(path) {
            return input_error(format!("--kubeconfig {}: {e}", path.display()));
        }
    }
    let config = match &args.config {
        Some(path) => match crate::inputs::read_scheduler_config(path, "--config") {
            Ok((source, value)) => Some((source.to_string(), value)),
            Err(e) => return input_error(e),
        },
        None => None,
    };
    let (tls, access) = match serving(&args.serving) {
        Ok(s) => s,
        Err(e) => return input_error(e),
    };
    let opts = Options {
        kubeconfig: args.kubeconfig,
        config,
        leader_elect: args.leader_elect,
        serve: (args.secure_port != 0)
            .then(|| std::net::SocketAddr::new(args.serving.bind_address, args.secure_port)),
        tls,
        access,
    };
    exit_code(kubeplane_live::run(opts))
}

/// The exit status of a live component's end: 0 stopped, 1 the lease lost (upstream's
/// message) or a failure, 2 bad input.
pub fn exit_code(result: Result<(), LiveError>) -> ExitCode {
    match result {
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

/// The certificate files and the access rules of the health and metrics port; an unreadable
/// or empty token file is an input error.
pub fn serving(args: &ServingArgs) -> Result<(TlsFiles, Access), String> {
    let tokens = match &args.authentication_token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--authentication-token-file {}: {e}", path.display()))?;
            let tokens = Access::parse_tokens(&text);
            if tokens.is_empty() {
                return Err("--authentication-token-file: the file holds no token".into());
            }
            tokens
        }
        None => Vec::new(),
    };
    let tls = TlsFiles {
        cert: args.tls_cert_file.clone(),
        key: args.tls_private_key_file.clone(),
    };
    let access = Access {
        tokens,
        always_allow: args.authorization_always_allow_paths.clone(),
    };
    Ok((tls, access))
}
