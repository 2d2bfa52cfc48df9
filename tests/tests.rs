//! The integration tests, one binary: `cargo test --test integration <module>::<name>` runs one.
//!
//! Tests that drive an outside tool (kpt, kustomize, openssl, strace, a container engine)
//! say loudly when they are skipped because the tool is missing.

mod common;

mod appsets;
mod caco;
mod cli;
mod cmp;
mod container;
mod controller;
mod deploy;
mod docs;
mod goyaml;
mod kpt;
mod kustomize;
mod layers;
mod planner;
mod projects;
mod provisioning;
mod readme;
mod registry;
mod sealing;
mod standin;
mod syscalls;
mod tls;
mod version;
