//! TLS to the broker (`amqps://`). lapin is built without a TLS stack of its own; it dials
//! through our connector instead, which opens the TCP connection and runs the handshake
//! with the rustls the Keystone client already uses (`crate::tls_client`). lapin hands the
//! stream around as its runtime's TCP stream type, so the runtime here is tokio's with a
//! stream type that may be either plain or TLS.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_compat::Compat;
use async_rs::traits::{Executor, Reactor, RuntimeKit};
use async_rs::util::Task;
use async_rs::{Runtime, Tokio};
use futures_io::{AsyncRead, AsyncWrite};
use lapin::uri::AMQPUri;
use lapin::{AsyncTcpStream, Connection, ConnectionProperties};
use rustls::client::ResolvesClientCert;
use rustls::pki_types::ServerName;
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::tls_client::TlsClient;

/// The rustls configuration every `amqps://` connection of the relay uses.
#[derive(Clone)]
pub struct BusTls(Arc<rustls::ClientConfig>);

impl std::fmt::Debug for BusTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BusTls")
    }
}

impl BusTls {
    /// From `[oslo_messaging_rabbit] ssl_ca_file`, `ssl_cert_file`, `ssl_key_file`; an
    /// unusable file is refused here, at start.
    pub fn new(client: &TlsClient) -> Result<Self, String> {
        Ok(BusTls(Arc::new(client.config("message bus")?)))
    }
}

/// Opens an AMQP connection over TLS to `url` (an `amqps://` URL).
pub async fn connect(url: &str, tls: &BusTls) -> lapin::Result<Connection> {
    let uri: AMQPUri = url
        .parse()
        .map_err(|e: String| lapin::Error::from(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    let config = Arc::clone(&tls.0);
    let runtime = Runtime::new(TlsTokio(Tokio::current()));
    Connection::connector(
        uri,
        runtime,
        move |uri: AMQPUri, _runtime: Runtime<TlsTokio>| {
            let config = Arc::clone(&config);
            async move {
                let host = uri.authority.host.clone();
                let tcp = TcpStream::connect((host.as_str(), uri.authority.port)).await?;
                tcp.set_nodelay(true)?;
                let name = ServerName::try_from(host.clone()).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{host:?} is not a name a certificate can be checked against"),
                    )
                })?;
                let (config, asked) = noting_a_certificate_request(config);
                let stream = TlsConnector::from(config).connect(name, tcp).await?;
                Ok(AsyncTcpStream::Plain(BusStream::Tls(Box::new(TlsBus {
                    stream: Compat::new(stream),
                    shown_no_certificate: asked.load(Ordering::Relaxed),
                }))))
            }
        },
        ConnectionProperties::default(),
    )
    .await
}

/// Without a client certificate of our own, a per-connection copy of `config` that notes
/// whether the broker asked for one. Under TLS 1.3 a broker that requires one refuses it
/// after our side of the handshake is done; its alert can be lost to a reset, and the
/// refusal must still read as one, not as a broker that is down.
fn noting_a_certificate_request(
    config: Arc<rustls::ClientConfig>,
) -> (Arc<rustls::ClientConfig>, Arc<AtomicBool>) {
    let asked = Arc::new(AtomicBool::new(false));
    if config.client_auth_cert_resolver.has_certs() {
        return (config, asked);
    }
    let mut noting = (*config).clone();
    noting.client_auth_cert_resolver = Arc::new(NoCertificate(Arc::clone(&asked)));
    (Arc::new(noting), asked)
}

#[derive(Debug)]
struct NoCertificate(Arc<AtomicBool>);

impl ResolvesClientCert for NoCertificate {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.0.store(true, Ordering::Relaxed);
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// A TLS connection to the broker.
pub struct TlsBus {
    stream: Compat<TlsStream<TcpStream>>,
    /// The broker asked for a client certificate, we had none, and it has not yet said a
    /// word: a close now is its refusal of the missing certificate.
    shown_no_certificate: bool,
}

impl TlsBus {
    /// A failure or an end of stream while `shown_no_certificate` holds, said as the
    /// rustls error a refused certificate is (so it counts as a refusal, not an outage).
    fn refusal(&self, failure: Option<io::Error>) -> io::Error {
        if failure
            .as_ref()
            .and_then(|e| e.get_ref())
            .is_some_and(|inner| inner.is::<rustls::Error>())
        {
            return failure.expect("checked above");
        }
        let why = failure.map_or_else(|| "closed".to_string(), |e| e.to_string());
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            rustls::Error::General(format!(
                "the broker asked for a client certificate, none is configured \
                 (ssl_cert_file), and the connection then ended: {why}"
            )),
        )
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if !self.shown_no_certificate {
            return polled;
        }
        match polled {
            Poll::Ready(Ok(0)) if !buf.is_empty() => Poll::Ready(Err(self.refusal(None))),
            Poll::Ready(Ok(n)) => {
                self.shown_no_certificate = false;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.refusal(Some(e)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.stream).poll_write(cx, buf) {
            Poll::Ready(Err(e)) if self.shown_no_certificate => {
                Poll::Ready(Err(self.refusal(Some(e))))
            }
            polled => polled,
        }
    }
}

/// tokio's runtime kit for lapin, its TCP streams possibly TLS ones.
#[derive(Debug, Clone)]
pub struct TlsTokio(Tokio);

impl RuntimeKit for TlsTokio {}

impl Executor for TlsTokio {
    type Task<T: Send + 'static> = <Tokio as Executor>::Task<T>;

    fn block_on<T, F: std::future::Future<Output = T>>(&self, f: F) -> T {
        self.0.block_on(f)
    }

    fn spawn<T: Send + 'static, F: std::future::Future<Output = T> + Send + 'static>(
        &self,
        f: F,
    ) -> Task<Self::Task<T>> {
        self.0.spawn(f)
    }

    fn spawn_blocking<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
        &self,
        f: F,
    ) -> Task<Self::Task<T>> {
        self.0.spawn_blocking(f)
    }
}

impl Reactor for TlsTokio {
    type TcpStream = BusStream;
    type Sleep = <Tokio as Reactor>::Sleep;

    /// lapin never registers a socket of its own: it dials through the connector.
    fn register<H: io::Read + io::Write + Send + 'static>(
        &self,
        _socket: H,
    ) -> io::Result<impl AsyncRead + AsyncWrite + Send + Unpin + 'static> {
        Err::<BusStream, _>(io::Error::other(
            "the message bus runtime registers no sockets",
        ))
    }

    fn sleep(&self, dur: Duration) -> Self::Sleep {
        self.0.sleep(dur)
    }

    fn interval(
        &self,
        dur: Duration,
    ) -> impl futures_core::Stream<Item = Instant> + Send + 'static {
        self.0.interval(dur)
    }

    fn tcp_connect_addr(
        &self,
        addr: SocketAddr,
    ) -> impl std::future::Future<Output = io::Result<Self::TcpStream>> + Send + 'static {
        let connecting = self.0.tcp_connect_addr(addr);
        async move { connecting.await.map(BusStream::Plain) }
    }
}

/// A connection to the broker: plain TCP, or TLS over it.
pub enum BusStream {
    Plain(<Tokio as Reactor>::TcpStream),
    Tls(Box<TlsBus>),
}

impl AsyncRead for BusStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            BusStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            BusStream::Tls(s) => s.poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for BusStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            BusStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            BusStream::Tls(s) => s.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BusStream::Plain(s) => Pin::new(s).poll_flush(cx),
            BusStream::Tls(s) => Pin::new(&mut s.stream).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BusStream::Plain(s) => Pin::new(s).poll_close(cx),
            BusStream::Tls(s) => Pin::new(&mut s.stream).poll_close(cx),
        }
    }
}
