//! What an update changes in an owned Argo CD Secret, named and never shown: data keys, the
//! fields of `config` by path, labels and annotations by key. Compared as the API server and
//! Argo CD read them: `data` and `stringData` alike (the API server stores both as `data`), and
//! nothing of what the server or kpt add (`uid`, `resourceVersion`, `managedFields`, kpt's and
//! kubectl's own annotations), so a Secret read back with `kubectl get` is unchanged.

use serde_json::Value;

use krm::object::Object;
use yaml::Node;

/// The data keys Argo CD reads, then any other the Secrets hold.
const DATA_KEYS: &[&str] = crate::convert::argocd::SECRET_DATA_KEYS;

/// What differs between the Secret `old` and its replacement `new`, as paths: `server`,
/// `config.tlsClientConfig.certData`, `metadata.labels.<key>`; empty when nothing does.
pub(super) fn changes(old: &Node, new: &Node) -> Vec<String> {
    let (old, new) = (Object::new(old), Object::new(new));
    let mut changed = Vec::new();
    let mut keys: Vec<String> = DATA_KEYS.iter().map(|k| k.to_string()).collect();
    for key in data_keys(old).into_iter().chain(data_keys(new)) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for key in &keys {
        let (before, after) = (bytes(old, key), bytes(new, key));
        if before == after {
            continue;
        }
        let json = |v: &Stored| match v {
            Some(Ok(b)) => serde_json::from_slice::<Value>(b).ok(),
            _ => None,
        };
        match (key.as_str(), json(&before), json(&after)) {
            ("config", Some(b), Some(a)) => {
                let from = changed.len();
                json_changes("config", &b, &a, &mut changed);
                for path in &mut changed[from..] {
                    if let Some(rotated) = rotation(path, &b, &a) {
                        path.push_str(&rotated);
                    }
                }
            }
            _ => changed.push(key.clone()),
        }
    }
    changed.extend(old.metadata_changes(new));
    changed
}

/// A data key's value as stored: its bytes (`stringData` as written, `data` decoded), an
/// error for `data` that is not base64, `None` when the Secret has no such key.
type Stored = Option<Result<Vec<u8>, ()>>;

fn bytes(object: Object, key: &str) -> Stored {
    for section in ["stringData", "data"] {
        let Some(value) = object.node.get(section).and_then(|s| s.get(key)) else {
            continue;
        };
        let Some(text) = value.as_str() else {
            return Some(Err(()));
        };
        if section == "stringData" {
            return Some(Ok(text.as_bytes().to_vec()));
        }
        return Some(krm::b64::decode(text).map(|(b, _)| b).map_err(|_| ()));
    }
    None
}

/// The keys under `data` and `stringData`, in order.
fn data_keys(object: Object) -> Vec<String> {
    ["stringData", "data"]
        .iter()
        .filter_map(|section| object.node.get(section)?.as_map())
        .flatten()
        .filter_map(|(k, _)| k.as_str().map(String::from))
        .collect()
}

/// How an update's change says a certificate was rotated.
pub(super) const ROTATED: &str = " (rotated: ";

/// A certificate in `config` replaced by a newer one (Cluster API renews the admin kubeconfig's
/// client certificate at half its life): ` (rotated: valid until <date>)`, said beside its path.
fn rotation(path: &str, before: &Value, after: &Value) -> Option<String> {
    let field = path.strip_prefix("config.tlsClientConfig.")?;
    if !matches!(field, "certData" | "caData") {
        return None;
    }
    let first = |config: &Value| {
        let text = config.get("tlsClientConfig")?.get(field)?.as_str()?;
        let pem = crate::validate::tls::go_bytes(text)?;
        crate::validate::tls::validities(&pem).into_iter().next()
    };
    let (old, new) = (first(before)?, first(after)?);
    (new.not_before > old.not_before).then(|| {
        format!(
            "{ROTATED}valid until {})",
            crate::validate::expiry::date(new.not_after)
        )
    })
}

/// The paths below `path` where two JSON values differ (objects compared key by key).
fn json_changes(path: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (x, y) = (b.get(key), a.get(key));
                if x == y {
                    continue;
                }
                let below = format!("{path}.{key}");
                match (x, y) {
                    (Some(x), Some(y)) => json_changes(&below, x, y, out),
                    _ => out.push(below),
                }
            }
        }
        _ if before != after => out.push(path.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    fn secret(config: &str, labels: &str) -> Node<'static> {
        let text = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-a\n  labels:\n    a: b\n{labels}stringData:\n  name: a\n  server: https://a\n  config: '{config}'\n"
        );
        parse_stream(&text, &Limits::default()).unwrap()[0]
            .root
            .clone()
            .into_owned()
    }

    #[test]
    fn changes_are_named_by_path_never_by_value() {
        let old = secret(
            r#"{"bearerToken":"secret-one","tlsClientConfig":{"insecure":false,"caData":"QQ=="}}"#,
            "",
        );
        let new = secret(
            r#"{"bearerToken":"secret-two","tlsClientConfig":{"insecure":false,"caData":"Qg=="}}"#,
            "    c: d\n",
        );
        let changed = changes(&old, &new);
        assert_eq!(
            changed,
            [
                "config.bearerToken",
                "config.tlsClientConfig.caData",
                "metadata.labels.c"
            ]
        );
        assert!(!changed.join(" ").contains("secret-"));
    }

    /// Regression (review): data that is not UTF-8 read as absent on both sides, so a changed
    /// binary value went unnoticed; a Secret without a type is stored as Opaque.
    #[test]
    fn binary_values_and_the_default_type_compare_as_stored() {
        let with = |extra: &str, kind: &str| {
            let text = format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n{kind}data:\n  name: YQ==\n{extra}"
            );
            parse_stream(&text, &Limits::default()).unwrap()[0]
                .root
                .clone()
                .into_owned()
        };
        let plain = with("", "type: Opaque\n");
        assert_eq!(changes(&plain, &with("", "")), Vec::<String>::new());
        assert_eq!(
            changes(&with("  extra: //79\n", ""), &with("  extra: //78\n", "")),
            ["extra"]
        );
        assert_eq!(changes(&with("  extra: //79\n", ""), &plain), ["extra"]);
    }

    /// What `kubectl get` gives back: `data` for `stringData`, the server's fields, keys in
    /// another order.
    #[test]
    fn a_secret_read_back_from_the_api_server_is_unchanged() {
        let old = secret(r#"{"tlsClientConfig":{"insecure":false}}"#, "");
        let text = "apiVersion: v1\nkind: Secret\nmetadata:\n  labels:\n    a: b\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\n  name: cluster-a\n  resourceVersion: \"81\"\n  uid: 5d7c\n  managedFields: [{manager: capi2argo}]\ndata:\n  name: YQ==\n  server: aHR0cHM6Ly9h\n  config: eyJ0bHNDbGllbnRDb25maWciOnsiaW5zZWN1cmUiOmZhbHNlfX0=\n";
        let new = parse_stream(text, &Limits::default()).unwrap()[0]
            .root
            .clone()
            .into_owned();
        assert_eq!(changes(&old, &new), Vec::<String>::new());
    }
}
