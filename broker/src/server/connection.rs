//! One client connection: a reader task that frames requests and a processor that
//! answers them in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tracing::Instrument;

use super::frame_writer::ResponseSink;
use super::sasl_gate::{self, Gated};
use super::{dispatch, frame_writer};
use crate::api::Routes;
use crate::security::{Admission, Principal, SaslAuthenticator};
use crate::state::BrokerState;

/// Requests read ahead per connection, at most (besides the byte bound).
const QUEUE_DEPTH: usize = 1024;

/// The read-ahead queue carries boxed frames: tokio's channel allocates its slots 32 at a time
/// from the start, and 32 inline frames were 1.5 KiB of every idle connection's memory.
type QueuedFrame = Box<Frame>;

struct Frame {
    bytes: BytesMut,
    _permit: OwnedSemaphorePermit,
}

/// Who is on the other end of a connection, and what it still has to prove.
#[derive(Debug)]
pub struct Peer {
    pub address: SocketAddr,
    pub principal: Principal,
    /// On a `SASL_*` listener: the exchange every request but ApiVersions waits for.
    /// Boxed: an idle connection keeps it for its whole life.
    pub sasl: Option<Box<SaslAuthenticator>>,
}

pub async fn serve<R, W>(
    read_half: R,
    mut write_half: W,
    peer: Box<Peer>,
    listener: Arc<str>,
    state: Arc<BrokerState>,
    routes: Arc<Routes>,
    shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: ResponseSink,
{
    // Kept boxed: the connection's task stays small (see the test below).
    let mut identity = peer;
    let peer = identity.address;
    let budget = state.config.queued_max_request_bytes.min(u32::MAX as usize);
    let inflight = Arc::new(Semaphore::new(budget));
    let (frames_tx, mut frames) = mpsc::channel(QUEUE_DEPTH);
    let reader = tokio::spawn(read_frames(
        read_half,
        peer,
        Arc::clone(&state),
        inflight,
        frames_tx,
        shutdown,
    ));
    while let Some(frame) = frames.recv().await {
        let Frame { bytes, _permit } = *frame;
        let size = bytes.len() as i64;
        // Set by the SASL step: its own answer, and whether to close after sending it.
        let mut close = false;
        let mut pending = None;
        let frame = bytes.freeze();
        // Authenticated connections are served; a SaslHandshake starts a re-authentication
        // (KIP-368), and a session past `connections.max.reauth.ms` is closed.
        let admission = match identity.sasl.as_mut() {
            None => Admission::Serve,
            Some(authenticator) => {
                let api_key = frame
                    .get(..2)
                    .map_or(-1, |key| i16::from_be_bytes([key[0], key[1]]));
                authenticator.admit(api_key, std::time::Instant::now(), &identity.principal)
            }
        };
        let frame = match (admission, identity.sasl.as_mut()) {
            (Admission::Serve, _) | (_, None) => Some(frame),
            (Admission::Expired, Some(_)) => {
                tracing::info!(%peer, principal = %identity.principal, "SASL session expired without re-authentication (connections.max.reauth.ms); closing connection");
                close = true;
                None
            }
            (Admission::Gate, Some(authenticator)) => {
                match sasl_gate::gate(frame, authenticator, &state, &routes) {
                    Gated::Dispatch(frame) => Some(frame),
                    Gated::Respond(response) => {
                        pending = Some(response);
                        None
                    }
                    Gated::Authenticated(response, authenticated) => {
                        state
                            .metrics
                            .authentications
                            .with_label_values(&[&*listener, authenticator.mechanism_name()])
                            .inc();
                        tracing::debug!(%peer, principal = %authenticated, "SASL authenticated");
                        identity.principal = authenticated;
                        pending = Some(response);
                        None
                    }
                    Gated::Close(response, reason) => {
                        state
                            .metrics
                            .authentication_failures
                            .with_label_values(&[&*listener, authenticator.mechanism_name()])
                            .inc();
                        tracing::info!(%peer, listener = %listener, %reason, "Failed authentication; closing connection");
                        close = true;
                        pending = response;
                        None
                    }
                }
            }
        };
        let response =
            match frame {
                Some(frame) => Box::pin(
                    dispatch::dispatch(
                        frame,
                        &listener,
                        &identity.principal,
                        peer.ip(),
                        &state,
                        &routes,
                    )
                    .instrument(
                        tracing::debug_span!("connection", %peer, principal = %identity.principal),
                    ),
                )
                .await,
                None => Ok(Box::new(dispatch::Dispatched {
                    response: pending,
                    mute: Duration::ZERO,
                })),
            };
        let outcome = match response {
            // Boxed, like the frames and the dispatch: their state is needed only while a
            // request is answered, not for the whole life of an idle connection.
            Ok(dispatched) => {
                // A failed authentication is answered, and closed, later: Kafka's brake on
                // guessing (`connection.failed.authentication.delay.ms`).
                let delay = Duration::from_millis(if close {
                    state.config.failed_authentication_delay_ms
                } else {
                    0
                });
                let sendfile = state.config.fetch_sendfile;
                let write_half = &mut write_half;
                let stopping = &state.shutting_down;
                Box::pin(async move {
                    let dispatch::Dispatched { response, mute } = *dispatched;
                    if let Some(response) = response {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        frame_writer::write(write_half, response, sendfile).await?;
                    }
                    // A client over a quota: answered at once, then not read from for the
                    // throttle time (KIP-219), which holds back its next requests.
                    if !mute.is_zero() {
                        let mut stopping = stopping.clone();
                        tokio::select! {
                            () = tokio::time::sleep(mute) => {}
                            _ = stopping.wait_for(|down| *down) => {}
                        }
                    }
                    std::io::Result::Ok(())
                })
                .await
            }
            Err(reason) => {
                tracing::warn!(%peer, %reason, "Closing connection");
                state.metrics.inflight_request_bytes.sub(size);
                break;
            }
        };
        state.metrics.inflight_request_bytes.sub(size);
        if let Err(error) = outcome {
            tracing::debug!(%peer, %error, "Writing a response failed; closing connection");
            break;
        }
        if close {
            break;
        }
    }
    drop(frames);
    // When the processor stopped on bad input or a failed write, the reader still waits
    // for the next frame (up to connections.max.idle.ms): cancel it so the socket closes
    // now. After a normal end it has already finished and this changes nothing.
    reader.abort();
    match reader.await {
        Ok(()) => {}
        Err(error) if error.is_cancelled() => {}
        Err(error) => tracing::error!(%peer, %error, "Connection reader task failed"),
    }
}

async fn read_frames<R: AsyncRead + Unpin>(
    mut read_half: R,
    peer: SocketAddr,
    state: Arc<BrokerState>,
    inflight: Arc<Semaphore>,
    frames: mpsc::Sender<QueuedFrame>,
    mut shutdown: watch::Receiver<bool>,
) {
    let idle = Duration::from_millis(state.config.connections_max_idle_ms);
    let max_frame = state.config.socket_request_max_bytes;
    let budget = state.config.queued_max_request_bytes.min(u32::MAX as usize);
    loop {
        if *shutdown.borrow() {
            return;
        }
        let mut size = [0u8; 4];
        let read = tokio::select! {
            read = tokio::time::timeout(idle, read_half.read_exact(&mut size)) => read,
            _ = shutdown.changed() => return,
        };
        match read {
            Err(_) => {
                tracing::debug!(%peer, "Closing idle connection (connections.max.idle.ms)");
                return;
            }
            Ok(Err(_)) => return,
            Ok(Ok(_)) => {}
        }
        let size = match super::request::frame_size(size, max_frame) {
            Ok(size) => size,
            Err(error) => {
                tracing::warn!(%peer, %error, "Closing connection");
                return;
            }
        };
        // Back-pressure: wait until answered requests free their bytes.
        let permits = size.clamp(1, budget) as u32;
        let Ok(permit) = Arc::clone(&inflight).acquire_many_owned(permits).await else {
            return;
        };
        let mut bytes = BytesMut::with_capacity(size);
        let read = tokio::select! {
            read = tokio::time::timeout(idle, read_frame_body(&mut read_half, &mut bytes, size)) => read,
            _ = shutdown.changed() => return,
        };
        if !matches!(read, Ok(Ok(()))) {
            tracing::debug!(%peer, size, "Connection closed in the middle of a request frame");
            return;
        }
        state.metrics.inflight_request_bytes.add(size as i64);
        if frames
            .send(Box::new(Frame {
                bytes,
                _permit: permit,
            }))
            .await
            .is_err()
        {
            state.metrics.inflight_request_bytes.sub(size as i64);
            return;
        }
    }
}

/// Reads exactly `size` bytes into `bytes` without zero-filling the buffer first (the
/// zeroing of `read_exact` into a zeroed buffer cost ~6% of CPU producing 1 MiB batches).
async fn read_frame_body<R: AsyncRead + Unpin>(
    read_half: &mut R,
    bytes: &mut BytesMut,
    size: usize,
) -> std::io::Result<()> {
    while bytes.len() < size {
        let remaining = (size - bytes.len()) as u64;
        if (&mut *read_half).take(remaining).read_buf(bytes).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<A, B, C, D, E, F, G, Fut>(_: impl FnOnce(A, B, C, D, E, F, G) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// An idle connection keeps its tasks and its queue's first block of slots for as long
    /// as it stays open (thousands of them at a time): what is needed only while a request
    /// is answered is allocated then, not inline in the connection's own task.
    #[test]
    fn an_idle_connection_holds_no_request_state_inline() {
        assert_eq!(
            std::mem::size_of::<QueuedFrame>(),
            std::mem::size_of::<usize>()
        );
        let serve =
            future_size(serve::<tokio::net::tcp::OwnedReadHalf, tokio::net::tcp::OwnedWriteHalf>);
        assert!(serve <= 512, "the connection's task is {serve} bytes");
    }
}
