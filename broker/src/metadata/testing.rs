//! Images for tests: topics with given replica lists, each partition led by its first replica.

use super::image::ClusterImage;
use super::records::{MetadataRecord, PartitionState};

pub fn image(topics: &[(&str, &[&[i32]])]) -> ClusterImage {
    let mut image = ClusterImage::default();
    for (index, (name, partitions)) in topics.iter().enumerate() {
        add_topic(&mut image, name, index as u128 + 1, partitions);
    }
    image
}

/// Adds topic `name` with one partition per replica list, each led by its first replica.
pub fn add_topic(image: &mut ClusterImage, name: &str, id: u128, partitions: &[&[i32]]) {
    image.apply(&MetadataRecord::TopicCreated {
        name: name.to_string(),
        topic_id: uuid::Uuid::from_u128(id),
        replication_factor: 1,
        configs: Default::default(),
    });
    for (partition, replicas) in partitions.iter().enumerate() {
        image.apply(&MetadataRecord::PartitionCreated {
            topic: name.to_string(),
            partition: partition as i32,
            state: PartitionState {
                replicas: replicas.to_vec(),
                in_sync_replicas: vec![replicas[0]],
                leader: replicas[0],
                leader_epoch: 0,
                partition_epoch: 0,
                ..Default::default()
            },
        });
    }
}
