//! Compaction of [`crate::EtcdStorage`]: on request, and kube-apiserver's compactor on a
//! schedule (`--etcd-compaction-interval`, 5 minutes by default); the watch log forgets the
//! compacted events with etcd.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::Client;

use crate::api::{Result, Revision};
use crate::etcd::{revision_of, EtcdStorage};
use crate::etcd_health::Failure;
use crate::etcd_log::Log;

impl<V: Clone + Send + Sync + 'static> EtcdStorage<V> {
    /// Compacts etcd at `revision` and the log with it.
    pub(crate) fn compact_at(&self, revision: Revision) -> Result<()> {
        match self.call(|c| compact_etcd(c, revision)) {
            Ok(_) | Err(Failure::Compacted) => {}
            Err(f) => return Err(self.error(f, None)),
        }
        self.log.compact(revision);
        Ok(())
    }
}

/// Compacts etcd's history up to `revision`.
async fn compact_etcd(
    mut client: Client,
    revision: Revision,
) -> std::result::Result<(), etcd_client::Error> {
    client.compact(revision as i64, None).await.map(|_| ())
}

/// kube-apiserver's compactor: every interval, compact at the revision the previous interval
/// ended at, so one interval of history stays watchable.
pub(crate) struct Compactor<V> {
    pub(crate) client: Client,
    pub(crate) log: Arc<Log<V>>,
}

impl<V> Compactor<V> {
    pub(crate) async fn run(self, interval: Duration) {
        let mut last: Option<Revision> = None;
        loop {
            tokio::time::sleep(interval).await;
            let Ok(now) = revision_of(self.client.clone(), b"/".to_vec()).await else {
                continue;
            };
            if let Some(revision) = last.filter(|r| *r > self.log.lock().oldest()) {
                match compact_etcd(self.client.clone(), revision).await {
                    Ok(_) => self.log.compact(revision),
                    Err(e) => eprintln!("kubeplane storage: etcd compaction at {revision}: {e}"),
                }
            }
            last = Some(now);
        }
    }
}
