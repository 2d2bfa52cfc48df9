//! The two small HTTP servers: /metrics for Prometheus, /healthz and /readyz for the kubelet.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What a path answers: its status, content type and body.
pub type Answer = (StatusCode, &'static str, String);
/// The routes of one server.
pub type Routes = Arc<dyn Fn(&str) -> Answer + Send + Sync>;

/// Binds `address` now (so a port in use is an error at start) and serves `routes` on it until
/// `stop` turns true.
pub async fn serve(
    address: SocketAddr,
    routes: Routes,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(address).await?;
    Ok(tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stop.wait_for(|s| *s) => return,
            };
            let Ok((tcp, _)) = accepted else {
                continue;
            };
            let routes = routes.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let (status, content_type, body) = routes(request.uri().path());
                let response = Response::builder()
                    .status(status)
                    .header("content-type", content_type)
                    .body(Full::new(Bytes::from(body)))
                    .unwrap_or_default();
                async move { Ok::<_, Infallible>(response) }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    }))
}

/// 404 for any other path.
pub fn not_found() -> Answer {
    (StatusCode::NOT_FOUND, "text/plain", "not found\n".into())
}
