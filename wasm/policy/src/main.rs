//! The Kubewarden WASI policy: reads argv and standard input as Kubewarden's WASI runtime gives
//! them, answers on standard output; everything else is the shared core.

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("capi2argo-policy: cannot read standard input: {e}");
        return ExitCode::from(2);
    }
    // The host's time, for certificates: the clock the policy server gives the module, or the
    // pinned one its environment sets.
    let pinned = std::env::var(capi2argo_core::host::NOW_VARIABLE).ok();
    let now = match capi2argo_core::host::now(pinned.as_deref(), std::time::SystemTime::now()) {
        Ok(now) => now,
        Err(e) => {
            eprintln!("capi2argo-policy: {e}");
            return ExitCode::from(2);
        }
    };
    let answer = match mode.as_str() {
        "validate" => capi2argo_policy::validate(&input, Some(now)),
        "validate-settings" => capi2argo_policy::validate_settings(&input),
        other => {
            eprintln!(
                "capi2argo-policy: expected the argument validate or validate-settings (Kubewarden's WASI contract), got {other:?}"
            );
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(answer.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
