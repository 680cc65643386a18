//! The custom resource types of an input: every CustomResourceDefinition of every file (at
//! the top level or in a `v1` List), read before the documents are, so a custom resource may
//! come before its definition, or in another file, as with `kubectl apply -f` of a directory
//! that a `helm template` wrote. The definitions' own problems are reported where they are
//! loaded in document order; here a definition that does not make a type is skipped.

use kubeplane_api::types::{self, ResourceType};
use kubeplane_api::DynamicObject;
use kubeplane_registry::validation::apiextensions::{definition, Definition};
use serde_json::Value;

use super::parse::read_documents;

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";

/// The definitions of an input, in the order read (the first of two for one kind wins).
#[derive(Default)]
pub(crate) struct Crds {
    defs: Vec<(Definition, &'static ResourceType)>,
}

/// What the input's definitions say about an `apiVersion` and `kind`.
pub(crate) enum Lookup {
    /// A custom resource type a definition serves at this version.
    Served(&'static ResourceType),
    /// A definition of this group and kind that does not serve the version: the versions it
    /// serves, and its name.
    NotServed { served: Vec<String>, crd: String },
    /// No definition of this group and kind.
    Unknown,
}

impl Crds {
    /// The definitions of the files (display name, content), read as the loader reads them
    /// (flow depth first, so a hostile file fails fast here too). Only files that mention the
    /// kind are parsed twice; a file that does not read is left to the loader to report.
    pub(crate) fn scan(files: &[(String, String)]) -> Crds {
        let mut crds = Crds::default();
        let crd_type = types::builtin(CRD_API_VERSION, CRD_KIND).expect("a built-in kind");
        for (name, content) in files.iter().filter(|(_, c)| c.contains(CRD_KIND)) {
            let _ = read_documents(name, content, |_, v| {
                match (field(&v, "apiVersion"), field(&v, "kind")) {
                    ("v1", "List") => {
                        let items = v.get("items").and_then(Value::as_array);
                        items
                            .into_iter()
                            .flatten()
                            .for_each(|i| crds.add(crd_type, i));
                    }
                    _ => crds.add(crd_type, &v),
                }
                Ok(())
            });
        }
        crds
    }

    fn add(&mut self, crd_type: &'static ResourceType, v: &Value) {
        if (field(v, "apiVersion"), field(v, "kind")) != (CRD_API_VERSION, CRD_KIND) {
            return;
        }
        let Ok(crd) = DynamicObject::from_value(crd_type, v) else {
            return;
        };
        if let Ok(def) = definition(&crd) {
            let t = types::intern(&def.type_);
            self.defs.push((def, t));
        }
    }

    /// The custom resource type of a manifest's `apiVersion` and `kind`.
    pub(crate) fn lookup(&self, api_version: &str, kind: &str) -> Lookup {
        let mut not_served = None;
        for (def, t) in &self.defs {
            match def.serves(api_version, kind) {
                Some(true) => return Lookup::Served(t),
                Some(false) => {
                    not_served.get_or_insert_with(|| Lookup::NotServed {
                        served: def.served.clone(),
                        crd: format!("{}.{}", def.type_.plural, def.type_.group),
                    });
                }
                None => {}
            }
        }
        not_served.unwrap_or(Lookup::Unknown)
    }
}

fn field<'a>(v: &'a Value, name: &str) -> &'a str {
    v.get(name).and_then(Value::as_str).unwrap_or("")
}
