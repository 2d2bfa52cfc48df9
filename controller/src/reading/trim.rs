//! What a cache keeps of each object: what no plan reads is dropped as the object arrives, so a
//! large fleet's caches hold the plan's input and little else.

use std::sync::Arc;

use capi2argo_core::Values;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::DynamicObject;

/// Drops what no plan reads of an object of type `K`.
pub type Trim<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// Of a Secret, the server's bookkeeping of who wrote which field goes; its values stay where
/// the plan reads them (`values`), and go where it reads only the Secret's name and labels.
pub fn secret(values: Values) -> Trim<Secret> {
    Arc::new(move |secret: &mut Secret| {
        secret.metadata.managed_fields = None;
        let labels = secret.labels();
        if !values.read(labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            secret.data = None;
            secret.string_data = None;
        }
    })
}

/// Of any other object, the server's bookkeeping of who wrote which field.
pub fn object() -> Trim<DynamicObject> {
    Arc::new(|object: &mut DynamicObject| object.metadata.managed_fields = None)
}

/// Of a Cluster API Cluster, its status but what a plan reads (the core's rule): a heartbeat of
/// its conditions leaves the kept object as it was, and wakes nothing.
pub fn cluster() -> Trim<DynamicObject> {
    Arc::new(|object: &mut DynamicObject| {
        object.metadata.managed_fields = None;
        if let Some(status) = object.data.get_mut("status") {
            capi2argo_core::well_known::keep_read_cluster_status(status);
        }
    })
}

/// Of an ApplicationSet, its spec is read; its status (each Application's) is not kept.
pub fn application_set() -> Trim<DynamicObject> {
    Arc::new(|object: &mut DynamicObject| {
        object.metadata.managed_fields = None;
        if let Some(map) = object.data.as_object_mut() {
            map.remove("status");
        }
    })
}

/// Of an Application, its owner, finalizers and destination are read: its status (every
/// resource it manages, its history) and its sources are not kept.
pub fn application() -> Trim<DynamicObject> {
    Arc::new(|object: &mut DynamicObject| {
        object.metadata.managed_fields = None;
        object.metadata.annotations = None;
        if let Some(map) = object.data.as_object_mut() {
            map.remove("status");
            if let Some(spec) = map.get_mut("spec").and_then(|s| s.as_object_mut()) {
                spec.retain(|k, _| k == "destination");
            }
        }
    })
}
