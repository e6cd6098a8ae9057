//! The HTTP accept loop: HTTP/1.1 with upgrades (WebSocket), a header-read
//! timeout and a cap on open connections, then a graceful drain.
//!
//! - A client must send a request's headers within the header-read timeout,
//!   counted from when the connection is ready for a request (just accepted,
//!   or idle after a response); otherwise the connection is closed. Half-open
//!   "slowloris" sockets therefore hold nothing for long.
//! - At most `max_connections` connections are held at once, upgraded ones
//!   included (the slot is released when the socket is dropped). A connection
//!   accepted beyond the cap is closed at once, so the kernel backlog keeps
//!   draining and clients learn promptly; served connections are unaffected.
//! - On shutdown the loop stops accepting, asks every connection to finish
//!   its in-flight request and close, and waits until they have.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::metrics::Metrics;

/// What the loop needs besides the listener and the router.
pub struct HttpLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `stop` fires, then drains.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    // Every connection task holds a receiver; the drain waits for all to drop.
    let (open_tx, open_rx) = watch::channel(());
    let mut refused_logged = false;
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    if !is_connection_error(&err) {
                        // E.g. out of file descriptors: back off instead of spinning.
                        tracing::warn!(%err, "accept failed; retrying in 1s");
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            () = stop.cancelled() => break,
                        }
                    }
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics.connection_refused();
            if !refused_logged {
                refused_logged = true;
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connection cap reached; closing new connections until some close"
                );
            }
            drop(stream);
            continue;
        };
        refused_logged = false;
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Held::new(stream, slot, metrics.clone()));
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(remote));
            router.clone().oneshot(req.map(axum::body::Body::new))
        });
        let connection = http.serve_connection(io, service).with_upgrades();
        let stop = stop.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let _open = open;
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = ended {
                tracing::debug!(%err, %remote, "connection ended with an error");
            }
        });
    }
    drop(open_rx);
    drop(listener);
    open_tx.closed().await;
}

/// Accept errors that concern one connection only.
fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A socket that holds a connection slot until it is dropped, also after an
/// upgrade hands it to a WebSocket.
struct Held {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Held {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit, metrics: Arc<Metrics>) -> Self {
        metrics.connections_open(1);
        Self {
            stream,
            _slot: slot,
            metrics,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.metrics.connections_open(-1);
    }
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
