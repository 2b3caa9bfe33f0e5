//! The task of one client connection ([`Paired`]): the connection's loop
//! ([`super::client_conn`], which reads and writes the upstream connection too) polled, the client's writes corked
//! until the end of the poll, and the observer's deferred work run after them.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::cork::{Cork, CORK_LIMIT};
use super::deferred::Deferred;
use super::spin::Spin;

/// The future of one client connection's loop ([`super::client_conn::serve`]).
pub(super) type ServerConn = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One client connection and its upstream connection, polled by one task: a wakeup from
/// either side is a wakeup of this task, never a hand-off to another thread.
///
/// One poll runs until the connection has nothing more to do right now (at most
/// [`ROUNDS_PER_POLL`] rounds): a part that wakes another during the poll (a request body
/// batch that may be followed by another, a timer) gets the round it asked for at once. The client's
/// writes are held in the [`Cork`] until the end of the poll, so what arrived together goes
/// out in one write: an SSE response that came from the upstream in one segment (head, event,
/// end of body) goes to the client in one segment too, instead of three writes that each wake
/// the client.
pub(super) struct Paired {
    server: ServerConn,
    pub(super) deferred: Arc<Deferred>,
    pub(super) cork: Arc<Mutex<Cork>>,
    wake: Arc<TaskWake>,
    /// See [`Shared::observe_after_write`](super::shared::Shared::observe_after_write).
    pub(super) observe_after_write: bool,
    pub(super) spin: Option<Arc<Spin>>,
}

/// Rounds of one [`Paired`] poll before it yields to other tasks.
const ROUNDS_PER_POLL: usize = 8;

/// The waker a [`Paired`] polls its parts with: it notes wakeups that happen during the poll
/// (the parts waking each other) instead of rescheduling the task, and passes the others on.
#[derive(Default)]
struct TaskWake {
    woken: AtomicBool,
    polling: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for TaskWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            if let Some(w) = self
                .outer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                w.wake_by_ref();
            }
        }
    }
}

impl Paired {
    pub(super) fn new(
        server: ServerConn,
        deferred: Arc<Deferred>,
        cork: Arc<Mutex<Cork>>,
        observe_after_write: bool,
        spin: Option<Arc<Spin>>,
    ) -> Paired {
        Paired {
            server,
            deferred,
            cork,
            wake: Arc::new(TaskWake::default()),
            observe_after_write,
            spin,
        }
    }

    /// One round: the server side (and through it the upstream connection) polled. True when
    /// the client is gone.
    fn round(&mut self, cx: &mut Context<'_>) -> bool {
        self.server.as_mut().poll(cx).is_ready()
    }
}

impl Future for Paired {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(spin) = &this.spin {
            spin.touch();
        }
        {
            let mut outer = this.wake.outer.lock().unwrap_or_else(|e| e.into_inner());
            if !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *outer = Some(cx.waker().clone());
            }
        }
        this.wake.polling.store(true, Ordering::SeqCst);
        let waker = Waker::from(this.wake.clone());
        let mut inner = Context::from_waker(&waker);
        let mut done = false;
        for _ in 0..ROUNDS_PER_POLL {
            this.wake.woken.store(false, Ordering::SeqCst);
            done = this.round(&mut inner);
            if done || !this.wake.woken.load(Ordering::SeqCst) {
                break;
            }
        }
        if !this.observe_after_write {
            // Several forwarding threads: observe before the client can see the response.
            this.deferred.run();
        }
        // What the rounds wrote to the client goes out now, in one write where it fits.
        let (flushed, was_full) = {
            let mut cork = this.cork.lock().unwrap_or_else(|e| e.into_inner());
            let was_full = cork.buf.len() >= CORK_LIMIT;
            (cork.drain(&mut inner), was_full)
        };
        if was_full && matches!(flushed, Poll::Ready(Ok(()))) {
            // A write that waited for room may go on now, and the socket, writable, will not
            // wake anyone: come back for it.
            this.wake.woken.store(true, Ordering::SeqCst);
        }
        if !done && matches!(flushed, Poll::Ready(Err(_))) {
            // The client is gone: let the server side see it (its next read fails) and close.
            done = this.round(&mut inner);
        }
        this.wake.polling.store(false, Ordering::SeqCst);
        if done {
            // The client is gone: the server side, and with it the upstream connection, is
            // dropped with this task.
            this.deferred.run();
            return Poll::Ready(());
        }
        if this.wake.woken.load(Ordering::SeqCst) {
            // Still work after the last round: come back after other tasks had their turn.
            cx.waker().wake_by_ref();
        }
        // Every byte this poll moved has been handed to the sockets: now observe it.
        this.deferred.run();
        Poll::Pending
    }
}
