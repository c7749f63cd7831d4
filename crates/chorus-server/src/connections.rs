//! The accept loop: each connection under a header and idle timeout, at most a configured number
//! open at once, and drained gracefully on shutdown.
//!
//! `axum::serve` gives no way to set hyper's header-read timeout or to bound connections, so an
//! unauthenticated client could hold half-sent requests and idle keep-alive connections forever;
//! this loop is the same accept-and-serve with those limits (hyper's own builder and graceful
//! shutdown do the work).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::BoxError;
use axum::body::{Bytes, HttpBody};
use axum::http::{Request, Response};
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;
use tower::Service;

/// How many connections the server keeps and how long it waits for a request.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// The longest a client may take to send a request's headers, and the longest a keep-alive
    /// connection may stay idle between requests; the connection is closed after it.
    pub header_timeout: Duration,
    /// Connections open at once; a connection past it is closed at once.
    pub max_connections: usize,
}

/// The scheme clients reach this server by, for the URLs it writes (the A2A cards); a request
/// extension set on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTPS (the listener is [`crate::tls::TlsListener`]).
    Https,
}

impl Scheme {
    /// The scheme of a listener whose connections are `Io` (axum's `Listener` says nothing of
    /// TLS; the connection type does).
    pub fn of<Io: 'static>() -> Scheme {
        let tls = std::any::TypeId::of::<Io>()
            == std::any::TypeId::of::<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>();
        if tls { Scheme::Https } else { Scheme::Http }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets the requests under way
/// finish.
pub async fn serve<L, S, B>(
    mut listener: L,
    app: S,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) where
    L: Listener,
    S: Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes, Error: Into<BoxError>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let warned = AtomicBool::new(false);
    // HTTP/1.1 only (the TLS listener offers no ALPN): detecting HTTP/2 would read the first
    // bytes before any timeout applies, so a client that sends nothing would never be closed.
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let (mut io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if !warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connection limit reached; new connections are closed until some end"
                );
            }
            drop(io);
            continue;
        };
        warned.store(false, Ordering::Relaxed);
        no_delay(&mut io);
        let service = TowerToHyperService::new(app.clone());
        let connection = builder
            .serve_connection(TokioIo::new(io), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A connection's end (closed, timed out, reset) is nothing to report.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Turns Nagle's algorithm off on a TCP (or TLS over TCP) connection: an inbox stream writes
/// one small event after another, and with Nagle on each waited for the client's ACK of the one
/// before (deliver p99 52 ms against 18 ms without, in the `http_path` bench). axum's listener
/// trait says nothing of the socket, so the connection's type is looked at, as for [`Scheme`].
fn no_delay<T: 'static>(io: &mut T) {
    let any: &mut dyn std::any::Any = io;
    let tcp = match any.downcast_mut::<tokio::net::TcpStream>() {
        Some(tcp) => Some(&*tcp),
        None => any
            .downcast_mut::<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>()
            .map(|tls| tls.get_ref().0),
    };
    if let Some(tcp) = tcp {
        let _ = tcp.set_nodelay(true);
    }
}

#[cfg(test)]
mod tests {
    use super::no_delay;

    #[tokio::test]
    async fn an_accepted_tcp_connection_has_nagle_turned_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut accepted, _) = listener.accept().await.unwrap();
        assert!(!accepted.nodelay().unwrap(), "Nagle is on by default");
        no_delay(&mut accepted);
        assert!(accepted.nodelay().unwrap());
        // Any other connection type is left as it is.
        let mut other = std::io::Cursor::new(Vec::<u8>::new());
        no_delay(&mut other);
    }
}
