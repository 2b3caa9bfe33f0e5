//! Rules 5-8 of the classifier: from a parsed JSON-RPC message to a verdict.
//!
//! `envelope` judges the JSON-RPC layer (version tag, id, exactly one of result/error, the error
//! object), `result` judges the tool result (resultType, input requests, tasks, content blocks,
//! `isError`, `structuredContent` and the output schema), `task_state` judges a `tasks/get`
//! result (a task's state; a terminal one by the result or error it carries).

mod drafts;
mod envelope;
mod result;
mod task_state;

pub(crate) use envelope::{
    classify_document, classify_response_object, error_code_name, id_matches, rate_limited_wait,
    response_in, IdMatch,
};

use crate::verdict::Warning;

/// Warnings collected while judging one message, capped so that a hostile body with a million
/// unknown content blocks cannot make the verdict large.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub warnings: Vec<Warning>,
    dropped: usize,
}

const MAX_WARNINGS: usize = 16;

impl Findings {
    pub fn warn(&mut self, code: &str, detail: impl Into<String>) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning {
                code: code.to_string(),
                detail: detail.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    pub fn into_warnings(mut self) -> Vec<Warning> {
        if self.dropped > 0 {
            self.warnings.push(Warning {
                code: "MORE_WARNINGS".to_string(),
                detail: format!("{} further warnings were left out", self.dropped),
            });
        }
        self.warnings
    }
}
