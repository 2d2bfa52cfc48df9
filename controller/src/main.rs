//! capi2argo-controller: capi2argo left running in a management cluster. It keeps reflector
//! caches of what the settings read, plans with the same pure core on every change (debounced),
//! and makes exactly the plan's conditional requests; metrics, health probes, Events, leader
//! election and `--once` for a Job.
//!
//! One module per job: `reading` (the caches), `reconcile` (one plan, carried out), `requests`
//! (making the core's requests), `credentials` (minting and revoking in workload clusters),
//! `reporting` (logs, metrics, Events), `lease` (leadership), `serve` (the probes), `follow`
//! (the loop), composed by `run`.

mod cause;
mod credentials;
#[cfg(test)]
mod fixtures;
mod flags;
mod follow;
mod lease;
mod reading;
mod reconcile;
mod reporting;
mod requests;
mod run;
mod serve;
mod settings;

use std::process::ExitCode;

use clap::Parser;

use flags::{Flags, LogFormat};

/// mimalloc, not the C library's allocator: see the dependency's note in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let flags = Flags::parse();
    logs(flags.log_format);
    // One TLS provider for the process, before the first client: ring, as kube's default.
    if rustls::crypto::ring::default_provider()
        .install_default()
        .is_err()
    {
        tracing::debug!("a TLS provider was installed already");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(error = %error, "no async runtime");
            return ExitCode::from(3);
        }
    };
    let code = runtime.block_on(run::run(flags)) as u8;
    // Watches still running are dropped with the runtime, not awaited.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}

/// Logs with timestamps, as text or JSON lines, at the level RUST_LOG says (info by default,
/// the controller's own lines).
fn logs(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    // kube's client logs each failed request as `failed with error client error (Connect)`,
    // naming neither the cluster nor the cause, and its watcher each retry of a failed watch
    // with a dump of the Status; the controller's own lines say both, once.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,kube_client::client::builder=off,kube_runtime::watcher=off")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
        LogFormat::Text => builder.with_ansi(false).init(),
    }
}
