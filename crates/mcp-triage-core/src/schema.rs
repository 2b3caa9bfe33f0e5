//! A tool's `outputSchema`, compiled once and used to validate every `structuredContent`.

use std::fmt;

/// The JSON Schema dialect a schema from a server is evaluated in: the draft its `$schema`
/// names when the validator knows it (4, 6, 7, 2019-09, 2020-12), else 2020-12. MCP makes
/// 2020-12 the default for a schema without `$schema` (2025-11-25 and later); a `$schema` we
/// cannot evaluate gets the same default rather than a compile error, so such a tool is still
/// checked by the keywords every dialect shares.
pub fn dialect(schema: &serde_json::Value) -> jsonschema::Draft {
    match jsonschema::Draft::Draft202012.detect(schema) {
        jsonschema::Draft::Unknown => jsonschema::Draft::Draft202012,
        known => known,
    }
}

/// Compiles a schema a server listed (`inputSchema`, `outputSchema`) in its [`dialect`],
/// `format` as an annotation (2020-12 asserts it only when a schema opts into that
/// vocabulary; said here rather than left to the crate's default) and offline: a `$ref` to
/// anything outside the document fails to compile instead of being fetched (SEP-2106: a
/// client MUST NOT dereference a network `$ref` on its own; the core does no I/O anyway).
/// The schema is only read: whatever keywords it carries stay in the caller's value.
pub fn compile_listed(
    schema: &serde_json::Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_draft(dialect(schema))
        .should_validate_formats(false)
        .offline()
        .build(schema)
}

/// A compiled output schema. JSON Schema 2020-12 unless the schema names another draft in
/// `$schema`; remote `$ref`s are not fetched (the core does no I/O).
pub struct OutputSchema {
    validator: jsonschema::Validator,
    source: serde_json::Value,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema")
            .field("source", &self.source)
            .finish()
    }
}

/// An output schema that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(pub String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid outputSchema: {}", self.0)
    }
}

impl std::error::Error for SchemaError {}

/// The first place where an instance does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// JSON pointer into the instance.
    pub instance_pointer: String,
    /// JSON pointer into the schema (the failing keyword).
    pub schema_pointer: String,
    /// What the validator said.
    pub message: String,
}

impl OutputSchema {
    /// Compiles a schema.
    pub fn compile(schema: &serde_json::Value) -> Result<OutputSchema, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError(
                "a JSON Schema is an object (or a boolean)".to_string(),
            ));
        }
        let validator = compile_listed(schema).map_err(|e| SchemaError(e.to_string()))?;
        Ok(OutputSchema {
            validator,
            source: schema.clone(),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &serde_json::Value {
        &self.source
    }

    /// Validates an instance; the first error, if any.
    pub fn validate(&self, instance: &serde_json::Value) -> Result<(), SchemaMismatch> {
        match self.validator.iter_errors(instance).next() {
            None => Ok(()),
            Some(e) => Err(SchemaMismatch {
                instance_pointer: e.instance_path().to_string(),
                schema_pointer: e.schema_path().to_string(),
                message: crate::verdict::sanitize_line(&e.to_string(), 300),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `dependentRequired` exists from 2019-09 on: evaluated in 2020-12 (no `$schema`, or one
    /// the validator does not know), ignored when the schema says it is draft-07.
    #[test]
    fn the_dialect_is_the_one_schema_names_else_2020_12() {
        let keyword = json!({ "dependentRequired": { "a": ["b"] } });
        let with = |uri: Option<&str>| {
            let mut s = keyword.clone();
            if let Some(u) = uri {
                s["$schema"] = json!(u);
            }
            s
        };
        let lacks_b = json!({ "a": 1 });
        for (uri, draft, enforced) in [
            (None, jsonschema::Draft::Draft202012, true),
            (
                Some("https://json-schema.org/draft/2020-12/schema"),
                jsonschema::Draft::Draft202012,
                true,
            ),
            (
                Some("http://json-schema.org/draft-07/schema#"),
                jsonschema::Draft::Draft7,
                false,
            ),
            (
                Some("https://example.com/my-dialect"),
                jsonschema::Draft::Draft202012,
                true,
            ),
        ] {
            let schema = with(uri);
            assert_eq!(dialect(&schema), draft, "{uri:?}");
            let compiled = OutputSchema::compile(&schema).expect("compiles");
            assert_eq!(compiled.validate(&lacks_b).is_err(), enforced, "{uri:?}");
            assert_eq!(compiled.source(), &schema, "kept as given");
        }
    }

    /// A `$ref` outside the document is not fetched: the schema does not compile. A local
    /// listener sees no connection.
    #[test]
    fn a_network_ref_is_not_dereferenced() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/s.json", listener.local_addr().unwrap());
        let e = compile_listed(&json!({ "properties": { "p": { "$ref": url } } }));
        assert!(e.is_err(), "an unresolvable remote $ref must not compile");
        assert_eq!(
            listener.accept().map_err(|e| e.kind()).err(),
            Some(std::io::ErrorKind::WouldBlock),
            "nothing connected"
        );
    }
}
