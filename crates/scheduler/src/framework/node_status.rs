//! The failing Filter statuses of one scheduling cycle, per node (upstream `NodeToStatus`, a
//! map from node name to status).
//!
//! Upstream keys the statuses by node name. Here they are kept per place in the cycle's
//! snapshot node list (the snapshot the filters ran on, which PostFilter reads too), and each
//! distinct status is kept once: when a pod fits few nodes, thousands of nodes fail, nearly
//! all with one of a few statuses ("Insufficient cpu"), and a name and a status per node cost
//! more than the filters. Readers that have a name look its place up in the snapshot.

use crate::framework::status::Status;
use crate::plugins::helper::FxHashMap;

/// A distinct status of a [`NodeToStatus`].
pub type StatusId = u32;

/// Past this many distinct statuses, [`NodeToStatus::intern`] looks them up in a hash map
/// instead of comparing with each.
const LINEAR_INTERN: usize = 8;

/// Per place in the snapshot's node list, the status with which the node failed. See the
/// module documentation.
#[derive(Clone, Debug, Default)]
pub struct NodeToStatus {
    /// Per place: 0 for none, else one more than the index in `distinct`.
    places: Vec<StatusId>,
    /// Each distinct status once.
    distinct: Vec<Status>,
    /// Per distinct status, how many places have it.
    counts: Vec<usize>,
    /// `distinct`'s indexes by status, once there are more than [`LINEAR_INTERN`].
    index: FxHashMap<Status, StatusId>,
    /// How many places have a status.
    len: usize,
    /// How many places the cycle's snapshot has, if said ([`NodeToStatus::size_for`]):
    /// `places` takes them all when it first grows.
    nodes: usize,
}

impl NodeToStatus {
    /// The id of `status`, added if it is new. A status is compared with the last one added
    /// first (nodes that fail alike fail one after another).
    pub fn intern(&mut self, status: Status) -> StatusId {
        if let Some(last) = self.distinct.last() {
            if *last == status {
                return (self.distinct.len() - 1) as StatusId;
            }
        }
        if self.distinct.len() <= LINEAR_INTERN {
            if let Some(i) = self.distinct.iter().position(|s| *s == status) {
                return i as StatusId;
            }
        } else if let Some(&id) = self.index.get(&status) {
            return id;
        }
        let id = self.distinct.len() as StatusId;
        if self.distinct.len() == LINEAR_INTERN {
            for (i, s) in self.distinct.iter().enumerate() {
                self.index.insert(s.clone(), i as StatusId);
            }
        }
        if self.distinct.len() >= LINEAR_INTERN {
            self.index.insert(status.clone(), id);
        }
        self.distinct.push(status);
        self.counts.push(0);
        id
    }

    /// Sets the status of the node at `place` (replacing any it had).
    pub fn insert(&mut self, place: usize, status: Status) {
        let id = self.intern(status);
        self.set(place, id);
    }

    /// Says how many places the cycle's snapshot has: the first status set makes room for
    /// all of them, so that the failing nodes of a filter pass (set in node order from a
    /// rotating start) are plain writes rather than one growth each. Nothing is allocated
    /// while no node fails.
    pub fn size_for(&mut self, nodes: usize) {
        self.nodes = nodes;
    }

    /// Sets the status of the node at `place` to the interned status `id`.
    pub fn set(&mut self, place: usize, id: StatusId) {
        if place >= self.places.len() {
            self.grow(place);
        }
        match self.places[place] {
            0 => self.len += 1,
            old => self.counts[old as usize - 1] -= 1,
        }
        self.places[place] = id + 1;
        self.counts[id as usize] += 1;
    }

    /// Room for `place` (and for every place of the snapshot, if said).
    #[cold]
    fn grow(&mut self, place: usize) {
        self.places.resize((place + 1).max(self.nodes), 0);
    }

    /// The status of the node at `place`, if it has one.
    pub fn get(&self, place: usize) -> Option<&Status> {
        match self.places.get(place) {
            Some(&id) if id > 0 => Some(&self.distinct[id as usize - 1]),
            _ => None,
        }
    }

    /// The interned status `id`.
    pub fn status(&self, id: StatusId) -> &Status {
        &self.distinct[id as usize]
    }

    /// How many nodes have a status.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many distinct statuses were interned.
    pub fn distinct_len(&self) -> usize {
        self.distinct.len()
    }

    /// `(place, status)` of every node that has one, by place.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Status)> + '_ {
        self.places
            .iter()
            .enumerate()
            .filter(|(_, &id)| id > 0)
            .map(|(place, &id)| (place, &self.distinct[id as usize - 1]))
    }

    /// Each status some node has, with how many nodes have it.
    pub fn counted(&self) -> impl Iterator<Item = (&Status, usize)> + '_ {
        self.distinct
            .iter()
            .zip(self.counts.iter().copied())
            .filter(|(_, n)| *n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_kept_per_place_and_each_distinct_one_once() {
        let mut m = NodeToStatus::default();
        assert!(m.is_empty());
        m.insert(3, Status::unschedulable("Insufficient cpu"));
        m.insert(0, Status::unschedulable("Insufficient cpu"));
        m.insert(
            1,
            Status::unresolvable("node(s) were unschedulable").plugin("X"),
        );
        assert_eq!(m.len(), 3);
        assert_eq!(m.get(2), None);
        assert_eq!(m.get(9), None);
        assert_eq!(m.get(3).unwrap().reasons[..], ["Insufficient cpu"]);
        assert_eq!(m.get(1).unwrap().plugin, "X");
        let places: Vec<usize> = m.iter().map(|(p, _)| p).collect();
        assert_eq!(places, [0, 1, 3]);
        let counts: Vec<(String, usize)> = m.counted().map(|(s, n)| (s.message(), n)).collect();
        assert_eq!(
            counts,
            [
                ("Insufficient cpu".to_string(), 2),
                ("node(s) were unschedulable".to_string(), 1)
            ]
        );
        // Replacing a place's status moves its count.
        m.insert(
            0,
            Status::unresolvable("node(s) were unschedulable").plugin("X"),
        );
        assert_eq!(m.len(), 3);
        let counts: Vec<usize> = m.counted().map(|(_, n)| n).collect();
        assert_eq!(counts, [1, 2]);
    }

    #[test]
    fn sized_for_the_snapshot_the_first_status_makes_room_for_every_place() {
        let mut m = NodeToStatus::default();
        m.size_for(10);
        assert!(m.places.is_empty(), "nothing allocated while no node fails");
        m.insert(7, Status::unschedulable("Insufficient cpu"));
        assert_eq!(m.places.len(), 10);
        m.insert(9, Status::unschedulable("Insufficient cpu"));
        m.insert(2, Status::unschedulable("Insufficient memory"));
        assert_eq!(m.places.len(), 10);
        // A place past the said size still fits.
        m.insert(12, Status::unschedulable("Insufficient cpu"));
        assert_eq!(m.places.len(), 13);
        let places: Vec<usize> = m.iter().map(|(p, _)| p).collect();
        assert_eq!(places, [2, 7, 9, 12]);
        assert_eq!((m.len(), m.get(8), m.get(20)), (4, None, None));
        let counts: Vec<usize> = m.counted().map(|(_, n)| n).collect();
        assert_eq!(counts, [3, 1]);
    }

    #[test]
    fn many_distinct_statuses_are_interned_alike() {
        let mut m = NodeToStatus::default();
        let taint =
            |i: usize| Status::unresolvable(format!("node(s) had untolerated taint {{k: v{i}}}"));
        for round in 0..3 {
            for i in 0..40 {
                m.insert(round * 40 + i, taint(i));
            }
        }
        assert_eq!(m.distinct.len(), 40);
        assert_eq!(m.len(), 120);
        assert!(m.counted().all(|(_, n)| n == 3));
        for i in 0..40 {
            assert_eq!(m.intern(taint(i)), i as StatusId);
            assert_eq!(*m.get(80 + i).unwrap(), taint(i));
        }
    }
}
