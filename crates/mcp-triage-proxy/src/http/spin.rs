//! The adaptive spin ([`Spin`]): with one forwarding thread, poll the sockets for a moment after
//! traffic instead of sleeping at once. [`super::paired::Paired`] marks activity; the spin
//! task started by [`super::start`] reads it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// Polling instead of sleeping for a moment after traffic.
///
/// Why: on a virtual machine, putting an idle thread to sleep and waking it when a socket has
/// data costs tens of microseconds of latency and of CPU (at one exchange at a time the proxy
/// spent about 40% of its CPU switching in and out, `perf`). A proxy sleeps twice per exchange:
/// waiting for the upstream's answer and for the client's next request. While it spins, the
/// forwarding thread keeps asking the kernel for ready sockets (a zero-timeout `epoll_wait`,
/// through tokio's `yield_now`) after the last activity, so an answer that comes within the
/// window is picked up without a sleep. Busy traffic never spins (there is always work).
///
/// How long it spins adapts as Linux's guest halt-polling does (`cpuidle-haltpoll`, whose
/// default ceiling is also 200 µs; on this project's machines the guest kernel's own polling is
/// switched off): see [`SpinWindow`]. Quiet periods that a spin of the ceiling would have caught
/// grow the window, quiet periods longer than the ceiling shrink it, so a server whose answers
/// take milliseconds, or a client that sends now and then, costs no spinning at all.
pub(super) struct Spin {
    /// Bumped by every connection poll: the spinner reads the clock, connections do not (a
    /// clock read per poll was about 2% of the proxy's CPU).
    activity: std::sync::atomic::AtomicU64,
    parked: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Spin {
    pub(super) fn new() -> Spin {
        Spin {
            activity: std::sync::atomic::AtomicU64::new(0),
            parked: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// A connection did something: spin for the window from now.
    pub(super) fn touch(&self) {
        // One forwarding thread (spinning needs it): a plain load and store, no locked add.
        let n = self.activity.load(Ordering::Relaxed);
        self.activity.store(n.wrapping_add(1), Ordering::Relaxed);
        if self.parked.load(Ordering::Relaxed) {
            self.notify.notify_one();
        }
    }
}

/// The adaptive spin window, `cpuidle-haltpoll`'s rule (drivers/cpuidle/governors/haltpoll.c)
/// with the same factors: after each quiet period that ended in a sleep, a period no longer
/// than the ceiling doubles the window (from at least [`SpinWindow::GROW_START_NS`]), one longer
/// than the ceiling halves it. A quiet period the spin caught leaves it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpinWindow {
    /// How long to spin now, in nanoseconds.
    limit_ns: u64,
    /// The ceiling (`--spin-us`).
    max_ns: u64,
}

impl SpinWindow {
    /// haltpoll's `guest_halt_poll_grow_start`: the first window after it had shrunk to nothing.
    const GROW_START_NS: u64 = 50_000;

    /// Starts closed: the first short quiet periods open it.
    fn new(max: Duration) -> SpinWindow {
        SpinWindow {
            limit_ns: 0,
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// A quiet period of `idle_ns` ended (activity after the thread had gone to sleep).
    fn quiet_period_ended(&mut self, idle_ns: u64) {
        if idle_ns > self.limit_ns && idle_ns <= self.max_ns {
            self.limit_ns = (self.limit_ns * 2)
                .max(Self::GROW_START_NS)
                .min(self.max_ns);
        } else if idle_ns > self.max_ns {
            self.limit_ns /= 2;
        }
    }
}

pub(super) async fn spin_loop(spin: Arc<Spin>, ceiling: Duration, mut stop: watch::Receiver<bool>) {
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut window = SpinWindow::new(ceiling);
    let mut seen = spin.activity.load(Ordering::Relaxed);
    // When the activity last changed, as this task saw it (within one runtime tick).
    let mut quiet_since = now();
    loop {
        let t = now();
        let activity = spin.activity.load(Ordering::Relaxed);
        if activity != seen {
            seen = activity;
            quiet_since = t;
        }
        if t.saturating_sub(quiet_since) < window.limit_ns {
            // Gives the core to any other runnable thread first (sched_yield): on cores shared
            // with the client or the server, spinning must never delay them, only fill time
            // the core would otherwise spend idle. Then lets the runtime poll its sockets
            // without blocking, and comes back.
            std::thread::yield_now();
            tokio::task::yield_now().await;
            continue;
        }
        spin.parked.store(true, Ordering::Relaxed);
        tokio::select! {
            _ = spin.notify.notified() => {}
            _ = stop.changed() => return,
        }
        spin.parked.store(false, Ordering::Relaxed);
        // Woken by the activity that ended the quiet period (this task runs in the same tick).
        let t = now();
        window.quiet_period_ended(t.saturating_sub(quiet_since));
        seen = spin.activity.load(Ordering::Relaxed);
        quiet_since = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The haltpoll rule: short quiet periods open the window up to the ceiling, long ones
    /// close it again; a period the spin already caught changes nothing.
    #[test]
    fn the_spin_window_follows_how_soon_traffic_comes_back() {
        let us = |n: u64| n * 1_000;
        let mut w = SpinWindow::new(Duration::from_micros(200));
        assert_eq!(w.limit_ns, 0, "starts closed");
        // Answers after 100 µs: 0 -> 50 (grow start) -> 100 -> 200, never past the ceiling.
        w.quiet_period_ended(us(100));
        assert_eq!(w.limit_ns, us(50));
        w.quiet_period_ended(us(100));
        assert_eq!(w.limit_ns, us(100));
        w.quiet_period_ended(us(150));
        assert_eq!(w.limit_ns, us(200));
        w.quiet_period_ended(us(190));
        assert_eq!(w.limit_ns, us(200), "the ceiling holds");
        // A period inside the window (the spin caught it) leaves it alone.
        w.quiet_period_ended(us(20));
        assert_eq!(w.limit_ns, us(200));
        // Milliseconds between exchanges: halved each time, down to nothing.
        for expected_ns in [100_000, 50_000, 25_000, 12_500] {
            w.quiet_period_ended(us(5_000));
            assert_eq!(w.limit_ns, expected_ns);
        }
        for _ in 0..20 {
            w.quiet_period_ended(us(5_000));
        }
        assert_eq!(w.limit_ns, 0, "a slow server costs no spinning");
        // A ceiling below the grow start is still a ceiling; zero never opens.
        let mut small = SpinWindow::new(Duration::from_micros(30));
        small.quiet_period_ended(us(10));
        assert_eq!(small.limit_ns, us(30));
        let mut off = SpinWindow::new(Duration::ZERO);
        off.quiet_period_ended(0);
        off.quiet_period_ended(us(10));
        assert_eq!(off.limit_ns, 0);
    }
}
