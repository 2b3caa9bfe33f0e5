//! Errors of the HTTP observer: [`Cut`], the exchange that closes the client's connection, and
//! [`error_chain`], an error's text with its causes (also used by the OTLP exporter).

/// The upstream accepted the request and closed without answering: close the client's
/// connection too.
#[derive(Debug)]
pub(super) struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the upstream closed the connection without a response")
    }
}

impl std::error::Error for Cut {}

/// An error with its causes, `: `-separated (rustls's and reqwest's own messages leave out why a
/// connection or a TLS handshake failed).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
