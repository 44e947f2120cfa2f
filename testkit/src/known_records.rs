//! A broker that stores known records at start, and the check that it still serves them
//! exactly: the bad-input tests send something hostile, then prove nothing was lost,
//! reordered or added.

use bytes::Buf;
use kafka_protocol::records::RecordBatchDecoder;

use crate::client::{batch, topic};
use crate::process::BrokerProcess;

pub const STORED_TOPIC: &str = "stored";
pub const STORED_VALUES: [&str; 3] = ["first", "second", "third"];

impl BrokerProcess {
    /// [`BrokerProcess::start_temp`], then stores [`STORED_VALUES`] in partition 0 of
    /// [`STORED_TOPIC`].
    pub fn start_with_known_records(overrides: &[&str]) -> BrokerProcess {
        let mut broker = BrokerProcess::start_temp(overrides);
        broker.store_known_records();
        broker
    }

    pub fn store_known_records(&mut self) {
        let mut client = self.client();
        let created = client.create_topics(vec![topic(STORED_TOPIC, 1)]);
        assert_eq!(created.topics[0].error_code, 0, "{created:?}");
        let response = client.produce(STORED_TOPIC, 0, batch(&STORED_VALUES, 0));
        let partition = &response.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 0, "{partition:?}");
        assert_eq!(partition.base_offset, 0);
    }

    /// From a fresh connection: the broker answers, and the stored records and offsets
    /// are exactly those stored by [`BrokerProcess::store_known_records`].
    pub fn assert_serving_and_intact(&mut self) {
        assert!(self.is_running(), "oxbow died:\n{}", self.log());
        let mut client = self.client();
        let versions = client.api_versions(3);
        assert_eq!(versions.error_code, 0);
        let fetched = client.fetch(STORED_TOPIC, 0, 0);
        let partition = &fetched.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "{partition:?}");
        assert_eq!(partition.high_watermark, STORED_VALUES.len() as i64);
        let mut records = partition.records.clone().unwrap_or_default();
        let mut values = Vec::new();
        while records.has_remaining() {
            for record in RecordBatchDecoder::decode(&mut records).unwrap().records {
                values.push((
                    record.offset,
                    String::from_utf8(record.value.unwrap().to_vec()).unwrap(),
                ));
            }
        }
        let expected: Vec<(i64, String)> = STORED_VALUES
            .iter()
            .enumerate()
            .map(|(offset, value)| (offset as i64, value.to_string()))
            .collect();
        assert_eq!(values, expected);
    }
}
