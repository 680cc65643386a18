//! Lease renewals of the node agents: a full update of the Lease the agent last wrote (as a
//! kubelet renews it without reading it first), or with `simulate`'s agents a quiet write of
//! the same change ([`NodeAgents::with_quiet_renewals`]): the store and every
//! resourceVersion end as the updates would leave them, without a watch event per renewal.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kubeplane_core::SimTime;
use kubeplane_store::{ApiError, Client, Kind, Object};

use super::{NodeAgents, LEASE_DURATION_SECS, NODE_LEASE_NAMESPACE};

impl NodeAgents {
    pub(super) fn renew_lease(&mut self, i: usize, now: SimTime, client: &mut dyn Client) {
        let renew = self.renew_time(now, client.clock().start());
        if self.quiet_renewals && self.renew_quietly(i, renew, client) {
            return;
        }
        let renew = MicroTime(renew);
        // The agent owns its Lease: it renews the version it last wrote, without reading it.
        let result = match self.nodes[i].lease.as_ref().map(|(l, _)| Arc::clone(l)) {
            Some(l) => {
                let mut l = Lease::clone(&l);
                let spec = l.spec.get_or_insert_with(Default::default);
                spec.renew_time = Some(renew);
                l.metadata.resource_version = None;
                client.update(Object::Lease(Arc::new(l)))
            }
            None => self.read_or_create_lease(i, renew, client),
        };
        match result {
            Ok(Object::Lease(l)) => {
                let rv = l.metadata.resource_version.as_deref().unwrap_or("");
                let rv = rv.parse().unwrap_or(0);
                self.nodes[i].lease = Some((l, rv));
                self.leases_renewed += 1;
            }
            // Deleted or replaced by someone else: read it again next time.
            _ => self.nodes[i].lease = None,
        }
    }

    /// The renewTime of a renewal at `now`: the instant's timestamp, computed once for all the
    /// renewals of the instant (all the nodes' Leases fall due together).
    fn renew_time(&mut self, now: SimTime, start: jiff::Timestamp) -> jiff::Timestamp {
        match self.renew_stamp {
            Some((at, from, ts)) if at == now && from == start => ts,
            _ => {
                let ts = now.to_timestamp(start);
                self.renew_stamp = Some((now, start, ts));
                ts
            }
        }
    }

    /// A quiet renewal of the Lease the agent last wrote; false when a full update must do it
    /// (no Lease written yet, someone else wrote it since, or the client has no quiet writes).
    fn renew_quietly(&mut self, i: usize, renew: jiff::Timestamp, client: &mut dyn Client) -> bool {
        let node = &mut self.nodes[i];
        let Some((_, rv)) = &mut node.lease else {
            return false;
        };
        match client.renew_lease_quietly(
            NODE_LEASE_NAMESPACE,
            &node.name,
            renew,
            *rv,
            &mut node.lease_slot,
        ) {
            Some(Ok(new_rv)) => {
                *rv = new_rv;
                self.leases_renewed += 1;
                true
            }
            // Deleted: read it again next time, as after a failed update.
            Some(Err(e)) if e.is_not_found() => {
                node.lease = None;
                true
            }
            _ => false,
        }
    }

    /// The node's Lease renewed from what the cache holds, or created when there is none.
    fn read_or_create_lease(
        &self,
        i: usize,
        renew: MicroTime,
        client: &mut dyn Client,
    ) -> Result<Object, ApiError> {
        let name = self.nodes[i].name.clone();
        let existing = client
            .cache()
            .get(Kind::Lease, NODE_LEASE_NAMESPACE, &name)
            .cloned();
        match existing {
            Some(Object::Lease(l)) => {
                let mut l = Lease::clone(&l);
                l.spec.get_or_insert_with(Default::default).renew_time = Some(renew);
                l.metadata.resource_version = None;
                client.update(Object::Lease(Arc::new(l)))
            }
            _ => client.create(Object::Lease(Arc::new(Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(NODE_LEASE_NAMESPACE.to_string()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(name),
                    lease_duration_seconds: Some(LEASE_DURATION_SECS),
                    renew_time: Some(renew.clone()),
                    acquire_time: Some(renew),
                    ..Default::default()
                }),
            }))),
        }
    }
}

#[cfg(test)]
mod tests;
