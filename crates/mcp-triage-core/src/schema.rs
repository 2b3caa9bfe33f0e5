//! A tool's `outputSchema`, compiled once and used to validate every `structuredContent`.

use std::fmt;

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
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            // 2020-12 makes `format` an annotation unless a schema opts into the assertion
            // vocabulary; say so explicitly rather than rely on the crate's default.
            .should_validate_formats(false)
            .build(schema)
            .map_err(|e| SchemaError(e.to_string()))?;
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
