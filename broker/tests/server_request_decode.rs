//! The stable-toolchain driver of the fuzz target (`fuzz/fuzz_targets/request_decode.rs`):
//! the same steps — the broker's `frame_size` and `parse_request`, then the request
//! decoder of the routed API and version — over proptest-generated streams: random bytes,
//! routed headers with random bodies, and mutated real requests. Nothing may panic, abort
//! or allocate far beyond the input. libFuzzer runs the same code on nightly
//! (`e2e/suites/25-fuzz.sh`); without nightly that suite runs this driver instead, with
//! more cases (`OXBOW_DECODE_CASES`) and fresh seeds until its time budget is spent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, MetadataRequest, ProduceRequest, RequestHeader,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use oxbow_broker::{Routes, routes};
use proptest::prelude::*;

const MAX_FRAME: usize = 100 * 1024 * 1024;

/// What the fuzz target does with its input.
fn decode_stream(routes: &Routes, data: &[u8]) -> usize {
    oxbow_broker::decode_stream(routes, data, MAX_FRAME)
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut frame = (payload.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(payload);
    frame
}

fn header(key: ApiKey, version: i16) -> BytesMut {
    let mut bytes = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("decode")))
        .encode(&mut bytes, key.request_header_version(version))
        .unwrap();
    bytes
}

/// Real requests, encoded, for mutation.
fn real_requests() -> Vec<Vec<u8>> {
    let mut requests = Vec::new();
    let mut push = |key: ApiKey, version: i16, body: &dyn Fn(&mut BytesMut)| {
        let mut payload = header(key, version);
        body(&mut payload);
        requests.push(payload.to_vec());
    };
    for version in [3, 9, 12] {
        push(ApiKey::Produce, version, &|b| {
            ProduceRequest::default()
                .with_acks(-1)
                .with_topic_data(vec![Default::default()])
                .encode(b, version)
                .unwrap()
        });
    }
    for version in [4, 12, 16] {
        push(ApiKey::Fetch, version, &|b| {
            FetchRequest::default()
                .with_topics(vec![Default::default()])
                .encode(b, version)
                .unwrap()
        });
    }
    for version in [0, 4, 12] {
        push(ApiKey::Metadata, version, &|b| {
            MetadataRequest::default()
                .with_topics(Some(vec![Default::default()]))
                .encode(b, version)
                .unwrap()
        });
    }
    requests
}

#[test]
fn real_requests_decode() {
    let routes = routes(1000);
    let requests = real_requests();
    let stream: Vec<u8> = requests.iter().flat_map(|r| framed(r)).collect();
    assert_eq!(decode_stream(&routes, &stream), requests.len());
}

#[test]
fn forged_array_lengths_are_errors_not_allocations() {
    let routes = routes(1000);
    // Produce v3, v9 (compact arrays) and Metadata v0 whose first array claims ~2^31
    // entries in a few bytes: the decoders must fail on the missing bytes instead of
    // reserving memory for every claimed entry (which aborted the process).
    let mut produce_v3 = header(ApiKey::Produce, 3);
    produce_v3.put_i16(-1);
    produce_v3.put_i16(1);
    produce_v3.put_i32(1000);
    produce_v3.put_i32(i32::MAX);
    let mut produce_v9 = header(ApiKey::Produce, 9);
    produce_v9.put_u8(0);
    produce_v9.put_i16(1);
    produce_v9.put_i32(1000);
    produce_v9.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]);
    let mut metadata_v0 = header(ApiKey::Metadata, 0);
    metadata_v0.put_i32(0x033c_0c00);
    for payload in [produce_v3, produce_v9, metadata_v0] {
        assert_eq!(decode_stream(&routes, &framed(&payload)), 0);
    }
}

/// Cases per property: 2000 in `cargo test`; the fuzz suite raises it with
/// `OXBOW_DECODE_CASES` when it runs this driver in place of libFuzzer (no nightly).
fn cases() -> u32 {
    match std::env::var("OXBOW_DECODE_CASES") {
        Ok(cases) => cases
            .parse()
            .expect("OXBOW_DECODE_CASES is a number of cases"),
        Err(_) => 2000,
    }
}

fn routed_keys() -> Vec<(i16, i16, i16)> {
    routes(1000).version_ranges()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_stream(&routes(1000), &data);
    }

    #[test]
    fn routed_headers_with_random_bodies(
        route in any::<prop::sample::Index>(),
        version_pick in any::<prop::sample::Index>(),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let ranges = routed_keys();
        let (key, min, max) = ranges[route.index(ranges.len())];
        let version = min + version_pick.index((max - min + 1) as usize) as i16;
        let key = ApiKey::try_from(key).unwrap();
        let mut payload = header(key, version);
        payload.put_slice(&body);
        decode_stream(&routes(1000), &framed(&payload));
    }

    #[test]
    fn mutated_real_requests(
        pick in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let requests = real_requests();
        let mut payload = requests[pick.index(requests.len())].clone();
        for (at, byte) in flips {
            let at = at.index(payload.len());
            payload[at] = byte;
        }
        let keep = cut.index(payload.len() + 1);
        decode_stream(&routes(1000), &framed(&payload));
        decode_stream(&routes(1000), &framed(&payload[..keep]));
    }
}
