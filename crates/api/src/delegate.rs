//! [`delegate_client!`]: the methods of a [`Client`](crate::Client) wrapper that pass straight
//! through to the client it wraps, so a wrapper (a scheduler's queueing client, a test client
//! that fails on purpose) writes only the methods it changes.
//!
//! ```ignore
//! impl Client for RefusingBind<'_> {
//!     fn bind(&mut self, _: &str, _: &str, _: &str, _: &str) -> Result<Object, ApiError> {
//!         Err(self.error.clone())
//!     }
//!     kubeplane_api::delegate_client!(inner: cache, clock, get, create, update, update_status,
//!         patch_pod_status, delete, evict, update_scale, record_event, explain, emit_record);
//! }
//! ```

/// Expands to the named [`Client`](crate::Client) methods, each calling the same method of
/// `self.FIELD`. List every method the wrapper does not write itself.
#[macro_export]
macro_rules! delegate_client {
    ($field:tt: $($method:ident),+ $(,)?) => {
        $( $crate::delegate_client!(@one $field $method); )+
    };
    (@one $f:tt cache) => {
        fn cache(&self) -> &dyn $crate::Cache { self.$f.cache() }
    };
    (@one $f:tt clock) => {
        fn clock(&self) -> $crate::Clock { self.$f.clock() }
    };
    (@one $f:tt get) => {
        fn get(&mut self, key: &$crate::ObjectKey) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.get(key)
        }
    };
    (@one $f:tt create) => {
        fn create(&mut self, obj: $crate::Object) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.create(obj)
        }
    };
    (@one $f:tt update) => {
        fn update(&mut self, obj: $crate::Object) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.update(obj)
        }
    };
    (@one $f:tt update_status) => {
        fn update_status(
            &mut self,
            obj: $crate::Object,
        ) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.update_status(obj)
        }
    };
    (@one $f:tt patch_pod_status) => {
        fn patch_pod_status(
            &mut self,
            namespace: &str,
            name: &str,
            uid: &str,
            patch: &mut dyn FnMut(&mut $crate::__reexport::PodStatus),
        ) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.patch_pod_status(namespace, name, uid, patch)
        }
    };
    (@one $f:tt delete) => {
        fn delete(
            &mut self,
            key: &$crate::ObjectKey,
            opts: $crate::DeleteOptions,
        ) -> Result<Option<$crate::Object>, $crate::ApiError> {
            self.$f.delete(key, opts)
        }
    };
    (@one $f:tt evict) => {
        fn evict(
            &mut self,
            namespace: &str,
            name: &str,
            opts: $crate::DeleteOptions,
        ) -> Result<(), $crate::ApiError> {
            self.$f.evict(namespace, name, opts)
        }
    };
    (@one $f:tt bind) => {
        fn bind(
            &mut self,
            namespace: &str,
            name: &str,
            uid: &str,
            node: &str,
        ) -> Result<$crate::Object, $crate::ApiError> {
            self.$f.bind(namespace, name, uid, node)
        }
    };
    (@one $f:tt update_scale) => {
        fn update_scale(
            &mut self,
            key: &$crate::ObjectKey,
            replicas: i32,
            resource_version: Option<&str>,
        ) -> Result<$crate::__reexport::Scale, $crate::ApiError> {
            self.$f.update_scale(key, replicas, resource_version)
        }
    };
    (@one $f:tt record_event) => {
        fn record_event(&mut self, ev: $crate::__reexport::EventRecord) {
            self.$f.record_event(ev)
        }
    };
    (@one $f:tt explain) => {
        fn explain(&self) -> bool { self.$f.explain() }
    };
    (@one $f:tt emit_record) => {
        fn emit_record(&mut self, record: $crate::__reexport::Value) {
            self.$f.emit_record(record)
        }
    };
}

/// The types the macro names, so that a wrapper's crate need not depend on their crates.
#[doc(hidden)]
pub mod __reexport {
    pub use k8s_openapi::api::autoscaling::v1::Scale;
    pub use k8s_openapi::api::core::v1::PodStatus;
    pub use kubeplane_core::EventRecord;
    pub use serde_json::Value;
}
