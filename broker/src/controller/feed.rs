//! The metadata feed: the image this node has applied, and the recent batches behind it,
//! for the publisher on this node and for brokers that follow the log from here.
//!
//! Voters fill it from the Raft state machine; broker-only nodes (observers) fill it from
//! what they fetch from a voter. Either way, records arrive in log order and every node
//! builds the same image from them.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::metadata::image::ClusterImage;
use crate::metadata::records::MetadataRecord;

/// Batches kept for observers that are a little behind; an observer further behind gets
/// the whole image instead.
const RECENT_BATCHES: usize = 4096;

/// The image as of a log index.
#[derive(Debug, Clone, Default)]
pub struct MetadataView {
    /// Index of the last applied Raft entry (0 before any).
    pub applied_index: u64,
    pub image: Arc<ClusterImage>,
}

/// What an observer gets: the batches it misses, or the image when those are gone.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataUpdate {
    Batches {
        batches: Vec<(u64, Vec<MetadataRecord>)>,
        applied_index: u64,
    },
    Image {
        applied_index: u64,
        image: ClusterImage,
    },
}

#[derive(Debug, Default)]
struct Recent {
    batches: VecDeque<(u64, Arc<Vec<MetadataRecord>>)>,
    /// Every non-empty batch after this index is in `batches`.
    complete_after: u64,
}

#[derive(Debug)]
pub struct MetadataFeed {
    view: watch::Sender<Arc<MetadataView>>,
    recent: Mutex<Recent>,
    /// Whether the current image holds any client quota: read on every request, so that a
    /// cluster without quotas does not look at the image to learn it.
    client_quotas_set: AtomicBool,
}

impl Default for MetadataFeed {
    fn default() -> Self {
        Self {
            view: watch::channel(Arc::new(MetadataView::default())).0,
            recent: Mutex::new(Recent::default()),
            client_quotas_set: AtomicBool::new(false),
        }
    }
}

impl MetadataFeed {
    pub fn current(&self) -> Arc<MetadataView> {
        Arc::clone(&self.view.borrow())
    }

    pub fn client_quotas_set(&self) -> bool {
        self.client_quotas_set.load(Ordering::Relaxed)
    }

    fn publish(&self, applied_index: u64, image: Arc<ClusterImage>) {
        self.client_quotas_set
            .store(!image.client_quotas.is_empty(), Ordering::Relaxed);
        self.view.send_replace(Arc::new(MetadataView {
            applied_index,
            image,
        }));
    }

    pub fn subscribe(&self) -> watch::Receiver<Arc<MetadataView>> {
        self.view.subscribe()
    }

    /// A batch was applied at `index`, giving `image`. Entries without records (Raft's
    /// blank and membership entries) only move the index.
    pub fn publish_batch(
        &self,
        index: u64,
        records: Vec<MetadataRecord>,
        image: Arc<ClusterImage>,
    ) {
        if !records.is_empty() {
            let mut recent = self.recent.lock();
            recent.batches.push_back((index, Arc::new(records)));
            while recent.batches.len() > RECENT_BATCHES {
                if let Some((dropped, _)) = recent.batches.pop_front() {
                    recent.complete_after = dropped;
                }
            }
        }
        self.publish(index, image);
    }

    /// A whole image replaced this node's (a snapshot was installed or restored, or an
    /// observer was too far behind): the batches before it are gone.
    pub fn publish_image(&self, index: u64, image: Arc<ClusterImage>) {
        {
            let mut recent = self.recent.lock();
            recent.batches.clear();
            recent.complete_after = index;
        }
        self.publish(index, image);
    }

    /// What an observer that has applied up to `from_index` needs.
    pub fn since(&self, from_index: u64) -> MetadataUpdate {
        let recent = self.recent.lock();
        let view = self.current();
        if from_index >= recent.complete_after && from_index <= view.applied_index {
            return MetadataUpdate::Batches {
                batches: recent
                    .batches
                    .iter()
                    .filter(|(index, _)| *index > from_index && *index <= view.applied_index)
                    .map(|(index, records)| (*index, records.as_ref().clone()))
                    .collect(),
                applied_index: view.applied_index,
            };
        }
        MetadataUpdate::Image {
            applied_index: view.applied_index,
            image: view.image.as_ref().clone(),
        }
    }

    /// Applies what a voter sent in answer to [`Self::since`] with this node's index.
    /// An answer from a voter behind this node changes nothing.
    pub fn apply_update(&self, update: MetadataUpdate) {
        let view = self.current();
        match update {
            MetadataUpdate::Image {
                applied_index,
                image,
            } => {
                if applied_index >= view.applied_index {
                    self.publish_image(applied_index, Arc::new(image));
                }
            }
            MetadataUpdate::Batches {
                batches,
                applied_index,
            } => {
                if applied_index <= view.applied_index {
                    return;
                }
                let mut image = view.image.as_ref().clone();
                let mut fresh = Vec::new();
                for (index, records) in batches {
                    if index > view.applied_index {
                        for record in &records {
                            image.apply(record);
                        }
                        fresh.push((index, records));
                    }
                }
                let image = Arc::new(image);
                let last = fresh.len().saturating_sub(1);
                if fresh.is_empty() {
                    self.publish_batch(applied_index, Vec::new(), image);
                    return;
                }
                for (position, (index, records)) in fresh.into_iter().enumerate() {
                    let at = if position == last {
                        applied_index
                    } else {
                        index
                    };
                    self.publish_batch(at, records, Arc::clone(&image));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: i64) -> MetadataRecord {
        MetadataRecord::ProducerIdsAllocated {
            next_producer_id: n,
        }
    }

    fn apply(image: &ClusterImage, records: &[MetadataRecord]) -> Arc<ClusterImage> {
        let mut image = image.clone();
        for r in records {
            image.apply(r);
        }
        Arc::new(image)
    }

    #[test]
    fn observers_get_missing_batches_or_the_whole_image() {
        let voter = MetadataFeed::default();
        let mut image = Arc::new(ClusterImage::default());
        for index in 1..=10u64 {
            let records = if index % 3 == 0 {
                vec![]
            } else {
                vec![record(index as i64)]
            };
            image = apply(&image, &records);
            voter.publish_batch(index, records, Arc::clone(&image));
        }
        let observer = MetadataFeed::default();
        observer.apply_update(voter.since(0));
        assert_eq!(observer.current().applied_index, 10);
        assert_eq!(observer.current().image, voter.current().image);
        // Nothing new: an empty answer at the same index.
        assert_eq!(
            voter.since(10),
            MetadataUpdate::Batches {
                batches: vec![],
                applied_index: 10
            }
        );
        // A snapshot on the voter: an observer from before it gets the image.
        voter.publish_image(
            20,
            Arc::new(ClusterImage {
                next_producer_id: 99,
                ..Default::default()
            }),
        );
        assert!(matches!(
            voter.since(10),
            MetadataUpdate::Image {
                applied_index: 20,
                ..
            }
        ));
        observer.apply_update(voter.since(10));
        assert_eq!(observer.current().image.next_producer_id, 99);
        // An answer from a voter behind the observer is ignored.
        observer.apply_update(MetadataUpdate::Batches {
            batches: vec![(5, vec![record(1)])],
            applied_index: 5,
        });
        assert_eq!(observer.current().applied_index, 20);
    }
}
