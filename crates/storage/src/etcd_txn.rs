//! The write transactions of [`crate::EtcdStorage`], in kube-apiserver's shapes: a create puts
//! the key only if its mod revision is 0; an update or a delete changes it only if it exists
//! and, when given an expected revision, its mod revision is that one; otherwise the
//! transaction reads the key back, and the answer is AlreadyExists, NotFound or Conflict.
//! A write returns once the watch log has its event.

use std::sync::Arc;

use etcd_client::{
    Compare, CompareOp, DeleteOptions, PutOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};

use crate::api::{Event, EventKind, Result, Revision, StorageError, Versioned};
use crate::etcd::{header_revision, unavailable, EtcdStorage};
use crate::key::Key;

impl<V: Clone + Send + Sync + 'static> EtcdStorage<V> {
    /// Runs a write transaction; returns its response and the write's revision once the watch
    /// log has it.
    fn transact(&self, txn: Txn) -> Result<TxnResponse> {
        let response = self
            .call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .map_err(|f| self.error(f, None))?;
        if response.succeeded() {
            self.log
                .wait_seen(header_revision(response.header()), self.timeout);
        }
        Ok(response)
    }

    /// The error of an update or delete whose transaction failed: what its read-back found.
    fn precondition_error(
        &self,
        key: &Key,
        expected: Option<Revision>,
        response: &TxnResponse,
    ) -> StorageError {
        let found = response.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.mod_revision() as Revision),
            _ => None,
        });
        match (found, expected) {
            (Some(actual), Some(expected)) => StorageError::Conflict {
                key: key.clone(),
                expected,
                actual,
            },
            _ => StorageError::NotFound { key: key.clone() },
        }
    }

    /// The conditions of an update or delete: the key exists and, when given, has the
    /// expected mod revision.
    fn conditions(raw: &[u8], expected: Option<Revision>) -> Vec<Compare> {
        let mut when = vec![Compare::version(raw.to_vec(), CompareOp::Greater, 0)];
        if let Some(e) = expected {
            when.push(Compare::mod_revision(
                raw.to_vec(),
                CompareOp::Equal,
                e as i64,
            ));
        }
        when
    }

    /// The version a successful put or delete of `key` replaced: the previous version of the
    /// log's event at the write's revision (`transact` waited for it), else the one in the
    /// write's response, decoded.
    fn replaced(&self, key: &Key, response: &TxnResponse) -> Result<Versioned<V>> {
        let revision = header_revision(response.header());
        let logged = self.log.lock().event_at(revision, key);
        if let Some(prev) = logged.and_then(|e| e.prev.clone()) {
            return Ok(prev);
        }
        let prev = response.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Put(p) => p.prev_key().cloned(),
            TxnOpResponse::Delete(d) => d.prev_kvs().first().cloned(),
            _ => None,
        });
        match prev {
            Some(kv) => self.decode(&kv),
            None => Err(unavailable("the write's response has no previous version")),
        }
    }

    /// Creates `key` if its mod revision is 0.
    pub(crate) fn create_key(&self, key: &Key, mut value: V) -> Result<Arc<Event<V>>> {
        let raw = self.layout.key(key);
        let txn = Txn::new()
            .when(vec![Compare::mod_revision(
                raw.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(raw, self.encode(&value), None)]);
        let response = self.transact(txn)?;
        if !response.succeeded() {
            return Err(StorageError::AlreadyExists { key: key.clone() });
        }
        let revision = header_revision(response.header());
        self.codec.stamp(&mut value, revision);
        Ok(Arc::new(Event {
            kind: EventKind::Added,
            key: key.clone(),
            revision,
            current: Some(Versioned {
                value,
                create_revision: revision,
                mod_revision: revision,
            }),
            prev: None,
        }))
    }

    /// Replaces `key` if it exists with the expected mod revision.
    pub(crate) fn update_key(
        &self,
        key: &Key,
        mut value: V,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<V>>> {
        let raw = self.layout.key(key);
        let put = PutOptions::new().with_prev_key();
        let txn = Txn::new()
            .when(Self::conditions(&raw, expected))
            .and_then(vec![TxnOp::put(
                raw.clone(),
                self.encode(&value),
                Some(put),
            )])
            .or_else(vec![TxnOp::get(raw, None)]);
        let response = self.transact(txn)?;
        if !response.succeeded() {
            return Err(self.precondition_error(key, expected, &response));
        }
        let revision = header_revision(response.header());
        let prev = self.replaced(key, &response)?;
        self.codec.stamp(&mut value, revision);
        Ok(Arc::new(Event {
            kind: EventKind::Modified,
            key: key.clone(),
            revision,
            current: Some(Versioned {
                value,
                create_revision: prev.create_revision,
                mod_revision: revision,
            }),
            prev: Some(prev),
        }))
    }

    /// Deletes `key` if it exists with the expected mod revision.
    pub(crate) fn delete_key(
        &self,
        key: &Key,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<V>>> {
        let raw = self.layout.key(key);
        let delete = DeleteOptions::new().with_prev_key();
        let txn = Txn::new()
            .when(Self::conditions(&raw, expected))
            .and_then(vec![TxnOp::delete(raw.clone(), Some(delete))])
            .or_else(vec![TxnOp::get(raw, None)]);
        let response = self.transact(txn)?;
        if !response.succeeded() {
            return Err(self.precondition_error(key, expected, &response));
        }
        Ok(Arc::new(Event {
            kind: EventKind::Deleted,
            key: key.clone(),
            revision: header_revision(response.header()),
            current: None,
            prev: Some(self.replaced(key, &response)?),
        }))
    }
}
