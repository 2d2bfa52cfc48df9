//! What a server or proxy URL says: whether client-go dials it, whether Argo CD, in a pod of its
//! own, can reach its host, and the user and password it may carry.

/// Whether `url` is what client-go dials: `https://` or `http://` and a host.
pub fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let authority = r.split(['/', '?', '#']).next().unwrap_or_default();
        let host = authority.rsplit('@').next().unwrap_or_default();
        !host.is_empty() && !host.starts_with(':')
    })
}

/// What [`unreachable_host`] says of a host name without a dot.
pub const BARE_SERVICE_NAME: &str = "a bare Service name (its own namespace)";

/// Why Argo CD, running in another pod, could not reach `url`'s host: it is the loopback
/// (vcluster's `https://localhost:8443`) or a bare Service name of the writer's own namespace
/// (HyperShift's `https://kube-apiserver:6443`). `None` for anything else.
pub fn unreachable_host(url: &str) -> Option<&'static str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host == "localhost" || host.starts_with("127.") || host == "::1" {
        Some("the loopback address (its own pod)")
    } else if !host.contains('.') && !host.contains(':') && !host.is_empty() {
        Some(BARE_SERVICE_NAME)
    } else {
        None
    }
}

/// The URL without the `user:password@` it may carry, and whether it carried one.
pub fn without_userinfo(url: &str) -> (String, bool) {
    match userinfo(url) {
        Some(info) => (
            format!("{}{}", &url[..info.start], &url[info.end + 1..]),
            true,
        ),
        None => (url.to_string(), false),
    }
}

/// Where the `user:password` of a URL's `user:password@host` stands (without the `@`).
pub fn userinfo(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest[..end].rfind('@').map(|at| start..start + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_another_pod_cannot_reach() {
        assert!(unreachable_host("https://localhost:8443").is_some());
        assert!(unreachable_host("https://127.0.0.1:6443").is_some());
        assert!(unreachable_host("https://[::1]:6443").is_some());
        assert_eq!(
            unreachable_host("https://kube-apiserver:6443"),
            Some(BARE_SERVICE_NAME)
        );
        assert_eq!(unreachable_host("https://tcp.tenants.svc:6443"), None);
        assert_eq!(unreachable_host("https://10.0.0.1:6443"), None);
        assert_eq!(unreachable_host("https://[fd00::1]:6443"), None);
    }
}
