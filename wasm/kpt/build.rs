//! kpt's Node glue reads the module's memory as `exports.mem` (Go's name), not wasm-ld's `memory`.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=--export-memory=mem");
    }
}
