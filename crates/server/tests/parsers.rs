//! The request parsers never panic, whatever the bytes: paths, queries, selectors, protobuf
//! and JSON/YAML bodies, Accept headers, DeleteOptions, and a custom resource definition's
//! printer-column JSONPaths and schema patterns.

use kubeplane_api::Kind;
use kubeplane_server::fields::FieldSelector;
use kubeplane_server::request::{parse_path, Query};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn printer_column_paths_and_schema_patterns_never_panic(path in ".{0,40}") {
        let v = serde_json::json!({"spec": {"a": [1, {"k": "v"}], "b": "x"}});
        let _ = kubeplane_server::crds::columns::find(&v, &path);
        let schema = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"b": {"type": "string", "pattern": path}}}}});
        let _ = kubeplane_server::crds::schema::validate(&schema, &v, "");
    }

    #[test]
    fn paths_and_queries_never_panic(path in "(/[a-z0-9.%{}-]{0,12}){0,8}", query in ".{0,60}") {
        let _ = parse_path(&path, &kubeplane_server::crds::CustomResources::default());
        let q = Query::parse(Some(&query));
        let _ = q.number("limit");
        let _ = q.dry_run();
        let _ = kubeplane_server::table::requested(&query, &q);
    }

    #[test]
    fn selectors_never_panic(s in ".{0,80}") {
        let _ = FieldSelector::parse(&s, Kind::Pod);
        let q = Query::parse(Some(&format!("labelSelector={s}&fieldSelector={s}")));
        let _ = kubeplane_server::list::Filter::from_query(&q, Kind::Pod);
    }

    #[test]
    fn bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut framed = b"k8s\0".to_vec();
        framed.extend_from_slice(&bytes);
        let _ = kubeplane_server::proto::decode(&framed);
        for ct in ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"] {
            if let Ok(v) = kubeplane_server::handlers::parse_body(&bytes, ct) {
                let _ = kubeplane_server::handlers::delete_options(Some(&v), &Query::default());
            }
        }
    }
}
