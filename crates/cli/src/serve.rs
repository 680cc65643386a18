//! `kubeplane serve`: reads the FILE arguments as `simulate` does, checks the flags, and runs
//! the server (crates/server) until SIGINT or SIGTERM.

use std::process::ExitCode;

use kubeplane_server::clock::ClockMode;
use kubeplane_server::leader::Election;
use kubeplane_server::{Config, ServeError};
use kubeplane_sim::scenario::parse_files_for;

use crate::cli::{ClockArg, ServeArgs};
use crate::simulate::input_error;

pub fn run(args: ServeArgs) -> ExitCode {
    let flags = match checked_flags(&args) {
        Ok(f) => f,
        Err(e) => return input_error(e),
    };
    let files = match crate::inputs::read_inputs(&args.files, args.recursive) {
        Ok(f) => f,
        Err(e) => return input_error(e),
    };
    let version = args.kubernetes_version;
    // Without FILEs the cluster starts empty (but for the system namespaces).
    let mut input = if files.is_empty() {
        let scenario = kubeplane_sim::scenario::Scenario::for_version(version);
        kubeplane_sim::workloads::input(Vec::new(), scenario)
    } else {
        match parse_files_for(&files, version) {
            Ok(i) => i,
            Err(e) => return input_error(e),
        }
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
    let controllers = match kubeplane_controllers::manager::Selection::parse(&args.controllers) {
        Ok(s) => s,
        Err(e) => return input_error(format!("--controllers: {e}")),
    };
    let config = Config {
        listen: args.listen,
        data_dir: args.data_dir,
        etcd_servers: flags.etcd_servers,
        etcd_tls: flags.etcd_tls,
        etcd_prefix: Some(args.etcd_prefix.clone()),
        kubeconfig_out: args.kubeconfig_out,
        clock: flags.clock,
        api_only: args.api_only,
        controllers,
        leader_election: flags.leader_election,
        request_timeout: flags.request_timeout,
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

/// The flags that need checking, checked.
struct Flags {
    etcd_servers: Option<Vec<String>>,
    etcd_tls: Option<kubeplane_server::EtcdTls>,
    request_timeout: Option<std::time::Duration>,
    leader_election: Option<Election>,
    clock: ClockMode,
}

fn checked_flags(args: &ServeArgs) -> Result<Flags, String> {
    let etcd_servers = args.etcd_servers.as_deref().map(etcd_servers).transpose()?;
    let etcd_tls = etcd_tls(args, etcd_servers.as_deref())?;
    let request_timeout = args
        .request_timeout
        .as_deref()
        .map(|v| positive("--request-timeout", v))
        .transpose()?;
    let leader_election = election(args)?;
    let clock = match args.clock {
        ClockArg::Wall if args.speed != 1.0 => {
            return Err("--speed: only with --clock virtual (the wall clock runs at 1)".into())
        }
        ClockArg::Wall => ClockMode::Wall,
        ClockArg::Virtual if !(args.speed.is_finite() && args.speed > 0.0) => {
            return Err(format!(
                "--speed: must be a positive number, not {}",
                args.speed
            ))
        }
        ClockArg::Virtual => ClockMode::Virtual { speed: args.speed },
    };
    Ok(Flags {
        etcd_servers,
        etcd_tls,
        request_timeout,
        leader_election,
        clock,
    })
}

/// The client URLs of `--etcd-servers URL[,URL...]` (kube-apiserver's flag): each `http://`,
/// or `https://` with `--etcd-cafile`.
fn etcd_servers(flag: &str) -> Result<Vec<String>, String> {
    let urls: Vec<String> = flag
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(String::from)
        .collect();
    if urls.is_empty() {
        return Err("--etcd-servers: no URL given".into());
    }
    match urls
        .iter()
        .find(|u| !u.starts_with("http://") && !u.starts_with("https://"))
    {
        Some(u) => Err(format!(
            "--etcd-servers: {u}: not an http:// or https:// URL"
        )),
        None => Ok(urls),
    }
}

/// TLS to etcd: `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile` (kube-apiserver's
/// flags), read now; every URL must then be `https://`, and `https://` URLs need the CA (no
/// system roots are built in).
fn etcd_tls(
    args: &ServeArgs,
    servers: Option<&[String]>,
) -> Result<Option<kubeplane_server::EtcdTls>, String> {
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
    };
    let ca = args
        .etcd_cafile
        .as_deref()
        .map(|p| read("--etcd-cafile", p))
        .transpose()?;
    let cert_and_key = match (&args.etcd_certfile, &args.etcd_keyfile) {
        (Some(c), Some(k)) => Some((read("--etcd-certfile", c)?, read("--etcd-keyfile", k)?)),
        (None, None) => None,
        _ => return Err("--etcd-certfile and --etcd-keyfile go together".into()),
    };
    let https = servers.is_some_and(|s| s.iter().any(|u| u.starts_with("https://")));
    match (servers, ca.is_some() || cert_and_key.is_some()) {
        (None, true) => Err(
            "--etcd-cafile, --etcd-certfile and --etcd-keyfile: only with --etcd-servers".into(),
        ),
        (Some(s), true) if s.iter().any(|u| u.starts_with("http://")) => {
            Err("--etcd-servers: with TLS to etcd every URL must be https://".into())
        }
        _ if https && ca.is_none() => {
            Err("--etcd-servers: https:// URLs need --etcd-cafile".into())
        }
        (_, true) => Ok(Some(kubeplane_server::EtcdTls { ca, cert_and_key })),
        (_, false) => Ok(None),
    }
}

/// The election of the servers on one etcd (`--leader-elect-*`, kube-controller-manager's
/// flags); `None` without `--etcd-servers`, where the one server runs the control plane.
fn election(args: &ServeArgs) -> Result<Option<Election>, String> {
    let flags = [
        (
            "--leader-elect-lease-duration",
            &args.leader_elect_lease_duration,
        ),
        (
            "--leader-elect-renew-deadline",
            &args.leader_elect_renew_deadline,
        ),
        (
            "--leader-elect-retry-period",
            &args.leader_elect_retry_period,
        ),
    ];
    if args.etcd_servers.is_none() {
        return match flags.iter().find(|(_, v)| v.is_some()) {
            Some((flag, _)) => Err(format!("{flag}: only with --etcd-servers")),
            None => Ok(None),
        };
    }
    let mut e = Election::default();
    let targets = [
        &mut e.lease_duration,
        &mut e.renew_deadline,
        &mut e.retry_period,
    ];
    for ((flag, value), target) in flags.iter().zip(targets) {
        if let Some(v) = value {
            *target = positive(flag, v)?;
        }
    }
    e.validate()?;
    Ok(Some(e))
}

/// A duration flag's value (`90s`, `1m`), which must be positive.
fn positive(flag: &str, value: &str) -> Result<std::time::Duration, String> {
    let d =
        kubeplane_core::duration::parse_duration(value).map_err(|err| format!("{flag}: {err}"))?;
    if d.0 <= 0 {
        return Err(format!("{flag}: must be greater than zero"));
    }
    Ok(std::time::Duration::from_nanos(d.0 as u64))
}
