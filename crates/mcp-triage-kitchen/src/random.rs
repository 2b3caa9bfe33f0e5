//! OS randomness for ids and tokens (session ids, task ids, OAuth tokens, the MRTR key).
//!
//! A leaf module, so the authorization server and the task store can draw ids without
//! importing the shared state.

/// Random bytes from the OS (falls back to time-derived bytes if the OS refuses, which only
/// weakens session-id unpredictability, never correctness).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if getrandom::fill(&mut b).is_err() {
        let t = crate::journal::now_ms().to_le_bytes();
        for (i, x) in b.iter_mut().enumerate() {
            *x = t[i % 8] ^ (i as u8).wrapping_mul(31);
        }
    }
    b
}
