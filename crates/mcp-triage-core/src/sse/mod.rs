//! Server-Sent Events, sans-IO: a WHATWG event-stream parser fed arbitrary chunks
//! ([`SseParser`]), and the classifier of a `tools/call` response stream built on it
//! ([`SseClassifier`]).

mod classifier;
mod parser;

pub(crate) use classifier::with_stack_for_depth;
pub use classifier::{SseClassifier, StreamEvent};
pub use parser::{Flow, SseItem, SseParser, SseTooLarge};
