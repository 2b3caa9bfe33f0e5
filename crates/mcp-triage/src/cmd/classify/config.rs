//! `classify`'s arguments resolved once (the "high" arguments): the [`CallContext`] every
//! response is classified in, and either one response's [`ResponseHead`] or the batch
//! engine's [`BatchOptions`]. The combinations clap cannot express are checked here, and the
//! `--output-schema` file is read and compiled here, before any input is touched, so a bad
//! schema is named before a batch of millions of lines starts.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use mcp_triage_core::{CallContext, OutputSchema, ResponseHead, SchemaError};
use mcp_triage_proxy::batch::{BatchOptions, VerdictFormat};

use super::args::{ClassifyArgs, Format};

/// What `classify` classifies, and how it prints it.
#[derive(Debug)]
pub struct ClassifyConfig {
    /// `--expect-id`, `--protocol-version`, `--now`, the limits and the output schema.
    pub context: CallContext,
    /// One response, or an exchange file.
    pub input: Input,
}

/// One response (`FILE`) or an exchange file (`--batch`).
#[derive(Debug)]
pub enum Input {
    /// One response body with the head the flags describe.
    One {
        /// The body (`-`: standard input), read when the command runs.
        file: PathBuf,
        /// `--status`, `--content-type` and the `--header`s.
        head: ResponseHead,
        /// How the verdict is printed (default: text).
        format: VerdictFormat,
    },
    /// `--batch FILE.jsonl`.
    Batch {
        /// The exchange file.
        path: PathBuf,
        /// `--each`, `--fail-fast`, `--jobs` (default: the cores, at most 8), `--max-line-bytes`.
        options: BatchOptions,
        /// The summary line's format (default: json), or None with `--each`, which prints no
        /// summary.
        summary: Option<Format>,
    },
}

/// Why `classify`'s arguments cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--each`, `--jobs` or `--fail-fast` without `--batch`.
    #[error("--each, --jobs and --fail-fast go with --batch FILE.jsonl")]
    BatchOnlyOptions,
    /// Neither a FILE nor `--batch`.
    #[error("give a FILE (or - for standard input), or --batch FILE.jsonl")]
    NoInput,
    /// The `--output-schema` file cannot be read.
    #[error("cannot read --output-schema {}: {source}", path.display())]
    SchemaUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The `--output-schema` file is not JSON.
    #[error("--output-schema {} is not JSON: {source}", path.display())]
    SchemaNotJson {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The `--output-schema` file is not a schema the core can compile.
    #[error("--output-schema {}: {source}", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// The compiler's error.
        source: SchemaError,
    },
}

/// Checks `classify`'s arguments and resolves their defaults. The checks run in the order
/// the command always ran them: batch-only flags, the output schema, then the input.
pub fn config(args: ClassifyArgs) -> Result<ClassifyConfig, ConfigError> {
    if args.batch.is_none() && (args.each || args.jobs.is_some() || args.fail_fast) {
        return Err(ConfigError::BatchOnlyOptions);
    }
    let mut context = CallContext::new(args.expect_id)
        .with_protocol_version(args.protocol_version)
        .with_now(args.now.unwrap_or_else(SystemTime::now))
        .with_limits(args.limits.limits())
        .with_drafts(args.draft);
    if let Some(path) = &args.output_schema {
        context = context.with_output_schema(Arc::new(output_schema(path)?));
    }
    let input = match (args.batch, args.file) {
        (Some(path), _) => {
            let format = args.format.unwrap_or(Format::Json);
            let options = BatchOptions {
                each: args.each.then_some(format.into()),
                fail_fast: args.fail_fast,
                jobs: args.jobs.unwrap_or_else(default_jobs),
                max_line_bytes: args.max_line_bytes,
            };
            let summary = (!args.each).then_some(format);
            Input::Batch {
                path,
                options,
                summary,
            }
        }
        (None, Some(file)) => {
            let mut head = ResponseHead::new(args.status).content_type(&args.content_type);
            for (name, value) in args.headers {
                head = head.header(name, value);
            }
            let format = args.format.unwrap_or(Format::Text).into();
            Input::One { file, head, format }
        }
        (None, None) => return Err(ConfigError::NoInput),
    };
    Ok(ClassifyConfig { context, input })
}

/// `--jobs` left out: one worker a core, at most 8 (past that the batch waits on reading).
fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
}

/// The `--output-schema` file read, parsed and compiled, each failure naming the file.
fn output_schema(path: &Path) -> Result<OutputSchema, ConfigError> {
    let path = path.to_path_buf();
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(source) => return Err(ConfigError::SchemaUnreadable { path, source }),
    };
    let schema: serde_json::Value = match serde_json::from_slice(&text) {
        Ok(schema) => schema,
        Err(source) => return Err(ConfigError::SchemaNotJson { path, source }),
    };
    OutputSchema::compile(&schema).map_err(|source| ConfigError::Schema { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;
    use mcp_triage_core::{ProtocolVersion, RequestId};

    fn config_of(argv: &[&str]) -> Result<ClassifyConfig, ConfigError> {
        config(parsed(argv))
    }

    #[test]
    fn one_response_gets_its_head_and_context() {
        let c = config_of(&[
            "body.json",
            "--status",
            "503",
            "--header",
            "Retry-After: 2",
            "--expect-id",
            "\"7\"",
            "--protocol-version",
            "2025-06-18",
            "--now",
            "1000",
            "--max-depth",
            "9",
        ])
        .unwrap();
        assert_eq!(c.context.expected_id, RequestId::String("7".into()));
        assert_eq!(c.context.protocol_version, ProtocolVersion::V2025_06_18);
        assert_eq!(
            c.context.now,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000)
        );
        assert_eq!(c.context.limits.max_depth, 9);
        assert!(c.context.output_schema.is_none());
        assert!(
            !c.context.drafts.any(),
            "every draft is off unless asked for"
        );
        let Input::One { file, head, format } = c.input else {
            panic!("one response expected");
        };
        assert_eq!(file, PathBuf::from("body.json"));
        assert_eq!(head.status, 503);
        assert_eq!(head.get("content-type"), Some("application/json"));
        assert_eq!(head.get("retry-after"), Some("2"));
        assert_eq!(format, VerdictFormat::Text);
    }

    /// `--draft` reaches the context of one response and of every `--batch` line (a line's
    /// context is its own settings over this one).
    #[test]
    fn drafts_reach_the_context() {
        let c = config_of(&["body.json", "--draft", "sep-2145"]).unwrap();
        assert!(c.context.drafts.sep_2145 && !c.context.drafts.tool_failure);
        let c = config_of(&["--batch", "x.jsonl", "--draft", "all"]).unwrap();
        assert_eq!(c.context.drafts, mcp_triage_core::Drafts::ALL);
    }

    #[test]
    fn batch_defaults_to_a_json_summary_and_each_drops_it() {
        let c = config_of(&["--batch", "x.jsonl", "--jobs", "3"]).unwrap();
        let Input::Batch {
            path,
            options,
            summary,
        } = c.input
        else {
            panic!("a batch expected");
        };
        assert_eq!(path, PathBuf::from("x.jsonl"));
        assert_eq!(options.jobs, 3);
        assert_eq!(options.each, None);
        assert!(!options.fail_fast);
        assert_eq!(options.max_line_bytes, 256 << 20);
        assert_eq!(summary, Some(Format::Json));

        let c = config_of(&["--batch", "x.jsonl", "--each", "--format", "text"]).unwrap();
        let Input::Batch {
            options, summary, ..
        } = c.input
        else {
            panic!("a batch expected");
        };
        assert_eq!(options.each, Some(VerdictFormat::Text));
        assert!((1..=8).contains(&options.jobs));
        assert_eq!(summary, None);
    }

    #[test]
    fn batch_only_flags_without_batch_are_refused() {
        for flag in ["--each", "--fail-fast"] {
            let e = config_of(&["body.json", flag]).unwrap_err();
            assert!(matches!(e, ConfigError::BatchOnlyOptions), "{flag}: {e}");
        }
        let e = config_of(&["body.json", "--jobs", "2"]).unwrap_err();
        assert!(matches!(e, ConfigError::BatchOnlyOptions), "{e}");
    }

    #[test]
    fn no_input_is_refused() {
        assert!(matches!(config_of(&[]), Err(ConfigError::NoInput)));
    }

    #[test]
    fn an_unreadable_schema_is_named_before_the_input_is_missed() {
        let e = config_of(&["--output-schema", "/nonexistent/mcp-triage-schema.json"]).unwrap_err();
        assert!(matches!(e, ConfigError::SchemaUnreadable { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("cannot read --output-schema /nonexistent/mcp-triage-schema.json: "),
            "{e}"
        );
    }
}
