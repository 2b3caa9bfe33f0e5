//! Which client connections are busy and since when the others are idle, so that the accept
//! loop can close the longest idle one at `--max-connections` ([`super::serve`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What the accept loop knows of one client connection: whether an exchange is open on it,
/// and since when it has been idle. At `--max-connections` the connection idle longest is
/// closed to admit the new one: a flood of connections that send nothing must not lock real
/// clients out (they used to get 503 until the flood's header-read timeout, 30 s).
pub(super) struct ConnActivity {
    base: Instant,
    pub(super) in_flight: AtomicUsize,
    /// Milliseconds after `base` the connection last became idle (opened or an exchange ended).
    idle_since_ms: AtomicU64,
}

impl ConnActivity {
    pub(super) fn new(base: Instant) -> Arc<ConnActivity> {
        Arc::new(ConnActivity {
            base,
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(base.elapsed().as_millis() as u64),
        })
    }

    /// `Some(idle since)` when no exchange is open.
    pub(super) fn idle_since(&self) -> Option<u64> {
        (self.in_flight.load(Ordering::SeqCst) == 0)
            .then(|| self.idle_since_ms.load(Ordering::SeqCst))
    }
}

/// An exchange open on a connection, from its request head until its response is dropped.
pub(super) struct InFlight(Arc<ConnActivity>);

impl InFlight {
    pub(super) fn new(a: &Arc<ConnActivity>) -> InFlight {
        a.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        a.idle_since_ms
            .store(a.base.elapsed().as_millis() as u64, Ordering::SeqCst);
        a.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
