//! JSON: the model itself (see [`crate::model`]) plus the totals, pretty-printed, for
//! machines that want more than JUnit carries (evidence, references, charts).

use std::io::{self, Write};

use crate::model::Report;

/// Write `report` as one JSON document with a `counts` member added.
pub fn write(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let mut v = serde_json::to_value(report).map_err(io::Error::other)?;
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "counts".into(),
            serde_json::to_value(report.counts()).map_err(io::Error::other)?,
        );
        o.insert("passed".into(), serde_json::Value::Bool(report.passed()));
    }
    serde_json::to_writer_pretty(&mut *w, &v).map_err(io::Error::other)?;
    writeln!(w)
}
