//! Escaping shared by the XML and HTML writers.
//!
//! XML 1.0 cannot carry most control characters even escaped, and evidence lines are copied
//! from untrusted peers (journal headers, client output), so those characters are replaced
//! by U+FFFD instead of producing a document a strict parser rejects.

fn escape(s: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&#39;"),
            '\n' if quotes => out.push_str("&#10;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Escape for an attribute value in double quotes.
pub fn attr(s: &str) -> String {
    escape(s, true)
}

/// Escape for element text.
pub fn text(s: &str) -> String {
    escape(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_replaces_control_characters() {
        assert_eq!(attr(r#"a<b>&"c"'"#), "a&lt;b&gt;&amp;&quot;c&quot;&#39;");
        assert_eq!(text("x\u{1}y\tz\n"), "x\u{FFFD}y\tz\n");
        assert_eq!(attr("l1\nl2"), "l1&#10;l2");
    }
}
