//! Frame and request decoding, as a connection does it (`oxbow_broker::decode_stream`:
//! frames, routed headers, the request decoder of each API and version). Any panic, abort
//! or runaway allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxbow_broker::{Routes, decode_stream, routes};

/// Kafka's default socket.request.max.bytes.
const MAX_FRAME: usize = 100 * 1024 * 1024;

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ROUTES: Routes = routes(1000);
    }
    ROUTES.with(|routes| {
        decode_stream(routes, data, MAX_FRAME);
    });
});
