//! Frame and request decoding, as a connection does it: split the input into
//! size-prefixed frames (`oxbow_broker::server::request::frame_size`), parse and route each
//! header (`parse_request`), then decode the body with the request decoder of its API and
//! version (the one the handler calls). Any panic, abort or runaway allocation is a bug.
#![no_main]

use bytes::{Buf, Bytes};
use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;
use oxbow_broker::api::{Routes, routes};
use oxbow_broker::server::request::{ParsedRequest, frame_size, parse_request};

/// Kafka's default socket.request.max.bytes.
const MAX_FRAME: usize = 100 * 1024 * 1024;

fn decode_stream(routes: &Routes, data: &[u8]) {
    let mut rest = Bytes::copy_from_slice(data);
    while rest.remaining() >= 4 {
        let prefix = [rest[0], rest[1], rest[2], rest[3]];
        let Ok(size) = frame_size(prefix, MAX_FRAME) else {
            return;
        };
        rest.advance(4);
        if rest.remaining() < size {
            return;
        }
        let frame = rest.split_to(size);
        if let Ok(ParsedRequest::Request {
            api,
            version,
            mut body,
            ..
        }) = parse_request(frame, routes)
        {
            let _ = RequestKind::decode(api, &mut body, version);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ROUTES: Routes = routes();
    }
    ROUTES.with(|routes| decode_stream(routes, data));
});
