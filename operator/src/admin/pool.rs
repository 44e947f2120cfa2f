//! Admin connections kept between reconciles.
//!
//! Ten thousand Topics re-checked now and then would otherwise open ten thousand TCP
//! connections (each with its ApiVersions round trip) to the brokers: a reconcile takes a
//! connection another one left, and gives it back only when every request on it was
//! answered (a timed-out or broken connection may be out of step and is dropped).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::AdminClient;

/// Connections idle longer than this are closed rather than reused: well inside the
/// brokers' `connections.max.idle.ms` (10 minutes by default), so a reused one is open.
const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// Idle connections kept per address (the Topic controller runs 16 reconciles at once).
const IDLE_PER_ADDRESS: usize = 16;

/// Idle admin connections by broker address.
#[derive(Debug, Default)]
pub struct AdminPool {
    idle: Mutex<BTreeMap<String, Vec<(Instant, AdminClient)>>>,
}

impl AdminPool {
    /// An idle connection to one of `addresses` (the first in their order that has one).
    pub fn take(&self, addresses: &[String]) -> Option<(AdminClient, String)> {
        let mut idle = self.lock();
        let now = Instant::now();
        for address in addresses {
            let Some(clients) = idle.get_mut(address) else {
                continue;
            };
            clients.retain(|(since, _)| now.duration_since(*since) < IDLE_LIMIT);
            if let Some((_, client)) = clients.pop() {
                return Some((client, address.clone()));
            }
        }
        None
    }

    /// Gives back a connection whose every request was answered.
    pub fn put(&self, address: String, client: AdminClient) {
        let mut idle = self.lock();
        let clients = idle.entry(address).or_default();
        if clients.len() < IDLE_PER_ADDRESS {
            clients.push((Instant::now(), client));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<(Instant, AdminClient)>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener answering ApiVersions v3 with an empty key list, for real connections.
    async fn broker() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut size = [0_u8; 4];
                    while socket.read_exact(&mut size).await.is_ok() {
                        let mut frame = vec![0_u8; u32::from_be_bytes(size) as usize];
                        if socket.read_exact(&mut frame).await.is_err() {
                            return;
                        }
                        // correlation id, then ApiVersions v3: error 0, no keys, throttle 0,
                        // no tagged fields (v3 responses use header v0).
                        let mut body = frame[4..8].to_vec();
                        body.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0]);
                        let mut out = (body.len() as u32).to_be_bytes().to_vec();
                        out.extend_from_slice(&body);
                        if socket.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    }

    #[tokio::test]
    async fn gives_back_connections_in_address_order_and_bounds_them() {
        let (first, second) = (broker().await, broker().await);
        let pool = AdminPool::default();
        assert!(pool.take(std::slice::from_ref(&first)).is_none());
        pool.put(second.clone(), AdminClient::connect(&second).await.unwrap());
        let (_, from) = pool
            .take(&[first.clone(), second.clone()])
            .expect("a connection to the second address");
        assert_eq!(from, second);
        assert!(pool.take(&[first.clone(), second.clone()]).is_none());
        for _ in 0..IDLE_PER_ADDRESS + 3 {
            pool.put(first.clone(), AdminClient::connect(&first).await.unwrap());
        }
        let mut taken = 0;
        while pool.take(std::slice::from_ref(&first)).is_some() {
            taken += 1;
        }
        assert_eq!(taken, IDLE_PER_ADDRESS);
    }
}
