//! `kubeplane compare`: the same input run once per KubeSchedulerConfiguration, and the
//! measures of each run side by side (see [`measures`] for what is measured and how pods of two
//! runs are matched, [`render`] for the table and the JSON document).

mod measures;
mod render;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use kubeplane_sim::scenario::{parse_files_for, Input};
use kubeplane_sim::{RunOptions, Simulation};

use crate::cli::{CompareArgs, CompareFormat};
use crate::simulate::input_error;

/// The `--config` value that names the built-in default profile.
const DEFAULT: &str = "default";

/// Reads and parses the FILEs once, as `simulate` does.
fn load_input(args: &CompareArgs) -> Result<Input, String> {
    let files = crate::inputs::read_inputs(&args.files, args.recursive)?;
    parse_files_for(&files, args.kubernetes_version).map_err(|e| e.to_string())
}

/// The input with this configuration: `default` drops the input's own configurations, a file's
/// configuration comes last (and so wins, as with `simulate --scheduler-config`).
fn configure(input: &Input, config: &str) -> Result<Input, String> {
    let mut input = input.clone();
    if config == DEFAULT {
        input.scheduler_configs.clear();
        return Ok(input);
    }
    let (source, value) = crate::inputs::read_scheduler_config(Path::new(config), "--config")?;
    if let Some(kind) = value.get("kind").and_then(|k| k.as_str()) {
        if kind != "KubeSchedulerConfiguration" {
            return Err(format!(
                "{config}: --config takes a KubeSchedulerConfiguration, not a {kind}"
            ));
        }
    }
    input.scheduler_configs.push((source, value));
    Ok(input)
}

/// The column names: each configuration's file stem (`default` for the default profile), or
/// the path as given when two stems are the same.
fn column_names(configs: &[String]) -> Vec<String> {
    let stem = |c: &String| {
        Path::new(c)
            .file_stem()
            .map_or_else(|| c.clone(), |s| s.to_string_lossy().into_owned())
    };
    let stems: Vec<String> = configs.iter().map(stem).collect();
    configs
        .iter()
        .zip(&stems)
        .map(|(c, s)| {
            if stems.iter().filter(|t| *t == s).count() > 1 {
                c.clone()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Sets up one simulation per configuration (so that a bad one stops everything before any
/// run), then runs them one after the other.
fn run_all(args: &CompareArgs, input: &Input) -> Result<Vec<measures::Run>, String> {
    let until = match &args.until {
        Some(u) => {
            Some(kubeplane_core::duration::parse_duration(u).map_err(|e| format!("--until: {e}"))?)
        }
        None => None,
    };
    let opts = RunOptions {
        until,
        seed: args.seed,
        ..RunOptions::default()
    };
    let mut sims = Vec::new();
    for config in &args.configs {
        let input = configure(input, config)?;
        sims.push(Simulation::new(input, &opts).map_err(|e| e.to_string())?);
    }
    let names = column_names(&args.configs);
    let mut runs = Vec::new();
    for ((mut sim, name), config) in sims.into_iter().zip(names).zip(&args.configs) {
        // On a thread of the pool, as `simulate` runs: parallel filtering keeps part of the
        // work on this thread.
        let result = rayon::scope(|_| sim.run(&mut |_, _| {}));
        let records = sim.take_records();
        let error = result.err().map(|e| e.to_string());
        runs.push(measures::measure(
            name,
            config.clone(),
            &sim,
            &records,
            error,
        ));
    }
    measures::compare_placements(&mut runs);
    Ok(runs)
}

pub fn run(args: CompareArgs) -> ExitCode {
    let input = match load_input(&args) {
        Ok(input) => input,
        Err(e) => return input_error(e),
    };
    if std::io::stderr().is_terminal() {
        crate::simulate::note_unmodelled(input.scenario.kubernetes_version);
    }
    let runs = match run_all(&args, &input) {
        Ok(runs) => runs,
        Err(e) => return input_error(e),
    };
    let text = match args.output {
        CompareFormat::Table => render::table(&runs),
        CompareFormat::Json => render::json(&runs),
    };
    // A closed pipe (e.g. `| head`) is not an error of the comparison.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if runs.iter().all(measures::Run::succeeded) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_by_file_stem_and_by_path_when_stems_collide() {
        let configs: Vec<String> = ["default", "a/pack.yaml", "b/pack.yaml", "c/spread.yml"]
            .map(String::from)
            .into();
        assert_eq!(
            column_names(&configs),
            ["default", "a/pack.yaml", "b/pack.yaml", "spread"]
        );
    }
}
