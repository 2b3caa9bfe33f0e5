use crate::verdict::{sanitize_line, AuthChallenge};

/// Parses `WWW-Authenticate` values (RFC 9110 §11.6.1) and returns the challenge a client should
/// act on: the `Bearer` one if any header offers it, else the first. Parameter values may be
/// tokens or quoted strings; names compare case-insensitively. `None` when no challenge parses.
pub fn parse_www_authenticate<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Option<AuthChallenge> {
    let mut first = None;
    for value in values {
        for challenge in parse_challenges(value) {
            if challenge.scheme.eq_ignore_ascii_case("bearer") {
                return Some(challenge);
            }
            first.get_or_insert(challenge);
        }
    }
    first
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Splits one header value into challenges: `scheme [token68 | param *("," param)]`, with
/// challenges separated by commas. A new challenge starts at a token followed by white space
/// (or the end) that is not followed by `=`.
fn parse_challenges(value: &str) -> Vec<AuthChallenge> {
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    let mut out: Vec<AuthChallenge> = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && (chars[*i] == ' ' || chars[*i] == '\t') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && is_tchar(chars[*i]) {
            *i += 1;
        }
        chars[start..*i].iter().collect()
    };
    loop {
        skip_ws(&mut i);
        while i < chars.len() && chars[i] == ',' {
            i += 1;
            skip_ws(&mut i);
        }
        if i >= chars.len() {
            break;
        }
        let name = token(&mut i);
        if name.is_empty() {
            // Not a token: skip one character so malformed input cannot loop forever.
            i += 1;
            continue;
        }
        skip_ws(&mut i);
        if i < chars.len() && chars[i] == '=' && !out.is_empty() {
            // An auth-param of the current challenge.
            i += 1;
            skip_ws(&mut i);
            let val = if i < chars.len() && chars[i] == '"' {
                i += 1;
                let mut s = String::new();
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
                i += 1; // closing quote (or past the end)
                s
            } else {
                let start = i;
                while i < chars.len() && chars[i] != ',' && chars[i] != ' ' && chars[i] != '\t' {
                    i += 1;
                }
                chars[start..i].iter().collect()
            };
            let current = out.last_mut().expect("checked non-empty");
            set_param(current, &name, val);
        } else {
            // A new challenge: scheme, then maybe a token68 (ignored) before params.
            out.push(AuthChallenge {
                scheme: name,
                ..AuthChallenge::default()
            });
            if i < chars.len() && chars[i] == '=' {
                // token68 ending in '=' padding directly after the scheme: skip it.
                while i < chars.len() && chars[i] != ',' {
                    i += 1;
                }
            }
        }
    }
    out
}

fn set_param(c: &mut AuthChallenge, name: &str, value: String) {
    let slot = match name.to_ascii_lowercase().as_str() {
        "resource_metadata" => &mut c.resource_metadata,
        "scope" => &mut c.scope,
        "error" => &mut c.error,
        "error_description" => &mut c.error_description,
        "realm" => &mut c.realm,
        _ => return,
    };
    if slot.is_none() {
        *slot = Some(sanitize_line(&value, 2048));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_example() {
        let c = parse_www_authenticate([
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read""#,
        ])
        .unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read"));
    }

    #[test]
    fn insufficient_scope_and_tokens() {
        let c = parse_www_authenticate([
            r#"Bearer error="insufficient_scope", scope="a b", error_description="need \"b\"""#,
        ])
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.error_description.as_deref(), Some("need \"b\""));
        let c = parse_www_authenticate(["bearer error=invalid_token"]).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn prefers_bearer_among_several() {
        let c =
            parse_www_authenticate([r#"Basic realm="x", Bearer realm="y", scope="s""#]).unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.realm.as_deref(), Some("y"));
        let c = parse_www_authenticate(["Negotiate abc==", "Bearer scope=z"]).unwrap();
        assert_eq!(c.scope.as_deref(), Some("z"));
    }

    #[test]
    fn garbage_does_not_panic() {
        for v in [
            "",
            ",,,",
            "=",
            "\"",
            "Bearer =",
            "Bearer a=\"unterminated",
            "ä=ö",
        ] {
            let _ = parse_www_authenticate([v]);
        }
        assert_eq!(parse_www_authenticate([""]), None);
    }
}
