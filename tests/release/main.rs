//! Release engineering, a test binary of its own that plain `cargo test` neither builds nor runs
//! (`test = false`): `make test` runs it as its `release-check` step (`cargo test --test
//! release`), after `make release`. The crates packaged, published (a dry run) and installed from
//! a crates.io stand-in (package.rs); what dist/release holds, as a user meets it (dist.rs).

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;

mod dist;
mod package;
