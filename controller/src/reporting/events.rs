//! Events: what a reconcile says on the objects it is about — a cluster's source (its kubeconfig
//! Secret, or its ClusterProfile), an Application a guard kept — at most a few per reconcile.

use capi2argo_core::{AppRef, SecretId};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

use crate::reading::Caches;

/// At most this many Events per reconcile: a fleet-wide failure says so without flooding.
const EVENTS_PER_RECONCILE: usize = 50;

/// An Event's note holds at most 1 kB.
const NOTE_BYTES: usize = 1000;

/// An Event and the object it is on.
pub type ObjectEvent = (ObjectReference, Event);

/// A Warning Event.
pub fn warning(reason: &str, action: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(truncate(note)),
        action: action.into(),
        secondary: None,
    }
}

/// Publishes `events`, at most [`EVENTS_PER_RECONCILE`]; one that cannot be recorded is only
/// logged.
pub async fn publish(recorder: &Recorder, events: Vec<ObjectEvent>) {
    for (reference, event) in events.into_iter().take(EVENTS_PER_RECONCILE) {
        if let Err(error) = recorder.publish(&event, &reference).await {
            tracing::debug!(error = %error, "an Event could not be recorded");
        }
    }
}

/// An Event's reference to a cluster's source: its Secret, or the ClusterProfile of that name
/// when no Secret has it (with its uid, when the caches hold it).
pub fn source(caches: &Caches, id: &SecretId) -> ObjectReference {
    let secret = caches.secret(id);
    let profile = secret.is_none().then(|| caches.profile(id)).flatten();
    let (api_version, kind, uid) = match profile {
        Some((version, uid)) => (version, "ClusterProfile", Some(uid)),
        None => (
            "v1".to_string(),
            "Secret",
            secret.and_then(|s| s.metadata.uid.clone()),
        ),
    };
    ObjectReference {
        api_version: Some(api_version),
        kind: Some(kind.into()),
        namespace: Some(id.namespace.clone()),
        name: Some(id.name.clone()),
        uid,
        ..ObjectReference::default()
    }
}

/// An Event's reference to the Cluster API Cluster a kubeconfig Secret is for, when the caches
/// hold it: its name is the Secret's `cluster.x-k8s.io/cluster-name` label (or, the Secret gone,
/// the Secret's name without Cluster API's `-kubeconfig`). Else the cluster's source.
pub fn cluster(caches: &Caches, source: &SecretId) -> ObjectReference {
    use capi2argo_core::well_known::CLUSTER_NAME_LABEL;
    let name = caches
        .secret(source)
        .and_then(|s| s.metadata.labels.as_ref()?.get(CLUSTER_NAME_LABEL).cloned())
        .or_else(|| source.name.strip_suffix("-kubeconfig").map(String::from));
    let id = name.map(|name| SecretId::new(&source.namespace, &name));
    match id.as_ref().and_then(|id| Some((id, caches.cluster(id)?))) {
        Some((id, (api_version, uid))) => ObjectReference {
            api_version: Some(api_version),
            kind: Some(capi2argo_core::well_known::CLUSTERS.kind.into()),
            namespace: Some(id.namespace.clone()),
            name: Some(id.name.clone()),
            uid: Some(uid),
            ..ObjectReference::default()
        },
        None => self::source(caches, source),
    }
}

/// A Normal Event.
pub fn normal(reason: &str, action: &str, note: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(truncate(note)),
        action: action.into(),
        secondary: None,
    }
}

/// An Event's reference to an Application (its uid, when the caches hold it).
pub fn application(caches: &Caches, app: &AppRef) -> ObjectReference {
    let resource = capi2argo_core::well_known::APPLICATIONS;
    ObjectReference {
        api_version: Some(format!("{}/{}", resource.group, resource.versions[0])),
        kind: Some(resource.kind.into()),
        namespace: Some(app.namespace.clone()),
        name: Some(app.name.clone()),
        uid: caches.application_uid(app),
        ..ObjectReference::default()
    }
}

/// `text`, cut to what an Event's note holds.
fn truncate(text: &str) -> String {
    if text.len() <= NOTE_BYTES {
        return text.to_string();
    }
    let mut end = NOTE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_note_is_cut_on_a_character_boundary() {
        let note = "é".repeat(NOTE_BYTES);
        let cut = truncate(&note);
        assert!(cut.len() <= NOTE_BYTES + "…".len());
        assert!(cut.ends_with('…'));
        assert_eq!(truncate("short"), "short");
    }
}
