//! A TLS front for the fault suite's certificate rows: it presents a chosen certificate (from
//! `certs.sh`: the expired one, or the broker's, whose SAN is IP:127.0.0.1 only) and, once a
//! client completes the handshake, forwards the plaintext to a broker. It counts completed
//! handshakes, so a row can tell "refused by the client" from "accepted".
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};

/// A running front.
pub struct TlsFront {
    /// The 127.0.0.1 port it listens on.
    pub port: u16,
    handshakes: Arc<AtomicUsize>,
}

impl TlsFront {
    /// TLS sessions a client completed.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

/// Starts a front on a free port, on `runtime`, for as long as the runtime lives.
pub fn start(
    runtime: &tokio::runtime::Runtime,
    cert: &Path,
    key: &Path,
    upstream: SocketAddr,
) -> TlsFront {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap_or_else(|e| panic!("{}: {e}", cert.display()))
        .collect::<Result<_, _>>()
        .expect("certificate PEM");
    let key = PrivateKeyDer::from_pem_file(key).expect("key PEM");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind TLS front");
    let port = listener.local_addr().unwrap().port();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let count = handshakes.clone();
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, count) = (acceptor.clone(), count.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut broker) = TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut broker).await;
                }
            });
        }
    });
    TlsFront { port, handshakes }
}
