//! Fuzzes the kubeconfig reader: any text, never a panic, and no connection without its server.
#![no_main]

use capi2argo_core::Limits;
use capi2argo_core::internals::kubeconfig::{Credentials, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = Limits {
        max_nodes: 200_000,
        max_alias_nodes: 10_000,
        ..Limits::default()
    };
    for credentials in [Credentials::Read, Credentials::Skip] {
        let reading = read(text, None, credentials, &limits);
        if let Some(connection) = reading.connection {
            assert!(!connection.server.is_empty());
            assert!(!connection.server.ends_with('/'));
        }
    }
});
