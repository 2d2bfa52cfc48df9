//! The API requests that carry a plan out, as values: what each does, to which Secret, on which
//! conditions, and the Secret it writes. A host makes them as they are (the controller through
//! its client); [`Request::path`] and [`Request::body`] are the same request as text, for
//! `kubectl --raw` (`capi2argo plan -o requests`).

use krm::{Preconditions, Secret};
use yaml::Node;

use krm::object::SecretId;

/// What an API request does to a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `POST` to the namespace's Secrets: fails when a Secret of its name exists by then.
    Create,
    /// `PUT` the Secret with the `resourceVersion` read: refused when it changed since.
    Replace,
    /// `DELETE` the Secret with `DeleteOptions` whose preconditions are the `uid` and
    /// `resourceVersion` read.
    Delete,
}

impl Verb {
    /// The verb's word, as `kubectl --raw` takes it.
    pub fn word(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Replace => "replace",
            Verb::Delete => "delete",
        }
    }
}

/// One API request that carries out part of the plan, conditional on what was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Creates the Secret: the server refuses it when one of its name exists by then.
    Create(Secret),
    /// Replaces the Secret of its name, only as it was read (`preconditions`).
    Replace {
        /// The Secret as it is to be.
        secret: Secret,
        /// What was read of the Secret it replaces.
        preconditions: Preconditions,
    },
    /// Deletes a Secret, only as it was read (`preconditions`).
    Delete {
        /// The Secret that goes.
        secret: SecretId,
        /// What was read of it.
        preconditions: Preconditions,
    },
}

impl Request {
    /// What it does.
    pub fn verb(&self) -> Verb {
        match self {
            Request::Create(_) => Verb::Create,
            Request::Replace { .. } => Verb::Replace,
            Request::Delete { .. } => Verb::Delete,
        }
    }

    /// The Secret it creates, replaces or deletes.
    pub fn secret(&self) -> SecretId {
        match self {
            Request::Create(secret) | Request::Replace { secret, .. } => secret.id(),
            Request::Delete { secret, .. } => secret.clone(),
        }
    }

    /// The API path: the namespace's Secrets for a create, the Secret's own otherwise.
    pub fn path(&self) -> String {
        let id = self.secret();
        match self {
            Request::Create(_) => format!("/api/v1/namespaces/{}/secrets", id.namespace),
            _ => format!("/api/v1/namespaces/{}/secrets/{}", id.namespace, id.name),
        }
    }

    /// The JSON body: the Secret as the API server stores it (credentials included; a replace
    /// with the `resourceVersion` read), or the `DeleteOptions` with the preconditions.
    pub fn body(&self) -> String {
        match self {
            Request::Create(secret) => secret.to_json(&Preconditions::default()),
            Request::Replace {
                secret,
                preconditions,
            } => secret.to_json(preconditions),
            Request::Delete { preconditions, .. } => delete_options(preconditions),
        }
    }
}

/// `DeleteOptions` that delete a Secret only as it was read.
fn delete_options(conditions: &Preconditions) -> String {
    let mut preconditions = Vec::new();
    if let Some(uid) = &conditions.uid {
        preconditions.push(("uid", Node::string(uid.clone())));
    }
    if let Some(version) = &conditions.resource_version {
        preconditions.push(("resourceVersion", Node::string(version.clone())));
    }
    let mut options = vec![
        ("apiVersion", Node::string("v1")),
        ("kind", Node::string("DeleteOptions")),
    ];
    if !preconditions.is_empty() {
        options.push(("preconditions", Node::map(preconditions)));
    }
    let mut body = String::new();
    yaml::emit::write_json(&mut body, &Node::map(options), None);
    body
}
