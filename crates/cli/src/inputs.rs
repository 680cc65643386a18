//! The FILE arguments of `simulate`: files, standard input (`-`) and directories, read as
//! `kubectl apply -f` reads them. A directory contributes its `*.yaml`, `*.yml` and `*.json`
//! files in name order (byte order, as Go's `filepath.Walk`), and with `-R` the files of its
//! subdirectories too, each subdirectory at its place in that order.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The extensions kubectl reads from a directory (upstream `FileExtensions`).
const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// One input: the name errors show, and its text.
pub type Input = (String, String);

/// Reads every FILE argument in order; a directory becomes the files it holds.
pub fn read_inputs(args: &[String], recursive: bool) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for arg in args {
        if arg == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("-: cannot read standard input: {e}"))?;
            out.push((arg.clone(), s));
            continue;
        }
        let path = Path::new(arg);
        if path.is_dir() {
            let before = out.len();
            read_dir(path, recursive, &mut out)?;
            if out.len() == before {
                return Err(format!(
                    "{arg}: no .yaml, .yml or .json files in this directory{}",
                    if recursive {
                        " or below it"
                    } else {
                        " (-R reads its subdirectories)"
                    }
                ));
            }
        } else {
            out.push((arg.clone(), read_file(path)?));
        }
    }
    Ok(out)
}

/// Reads a KubeSchedulerConfiguration file given with `flag` (one file, one YAML document), as
/// the input's own KubeSchedulerConfiguration documents are kept: its document and where it
/// came from. Errors name the file.
pub fn read_scheduler_config(
    path: &Path,
    flag: &str,
) -> Result<(kubeplane_sim::scenario::Source, serde_json::Value), String> {
    let name = path.display().to_string();
    let text = match read_inputs(std::slice::from_ref(&name), false) {
        Ok(mut inputs) if inputs.len() == 1 => inputs.remove(0).1,
        Ok(_) => return Err(format!("{name}: {flag} takes one file")),
        Err(e) => return Err(e),
    };
    let value =
        kubeplane_sim::scenario::parse_yaml_document(&name, &text).map_err(|e| e.to_string())?;
    let source = kubeplane_sim::scenario::Source {
        file: name,
        doc_index: 0,
        item: None,
        kind: "KubeSchedulerConfiguration".into(),
        namespace: String::new(),
        name: String::new(),
    };
    Ok((source, value))
}

fn read_file(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

fn read_dir(dir: &Path, recursive: bool, out: &mut Vec<Input>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: cannot read: {e}", dir.display()))?;
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if recursive {
                read_dir(&path, recursive, out)?;
            }
        } else if has_manifest_extension(&path) {
            out.push((path.display().to_string(), read_file(&path)?));
        }
    }
    Ok(())
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("b-sub/deeper")).unwrap();
        for (name, text) in [
            ("c.yaml", "c"),
            ("a.yml", "a"),
            ("b.json", "b"),
            ("notes.txt", "ignored"),
            ("README.md", "ignored"),
            ("b-sub/x.yaml", "x"),
            ("b-sub/deeper/y.json", "y"),
        ] {
            std::fs::write(p.join(name), text).unwrap();
        }
        dir
    }

    fn texts(inputs: &[Input]) -> Vec<&str> {
        inputs.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn a_directory_gives_its_manifests_in_name_order() {
        let dir = tree();
        let arg = dir.path().display().to_string();
        let inputs = read_inputs(&[arg], false).unwrap();
        assert_eq!(texts(&inputs), ["a", "b", "c"]);
        assert!(inputs[0].0.ends_with("a.yml"), "{}", inputs[0].0);
    }

    #[test]
    fn recursion_visits_subdirectories_at_their_place_in_the_order() {
        let dir = tree();
        let arg = dir.path().display().to_string();
        let inputs = read_inputs(&[arg], true).unwrap();
        // `b-sub` sorts before `b.json` ('-' < '.'), as in Go's filepath.Walk.
        assert_eq!(texts(&inputs), ["a", "y", "x", "b", "c"]);
    }

    #[test]
    fn a_directory_without_manifests_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.yaml"), "x").unwrap();
        let arg = dir.path().display().to_string();
        let err = read_inputs(std::slice::from_ref(&arg), false).unwrap_err();
        assert!(err.starts_with(&arg) && err.contains("-R"), "{err}");
        assert_eq!(texts(&read_inputs(&[arg], true).unwrap()), ["x"]);
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let err = read_inputs(&["/nonexistent/x.yaml".into()], false).unwrap_err();
        assert!(err.starts_with("/nonexistent/x.yaml: cannot read"), "{err}");
    }
}
