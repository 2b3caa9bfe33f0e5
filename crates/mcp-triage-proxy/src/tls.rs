//! The TLS client settings the proxy uses wherever it speaks TLS: to an https upstream and to an
//! https OTLP collector. One place, so both trust the same roots (Mozilla's, plus the operator's
//! PEM files) with the same crypto provider (ring, as the client crate's reqwest).

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::{self, RootCertStore};

/// The certificates of a PEM file, each checked to be usable as a trust anchor. `source` names
/// the file in errors. A file without a certificate, or with one that does not parse, is an error.
pub fn certificates_from_pem(
    pem: &[u8],
    source: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut out = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| format!("{source}: not a PEM certificate ({e})"))?;
        let mut probe = RootCertStore::empty();
        probe.add(cert.clone()).map_err(|e| {
            format!(
                "{source}: certificate {} is not usable as a root ({e})",
                out.len() + 1
            )
        })?;
        out.push(cert);
    }
    if out.is_empty() {
        return Err(format!("{source}: no CERTIFICATE block found"));
    }
    Ok(out)
}

/// A rustls client configuration with ring, TLS 1.2 and 1.3, Mozilla's roots plus `extra`, and
/// the given ALPN protocols.
pub fn client_config(
    extra: &[CertificateDer<'static>],
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for c in extra {
        roots.add(c.clone()).map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_file_must_hold_usable_certificates() {
        let e = certificates_from_pem(b"hello", "x.pem").unwrap_err();
        assert!(e.contains("x.pem: no CERTIFICATE block"), "{e}");
        let junk = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = certificates_from_pem(junk, "y.pem").unwrap_err();
        assert!(e.starts_with("y.pem: "), "{e}");
        assert!(client_config(&[], &[b"http/1.1"]).is_ok());
    }
}
