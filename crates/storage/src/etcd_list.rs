//! The lists of [`crate::EtcdStorage`]: pages of a prefix's keys read from etcd at one pinned
//! revision (a list is a consistent read: it sees every write etcd acknowledged before it).

use etcd_client::GetOptions;

use crate::api::{ListOptions, ListPage, Result, Revision, StorageError};
use crate::etcd::{header_revision, EtcdStorage};
use crate::key::Prefix;

impl<V: Clone + Send + Sync + 'static> EtcdStorage<V> {
    /// A page of a list: ranges of the prefix's etcd keys at one revision (the first one's,
    /// when the options name none), skipping the keys that are not the prefix's, until the
    /// page holds `limit` items and one more shows that more follow.
    pub(crate) fn list_page(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>> {
        let (mut start, end) = self.layout.range(prefix);
        if let Some(after) = &options.continue_after {
            let mut next = self.layout.key(after);
            next.push(0);
            start = start.max(next);
        }
        let mut at = options.at;
        let mut queried = false;
        let mut items = Vec::new();
        let want = if options.limit == 0 {
            usize::MAX
        } else {
            options.limit + 1
        };
        while start < end && items.len() < want {
            let batch = want.saturating_sub(items.len()).min(1000) as i64;
            let get = GetOptions::new()
                .with_range(end.clone())
                .with_revision(at.unwrap_or(0) as i64)
                .with_limit(batch);
            let mut response = self
                .call(|mut c| {
                    let (from, get) = (start.clone(), get.clone());
                    async move { c.get(from, Some(get)).await }
                })
                .map_err(|f| self.error(f, at))?;
            queried = true;
            at = Some(at.unwrap_or(header_revision(response.header())));
            let more = response.more();
            let kvs = response.take_kvs();
            if let Some(last) = kvs.last() {
                start = last.key().to_vec();
                start.push(0);
            }
            for kv in &kvs {
                if let Some(key) = self.layout.parse(kv.key()).filter(|k| prefix.contains(k)) {
                    items.push((key, self.decode(kv)?));
                }
            }
            if !more {
                break;
            }
        }
        let continue_after = if items.len() > options.limit && options.limit != 0 {
            items.truncate(options.limit);
            items.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        let revision = match at {
            Some(r) if queried => r,
            // Nothing was read (the page starts past the prefix's range): check the revision.
            at => self.unread_revision(at)?,
        };
        Ok(ListPage {
            items,
            revision,
            continue_after,
        })
    }

    /// The revision of a read that asked etcd nothing: `at` if etcd has reached it, else the
    /// current one.
    fn unread_revision(&self, at: Option<Revision>) -> Result<Revision> {
        let current = self.etcd_revision()?;
        match at {
            Some(r) if r > current => Err(StorageError::FutureRevision {
                requested: r,
                current,
            }),
            at => Ok(at.unwrap_or(current)),
        }
    }
}
