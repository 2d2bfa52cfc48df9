//! Why an API server could not be read or reached, in words: the clients' errors nest (kube's,
//! then hyper's, then the connector's, then the system's or rustls'), and the outermost says only
//! `client error (Connect)`. The innermost cause is what a user can act on; an API server's
//! refusal is said as what was refused.

use std::error::Error;
use std::io::ErrorKind;

/// The cause of `error`, as a user can act on it: a DNS lookup that failed, a connection
/// refused or timed out, a TLS failure and which side's certificate, an API server's refusal;
/// else the innermost error's own words.
pub fn describe(error: &(dyn Error + 'static)) -> String {
    let mut chain: Vec<&(dyn Error + 'static)> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        chain.push(e);
        next = e.source();
    }
    // An API server's answer: its own message, not kube's dump of the whole Status.
    if let Some(status) = chain
        .iter()
        .find_map(|e| match e.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => Some(status),
            _ => None,
        })
    {
        return format!("{} ({} {})", status.message, status.code, status.reason);
    }
    let words: Vec<String> = chain.iter().map(|e| e.to_string()).collect();
    let said = |needle: &str| words.iter().any(|w| w.contains(needle));
    // webpki's error names, inside rustls' words or only in their Debug form.
    let shown =
        |needle: &str| said(needle) || chain.iter().any(|e| format!("{e:?}").contains(needle));
    if shown("UnsupportedCertVersion") {
        return "TLS: the client certificate is X.509 v1, and only v3 is accepted (rustls): \
                have the kubeconfig's certificate issued again as v3"
            .into();
    }
    if shown("UnknownIssuer") || shown("BadSignature") {
        return "TLS: the kubeconfig's certificate-authority-data does not sign the server's \
                certificate"
            .into();
    }
    if shown("NotValidForName") {
        return "TLS: the server's certificate is not valid for the name the kubeconfig's \
                server (or tls-server-name) gives"
            .into();
    }
    if shown("Expired") && said("certificate") {
        return "TLS: the server's certificate has expired".into();
    }
    for e in &chain {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionRefused => {
                    return "connection refused: nothing listens at that address and port".into();
                }
                ErrorKind::TimedOut => return "timed out: no answer from that address".into(),
                ErrorKind::ConnectionReset => return "the connection was reset".into(),
                ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
                    return format!("unreachable: {io}");
                }
                _ => {}
            }
        }
    }
    if said("dns error") || said("failed to lookup address") {
        let innermost = words.last().cloned().unwrap_or_default();
        return format!("DNS lookup failed ({innermost})");
    }
    if said("deadline has elapsed") || said("operation timed out") {
        return "timed out: no answer from that address".into();
    }
    // Outermost first: kube's API error carries the server's own message.
    words
        .iter()
        .rev()
        .find(|w| !w.is_empty())
        .cloned()
        .unwrap_or_default()
}

/// Why `verb`ing `what` failed, in words: an API server's refusal said as what it refused
/// (`forbidden to list Secrets … in argocd`), else the cause [`describe`] finds.
pub fn reading(verb: &str, what: &str, error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => refusal(verb, what, status),
        other => format!("could not {verb} {what}: {}", describe(other)),
    }
}

/// An API server's refusal to `verb` `what`, with the server's own message (it names the user
/// and the verb the Role lacks).
pub fn refusal(verb: &str, what: &str, status: &kube::core::Status) -> String {
    let message = &status.message;
    match status.code {
        403 => format!("forbidden to {verb} {what}: {message}"),
        401 => format!(
            "unauthorized to {verb} {what}: the API server does not accept the controller's \
             credentials ({message})"
        ),
        404 => format!("cannot {verb} {what}: the API server does not serve them ({message})"),
        code => format!("could not {verb} {what}: the API server answered {code}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error around another, as the clients nest them.
    #[derive(Debug)]
    struct Around(&'static str, Box<dyn Error + Send + Sync>);

    impl std::fmt::Display for Around {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Around {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(self.1.as_ref())
        }
    }

    fn nested(innermost: Box<dyn Error + Send + Sync>) -> Around {
        Around(
            "client error (Connect)",
            Box::new(Around("tcp connect error", innermost)),
        )
    }

    /// Regression (issue 47): the log said `client error (Connect)`, naming no cause.
    #[test]
    fn the_innermost_cause_is_said() {
        let refused = nested(Box::new(std::io::Error::from(ErrorKind::ConnectionRefused)));
        assert!(describe(&refused).starts_with("connection refused"));
        let timed_out = nested(Box::new(std::io::Error::from(ErrorKind::TimedOut)));
        assert!(describe(&timed_out).starts_with("timed out"));
        let dns = Around(
            "client error (Connect)",
            Box::new(Around(
                "dns error",
                Box::new(std::io::Error::other(
                    "failed to lookup address information: Name or service not known",
                )),
            )),
        );
        assert_eq!(
            describe(&dns),
            "DNS lookup failed (failed to lookup address information: Name or service not known)"
        );
    }

    /// Regression (issue 47): an X.509 v1 client certificate was said as `invalid private key:
    /// invalid peer certificate: Other(OtherError(UnsupportedCertVersion))`, pointing the wrong
    /// way twice.
    #[test]
    fn a_version_1_client_certificate_is_said_as_such() {
        #[derive(Debug)]
        struct Webpki;
        impl std::fmt::Display for Webpki {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("invalid peer certificate: Other(OtherError(UnsupportedCertVersion))")
            }
        }
        impl Error for Webpki {}
        let error = Around("invalid private key", Box::new(Webpki));
        assert!(describe(&error).contains("X.509 v1"));
    }

    /// Regression (issue 47): an Event's note held kube's dump of the Status (`Forbidden (Status
    /// { status: Some(Failure), code: 403, … })`); the server's own message is said.
    #[test]
    fn an_api_servers_answer_is_its_message() {
        let status = kube::core::Status {
            code: 403,
            message: "serviceaccounts is forbidden: User \"x\" cannot create resource".into(),
            reason: "Forbidden".into(),
            ..Default::default()
        };
        let error = kube::Error::Api(Box::new(status));
        assert_eq!(
            describe(&error),
            "serviceaccounts is forbidden: User \"x\" cannot create resource (403 Forbidden)"
        );
    }

    /// Regression (issue 47): `/readyz` said only "the caches have not listed yet" when the
    /// reason was a 403.
    #[test]
    fn a_refusal_is_said_as_what_was_refused() {
        let status = kube::core::Status {
            code: 403,
            message: "secrets is forbidden: User \"system:serviceaccount:argocd:x\" cannot list \
                      resource \"secrets\" in API group \"\" in the namespace \"argocd\""
                .into(),
            reason: "Forbidden".into(),
            ..Default::default()
        };
        let said = reading(
            "list",
            "Secrets in argocd",
            &kube::Error::Api(Box::new(status)),
        );
        assert!(
            said.starts_with("forbidden to list Secrets in argocd: "),
            "{said}"
        );
        assert!(said.contains("cannot list resource"), "{said}");
    }
}
