//! DefaultBinder (Bind): binds the pod through the pods/binding subresource (upstream
//! `plugins/defaultbinder/default_binder.go`).

use kubeplane_api::Client;

use crate::framework::{BindPlugin, CycleState, Plugin, PodInfo, Status};

pub const NAME: &str = "DefaultBinder";

#[derive(Debug, Default)]
pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

impl BindPlugin for DefaultBinder {
    fn bind(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
        client: &mut dyn Client,
    ) -> Status {
        match client.bind(pod.namespace(), pod.name(), pod.uid(), node) {
            Ok(_) => Status::success(),
            Err(e) => Status::error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubeplane_api::{Kind, Object};
    use kubeplane_registry::testing::TestClient;

    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::PodBuilder;
    use kubeplane_api::PodExt;

    #[test]
    fn bind() {
        let mut client = TestClient::new(0);
        let created = kubeplane_registry::client::create(
            &mut client.store,
            Object::Pod(Arc::new(PodBuilder::new("foo").obj().into())),
            client.now,
        )
        .unwrap();
        let pod = PodInfo::new(created.as_pod().unwrap().clone());

        let st = DefaultBinder.bind(&mut CycleState::new(), &pod, "foohost", &mut client);
        assert_eq!(st, Status::success(), "binding an existing pod succeeds");
        let stored = client.store.get(Kind::Pod, "default", "foo").unwrap();
        let bound = stored.as_pod().unwrap();
        assert_eq!(
            bound.node_name(),
            Some("foohost"),
            "the binding sets spec.nodeName"
        );

        let st = DefaultBinder.bind(&mut CycleState::new(), &pod, "other", &mut client);
        assert_eq!(st.code, Code::Error, "an API error becomes an Error status");
    }
}
