//! The TLS client settings the proxy uses wherever it speaks TLS: to an https upstream and to an
//! https OTLP collector. One place, so both trust the same roots (Mozilla's, plus the operator's
//! PEM files) with the same crypto provider (ring, as the client crate's reqwest).

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::{self, RootCertStore};

/// Why the proxy's TLS client settings cannot be made: a PEM file of trust anchors that does
/// not hold usable certificates, or settings rustls refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A `CERTIFICATE` block of the file does not parse.
    #[error("{file}: not a PEM certificate ({source})")]
    NotPem {
        /// The file, as the caller names it.
        file: String,
        /// What is wrong with the block.
        source: tokio_rustls::rustls::pki_types::pem::Error,
    },
    /// A certificate parses but cannot be a trust anchor.
    #[error("{file}: certificate {index} is not usable as a root ({source})")]
    NotARoot {
        /// The file, as the caller names it.
        file: String,
        /// The certificate's 1-based position in the file.
        index: usize,
        /// Why rustls refuses it.
        source: rustls::Error,
    },
    /// The file holds no certificate at all.
    #[error("{file}: no CERTIFICATE block found")]
    NoCertificate {
        /// The file, as the caller names it.
        file: String,
    },
    /// An extra root certificate is refused by the root store.
    #[error("{0}")]
    Root(#[source] rustls::Error),
    /// rustls refuses the protocol versions with the crypto provider.
    #[error("TLS settings: {0}")]
    Settings(#[source] rustls::Error),
}

/// The certificates of a PEM file, each checked to be usable as a trust anchor. `source` names
/// the file in errors. A file without a certificate, or with one that does not parse, is an error.
pub fn certificates_from_pem(
    pem: &[u8],
    source: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let mut out = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TlsError::NotPem {
            file: source.to_string(),
            source: e,
        })?;
        let mut probe = RootCertStore::empty();
        probe.add(cert.clone()).map_err(|e| TlsError::NotARoot {
            file: source.to_string(),
            index: out.len() + 1,
            source: e,
        })?;
        out.push(cert);
    }
    if out.is_empty() {
        return Err(TlsError::NoCertificate {
            file: source.to_string(),
        });
    }
    Ok(out)
}

/// A rustls client configuration with ring, TLS 1.2 and 1.3, Mozilla's roots plus `extra`, and
/// the given ALPN protocols.
pub fn client_config(
    extra: &[CertificateDer<'static>],
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for c in extra {
        roots.add(c.clone()).map_err(TlsError::Root)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Settings)?
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
        assert!(matches!(&e, TlsError::NoCertificate { file } if file == "x.pem"));
        assert_eq!(e.to_string(), "x.pem: no CERTIFICATE block found");
        let junk = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = certificates_from_pem(junk, "y.pem").unwrap_err();
        assert!(
            matches!(&e, TlsError::NotARoot { file, index: 1, .. } if file == "y.pem"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with("y.pem: certificate 1 is not usable as a root ("),
            "{e}"
        );
        assert!(client_config(&[], &[b"http/1.1"]).is_ok());
    }
}
