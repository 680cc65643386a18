//! What kubeplane prints about itself: shell completions and the man page (both generated from
//! the flag definitions in `cli.rs`) and the JSON Schema of the Scenario document.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::Cli;

/// The JSON Schema of the `kubeplane.io/v1alpha1` Scenario document. It follows what the
/// scenario parser accepts (`crates/sim/src/scenario/parse.rs`); a test validates every
/// example's Scenario against it.
pub const SCENARIO_SCHEMA: &str = include_str!("scenario.schema.json");

fn write_out(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe is not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to standard output: {e}");
            ExitCode::from(1)
        }
    }
}

/// `kubeplane completion SHELL`.
pub fn completion(shell: clap_complete::Shell) -> ExitCode {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubeplane", &mut buf);
    write_out(&buf)
}

/// `kubeplane man`: the man page in roff, with a section per subcommand.
pub fn man() -> ExitCode {
    let cmd = Cli::command();
    let mut buf = Vec::new();
    let mut render = || -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        man.render_title(&mut buf)?;
        man.render_name_section(&mut buf)?;
        man.render_synopsis_section(&mut buf)?;
        man.render_description_section(&mut buf)?;
        man.render_options_section(&mut buf)?;
        man.render_subcommands_section(&mut buf)?;
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = format!("kubeplane {}", sub.get_name());
            buf.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
            // The subcommand's own sections, as subsections of its section.
            let mut sub_buf = Vec::new();
            let sub_man =
                clap_mangen::Man::new(sub.clone().bin_name(name.clone()).display_name(name));
            sub_man.render_synopsis_section(&mut sub_buf)?;
            sub_man.render_description_section(&mut sub_buf)?;
            sub_man.render_options_section(&mut sub_buf)?;
            for line in String::from_utf8_lossy(&sub_buf).lines() {
                let line = line
                    .strip_prefix(".SH ")
                    .map_or(line.to_string(), |h| format!(".SS {h}"));
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
            }
        }
        man.render_version_section(&mut buf)?;
        Ok(())
    };
    if let Err(e) = render() {
        eprintln!("error: cannot render the man page: {e}");
        return ExitCode::from(1);
    }
    write_out(&buf)
}

/// `kubeplane schema`.
pub fn schema() -> ExitCode {
    write_out(SCENARIO_SCHEMA.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_json() {
        let v: serde_json::Value = serde_json::from_str(SCENARIO_SCHEMA).unwrap();
        assert_eq!(v["title"], "kubeplane Scenario (kubeplane.io/v1alpha1)");
    }

    #[test]
    fn the_flag_definitions_are_consistent() {
        Cli::command().debug_assert();
    }
}
