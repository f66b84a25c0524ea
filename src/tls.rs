//! TLS on the public listener (rustls): certificate loading, ALPN for h2 and
//! HTTP/1.1, and an acceptor that reloads swap in place.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("the certificate and key do not form a usable TLS identity: {0}")]
    Identity(String),
}

/// The acceptor in force; a reload stores a new one, connections in progress
/// keep the one they started with.
pub type SharedAcceptor = Arc<ArcSwap<TlsAcceptor>>;

/// Builds a TLS acceptor from `[server.tls]`, naming the file at fault.
pub fn acceptor(tls: &config::Tls) -> Result<TlsAcceptor, Error> {
    let certs = certificates(&tls.cert)?;
    let key = private_key(&tls.key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| Error::Identity(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Identity(e.to_string()))?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let file_error = |message: String| Error::File {
        path: path.to_owned(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(format!("cannot read certificates: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(format!("not a PEM certificate chain: {e}")))?;
    if certs.is_empty() {
        return Err(file_error("no PEM certificate found".to_owned()));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, Error> {
    // The key's bytes never reach a message: only the file name and the kind of problem.
    PrivateKeyDer::from_pem_file(path).map_err(|e| Error::File {
        path: path.to_owned(),
        message: format!("not a PEM private key ({})", describe_pem_error(&e)),
    })
}

fn describe_pem_error(e: &rustls::pki_types::pem::Error) -> &'static str {
    use rustls::pki_types::pem::Error as Pem;
    match e {
        Pem::NoItemsFound => "no key found",
        Pem::Io(_) => "cannot read the file",
        _ => "malformed PEM",
    }
}

/// A client TLS config for `https://` upstreams: the system's roots.
pub fn client_config() -> rustls::ClientConfig {
    let roots = crate::outbound::system_roots().clone();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    match rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
    {
        Ok(builder) => builder.with_root_certificates(roots).with_no_client_auth(),
        Err(e) => {
            tracing::warn!(error = %e, "TLS versions refused by the provider; using defaults");
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        }
    }
}
