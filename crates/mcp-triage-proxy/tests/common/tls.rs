//! A certificate authority, a server certificate for 127.0.0.1, and a TLS terminator in front of
//! a plain server: for https upstreams (tls.rs) and https OTLP collectors (otlp.rs).

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::{self, pki_types::PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// A CA, and a server certificate for 127.0.0.1 that it signed: (CA PEM, chain, key).
pub fn certificates() -> (
    String,
    Vec<rustls::pki_types::CertificateDer<'static>>,
    PrivateKeyDer<'static>,
) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mcp-triage test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let key = PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    (ca.pem(), vec![server.der().clone(), ca.der().clone()], key)
}

/// Terminates TLS on 127.0.0.1:0 and relays each connection's plain bytes to `backend`.
pub async fn tls_terminator(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    backend: SocketAddr,
) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that rejects the certificate ends the handshake: nothing to relay.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                assert_eq!(
                    tls.get_ref().1.alpn_protocol(),
                    Some(&b"http/1.1"[..]),
                    "the client (proxy or OTLP exporter) offers http/1.1"
                );
                let mut plain = TcpStream::connect(backend).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    addr
}
