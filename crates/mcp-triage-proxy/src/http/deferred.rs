//! Observer work held back until the client's bytes are written ([`Deferred`]): the response
//! tap ([`super::response_body`]) notes what passed, [`super::paired::Paired`] runs the
//! observer ([`super::response_observer`]) over it after the write.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::plan::End;
use super::response_observer::ResponseObserver;

/// The observer's share of one response: chunks that passed and how the body ended, waiting
/// for [`Deferred::run`].
#[derive(Default)]
pub(super) struct TapState {
    pub(super) obs: Option<Box<ResponseObserver>>,
    pub(super) passed: Vec<Bytes>,
    pub(super) end: Option<End>,
    /// Already in the connection's [`Deferred`] list.
    pub(super) queued: bool,
}

impl TapState {
    fn observe(&mut self) {
        let Some(o) = self.obs.as_mut() else {
            self.passed.clear();
            return;
        };
        for c in self.passed.drain(..) {
            o.feed(&c);
        }
        if let Some(end) = self.end.take() {
            if let Some(o) = self.obs.take() {
                o.end(end);
            }
        }
    }
}

/// Observer work of one client connection, run by [`Paired`](super::paired::Paired) in each poll.
///
/// Why: a response tap sees a chunk *before* it is written to the client (and the end of a body
/// before the last write is flushed). Classifying the chunk, reading the request, building records
/// and handing them to the writer there would put all of it between the upstream's bytes and the
/// client's. So the tap only notes what passed (a reference-counted `Bytes`, no copy) and queues
/// itself here; [`Paired`](super::paired::Paired) runs the queue once the client's bytes are
/// written (with one forwarding thread; with several, just before they are written: see
/// [`Shared::observe_after_write`](super::shared::Shared::observe_after_write)), and dropping the
/// queue (the connection's task ends or is aborted) runs what is left, so no record is lost.
#[derive(Default)]
pub(super) struct Deferred {
    queue: Mutex<Vec<Arc<Mutex<TapState>>>>,
}

impl Deferred {
    pub(super) fn push(&self, tap: &Arc<Mutex<TapState>>) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tap.clone());
    }

    pub(super) fn run(&self) {
        // The batch's vector goes back to the queue emptied, so the next push (every exchange
        // has one) finds room instead of allocating a new vector.
        let mut batch = Vec::new();
        loop {
            {
                let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                if queue.is_empty() {
                    if queue.capacity() == 0 {
                        std::mem::swap(&mut *queue, &mut batch);
                    }
                    return;
                }
                std::mem::swap(&mut *queue, &mut batch);
            }
            for tap in batch.drain(..) {
                let mut st = tap.lock().unwrap_or_else(|e| e.into_inner());
                st.queued = false;
                st.observe();
            }
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        self.run();
    }
}
