//! Stored rows a pass keeps in memory for the session's next pass: its tag index and its
//! drops.
//!
//! Reading them back costs every pass time proportional to the session (a long session holds
//! thousands of tags and hundreds of drops). A kept copy is checked against the store in the
//! pass's own transaction and replaced by the stored rows whenever it may be stale (another
//! process wrote, a drop was queued outside the pass, the pass that kept it failed), so a
//! pass always plans with exactly what is stored.

use mc_core::reduction::DropState;
use mc_core::tags::TagIndex;
use mc_core::{HeldBytes, SessionId};
use mc_store::{DropsVersion, WriteTx};

use crate::error::Result;

/// A session's kept rows, taken out while a pass runs and put back once it committed.
#[derive(Debug, Default)]
pub(crate) struct KeptRows {
    /// The tag index, checked by the newest stored tag (tags are only ever appended).
    pub tags: Option<TagIndex>,
    /// The drops, with the store's drops version they were read or written at.
    drops: Option<(DropsVersion, DropState)>,
}

impl KeptRows {
    /// The session's drops: the kept ones while no drop was written since they were kept,
    /// else the stored ones.
    pub fn drops_or_stored(&mut self, tx: &WriteTx<'_>, session: &SessionId) -> Result<DropState> {
        if let Some((version, drops)) = self.drops.take()
            && version == tx.drops_version()?
        {
            return Ok(drops);
        }
        Ok(tx.drop_state(session)?)
    }

    /// Keeps `drops`, the session's drops as this transaction leaves them (after its own
    /// drop writes, so the version read now covers them).
    pub fn keep_drops(&mut self, tx: &WriteTx<'_>, drops: DropState) -> Result<()> {
        self.drops = Some((tx.drops_version()?, drops));
        Ok(())
    }
}

impl HeldBytes for KeptRows {
    /// The tag index, and a few words per drop (drops are tag numbers in sets).
    fn held_bytes(&self) -> usize {
        let drops = self.drops.as_ref().map_or(0, |(_, drops)| {
            (drops.queued.len() + drops.landed.len()) * DROP_ENTRY_BYTES
        });
        std::mem::size_of::<Self>() + self.tags.as_ref().map_or(0, HeldBytes::held_bytes) + drops
    }
}

/// A drop's entry in a B-tree set: its tag number and node overhead, amortised.
const DROP_ENTRY_BYTES: usize = 24;

#[cfg(test)]
mod tests {
    use mc_core::tags::{TagAssignment, TagNo, UnitRef};
    use mc_core::{Host, Message, Part, Role};
    use mc_store::{NewSession, Store};

    use super::*;

    fn store_with_tags() -> (tempfile::TempDir, Store, SessionId) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let id = SessionId::new("s").unwrap();
        store
            .write(|tx| {
                let session = NewSession {
                    id: id.clone(),
                    host: Host::Other,
                    project: None,
                };
                tx.upsert_session(&session, 1)?;
                let message = Message::new(Role::User, vec![Part::text("a"), Part::text("b")]);
                tx.append_messages(&id, 0, &[message], 1)?;
                let tags: Vec<_> = (0..2)
                    .map(|part| TagAssignment {
                        tag: TagNo(part + 1),
                        unit: UnitRef { ordinal: 0, part },
                    })
                    .collect();
                tx.insert_tags(&id, &tags)
            })
            .unwrap();
        (dir, store, id)
    }

    /// Kept drops that differ from the stored ones, so a test sees which were used.
    fn marked() -> DropState {
        DropState {
            queued: [TagNo(2)].into(),
            landed: Default::default(),
        }
    }

    fn drops_seen(store: &Store, kept: &mut KeptRows, id: &SessionId) -> DropState {
        store.write_with(|tx| kept.drops_or_stored(tx, id)).unwrap()
    }

    #[test]
    fn kept_drops_serve_while_nothing_wrote_drops() {
        let (_dir, store, id) = store_with_tags();
        let mut kept = KeptRows::default();
        store
            .write_with(|tx| kept.keep_drops(tx, marked()))
            .unwrap();
        store.write(|tx| tx.put_engine_state(&id, "{}")).unwrap();
        assert_eq!(drops_seen(&store, &mut kept, &id), marked());
        // Taken out by the pass that used them: without keeping again, the store answers.
        assert_eq!(drops_seen(&store, &mut kept, &id), DropState::default());
    }

    #[test]
    fn a_drop_queued_by_this_store_outside_the_pass_is_seen() {
        let (_dir, store, id) = store_with_tags();
        let mut kept = KeptRows::default();
        store
            .write_with(|tx| kept.keep_drops(tx, DropState::default()))
            .unwrap();
        store
            .write(|tx| tx.queue_drop(&id, TagNo(1), "ctx_reduce", 2).map(drop))
            .unwrap();
        assert_eq!(drops_seen(&store, &mut kept, &id).queued, [TagNo(1)].into());
    }

    #[test]
    fn a_drop_queued_by_another_process_is_seen() {
        let (dir, store, id) = store_with_tags();
        let mut kept = KeptRows::default();
        store
            .write_with(|tx| kept.keep_drops(tx, DropState::default()))
            .unwrap();
        let other = Store::open(dir.path().join("context.db")).unwrap();
        other
            .write(|tx| tx.queue_drop(&id, TagNo(1), "operator", 2).map(drop))
            .unwrap();
        assert_eq!(drops_seen(&store, &mut kept, &id).queued, [TagNo(1)].into());
    }
}
