//! Delivering the first `tools/call`'s answer the faulty way its `stdio.*` scenario says.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::fault::StdioFault;
use super::{Answer, Front, Override};

/// stderr is written in chunks of this size, so a flood blocks on a full pipe as a real
/// server's logging does.
const FLOOD_CHUNK: usize = 8 * 1024;

fn lost(detail: &str) -> Answer {
    Answer {
        detail: Some(detail.to_string()),
        ..Answer::no_response()
    }
}

impl Front {
    /// Deliver `lines` (the kitchen's answer to `msg`) with fault `f`.
    pub(super) async fn deliver_faulty(&self, f: StdioFault, msg: &Value, lines: Vec<Vec<u8>>) {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let answer = match f {
            StdioFault::ExitMidCall => Some(lost("the stdio server exited mid-call")),
            StdioFault::PartialLine => {
                Some(lost("the stdio server cut the answer line and exited"))
            }
            StdioFault::NeverAnswers => Some(lost("the stdio server never answered")),
            _ => None,
        };
        self.sink.set_override(
            &id,
            Override {
                note: f.note(),
                answer,
            },
        );
        self.sink.flush(false);
        match f {
            StdioFault::ExitMidCall => self.exit(&id, "exited mid-call").await,
            StdioFault::PartialLine => {
                let line = lines.into_iter().next().unwrap_or_default();
                let half = line[..line.len() / 2].to_vec();
                // Written past the line queue, without a newline, then the process ends.
                self.drain_queue().await;
                write_stdout_raw(&half);
                self.exit(&id, "wrote half a line and exited").await
            }
            StdioFault::NeverAnswers => {
                self.sink.event("withheld", Some(&id), Some(f.note()));
            }
            StdioFault::Banner => {
                self.write_raw(b"note: answering now (not JSON-RPC)".to_vec())
                    .await;
                self.deliver(msg, lines).await
            }
            StdioFault::StderrFlood { bytes } => {
                let written = flood_stderr(bytes).await;
                self.sink.event(
                    "floodDone",
                    Some(&id),
                    Some(format!("{written} of {bytes} bytes written to stderr")),
                );
                self.deliver(msg, lines).await
            }
            StdioFault::SlowAnswer { delay_ms } => {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                self.deliver(msg, lines).await
            }
            StdioFault::HugeLine { bytes } => {
                let lines = lines
                    .into_iter()
                    .map(|l| padded(l, bytes as usize))
                    .collect();
                self.deliver(msg, lines).await
            }
        }
    }

    /// Wait (bounded) until the line queue is empty, so a raw write comes after it.
    async fn drain_queue(&self) {
        for _ in 0..200 {
            if self.out.capacity() == self.out.max_capacity() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    async fn exit(&self, id: &Value, why: &str) {
        self.drain_queue().await;
        self.sink.flush(true);
        self.sink.event("exited", Some(id), Some(why.to_string()));
        std::process::exit(3);
    }
}

/// Write bytes to stdout past the line queue (no newline added).
fn write_stdout_raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Write `bytes` to stderr in chunks, blocking while the pipe is full (that is the point: a
/// client that never drains it stalls the server here). Returns the bytes written.
async fn flood_stderr(bytes: u64) -> u64 {
    tokio::task::spawn_blocking(move || {
        let chunk = vec![b'x'; FLOOD_CHUNK - 1];
        let mut err = std::io::stderr().lock();
        let mut done = 0u64;
        while done < bytes {
            let n = (bytes - done).min(FLOOD_CHUNK as u64) as usize;
            let mut line = chunk[..n.saturating_sub(1)].to_vec();
            line.push(b'\n');
            if err.write_all(&line).is_err() {
                break;
            }
            done += n as u64;
        }
        let _ = err.flush();
        done
    })
    .await
    .unwrap_or(0)
}

/// The answer line grown to about `size` bytes: a tool result's first text content padded
/// (still a valid answer, only long); other messages are left as they are.
fn padded(line: Vec<u8>, size: usize) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    let Some(text) = v["result"]["content"][0]["text"].as_str() else {
        return line;
    };
    let pad = size.saturating_sub(line.len());
    let grown = format!("{text} {}", "x".repeat(pad.saturating_sub(1)));
    v["result"]["content"][0]["text"] = Value::String(grown);
    v.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_answer_is_one_valid_line_of_the_size() {
        let line =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
        let p = padded(line.to_vec(), 10_000);
        assert!(p.len() >= 10_000 && p.len() < 10_100, "{}", p.len());
        assert!(!p.contains(&b'\n'));
        let v: Value = serde_json::from_slice(&p).unwrap();
        assert!(v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("ok "));
    }
}
