use super::*;

fn request(acks: i16, records: &[u8]) -> Bytes {
    let mut body = BytesMut::new();
    body.put_i16(acks);
    body.put_i32(30_000);
    body.put_i32(1);
    body.put_i16(5);
    body.put_slice(b"topic");
    body.put_i32(2);
    for partition in [0, 3] {
        body.put_i32(partition);
        body.put_i32(records.len() as i32);
        body.put_slice(records);
    }
    body.freeze()
}

#[test]
fn every_partition_is_refused_in_the_request_version_format() {
    let decoded = decode(2, request(1, &[7; 40])).unwrap();
    assert_eq!(
        decoded.topics,
        vec![(Bytes::from_static(b"topic"), vec![0, 3])]
    );
    for (version, partition_bytes, throttle) in [(0, 14, 0), (1, 14, 4), (2, 22, 4)] {
        let response = refuse(version, &decoded).unwrap();
        assert_eq!(
            response.len(),
            4 + 2 + 5 + 4 + 2 * partition_bytes + throttle
        );
        let mut read = response.freeze();
        read.advance(4 + 2 + 5 + 4);
        assert_eq!(read.get_i32(), 0);
        assert_eq!(read.get_i16(), errors::UNSUPPORTED_VERSION);
        assert_eq!(read.get_i64(), -1);
    }
}

#[test]
fn acks_zero_has_no_response_and_malformed_requests_are_errors() {
    assert!(refuse(0, &decode(0, request(0, &[])).unwrap()).is_none());
    let whole = request(1, &[7; 40]);
    for cut in [0, 5, 9, 12, 20, whole.len() - 1] {
        assert!(decode(1, whole.slice(..cut)).is_err(), "cut at {cut}");
    }
    let mut huge = BytesMut::new();
    huge.put_i16(1);
    huge.put_i32(0);
    huge.put_i32(i32::MAX);
    assert!(
        decode(0, huge.freeze()).is_err(),
        "a forged count allocates nothing"
    );
}
