//! Carrying out the core's requests through the client, each as the plan made it (conditional
//! on what was read), as field manager `capi2argo`; and, before the next plan, waiting briefly
//! until the caches show what was written, so a plan never makes again what was just made.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capi2argo_core::well_known::MANAGED_BY;
use capi2argo_core::{Preconditions, Request, SecretId};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};

use crate::reading::Caches;
use crate::reporting::metrics::Metrics;

/// How long a reconcile waits for the caches to show its own last writes.
const READ_YOUR_WRITES: Duration = Duration::from_secs(2);

/// Why a request was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The Secret changed, went or appeared since it was read: the plan is stale.
    #[error("{secret} changed, went or appeared since it was read: {source}")]
    Stale {
        secret: SecretId,
        #[source]
        source: kube::Error,
    },
    /// The server refused it, or did not answer.
    #[error("{verb} {secret}: {source}")]
    Failed {
        verb: &'static str,
        secret: SecretId,
        #[source]
        source: kube::Error,
    },
}

impl Refusal {
    /// Whether the server answered: the request was refused for sure (not lost on its way, when
    /// it may have been carried out).
    pub fn definite(&self) -> bool {
        match self {
            Refusal::Stale { .. } => true,
            Refusal::Failed { source, .. } => matches!(source, kube::Error::Api(_)),
        }
    }
}

/// A write the caches should show before the next plan reads them.
#[derive(Clone)]
enum Expect {
    Version(SecretId, String),
    Gone(SecretId, String),
}

/// What one reconcile wrote, as the watches will bring it back: each Secret written at the
/// version the server gave it, each deleted.
#[derive(Default)]
pub struct OwnWrites {
    written: std::collections::HashSet<(SecretId, String)>,
    deleted: std::collections::HashSet<SecretId>,
}

impl OwnWrites {
    /// Whether the Secret `id` at `version` is one of these writes, as written.
    pub fn wrote(&self, id: &SecretId, version: &str) -> bool {
        self.written.contains(&(id.clone(), version.to_string()))
    }

    /// Whether the Secret `id` is one of these deletes.
    pub fn deleted(&self, id: &SecretId) -> bool {
        self.deleted.contains(id)
    }
}

/// Makes requests, and remembers what the caches should show of them.
pub struct Writer {
    client: Client,
    metrics: Metrics,
    pending: Vec<Expect>,
    /// Every write since [`Writer::take_written`] last took them.
    written: Vec<Expect>,
}

impl Writer {
    pub fn new(client: Client, metrics: Metrics) -> Writer {
        Writer {
            client,
            metrics,
            pending: Vec::new(),
            written: Vec::new(),
        }
    }

    /// The writes made since this was last asked, as the watches will bring them back.
    pub fn take_written(&mut self) -> OwnWrites {
        let mut own = OwnWrites::default();
        for expect in self.written.drain(..) {
            match expect {
                Expect::Version(id, version) => {
                    own.written.insert((id, version));
                }
                Expect::Gone(id, _) => {
                    own.deleted.insert(id);
                }
            }
        }
        own
    }

    /// One request, as the plan gives it.
    pub async fn carry_out(&mut self, request: &Request) -> Result<(), Refusal> {
        let id = request.secret();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &id.namespace);
        let params = PostParams {
            dry_run: false,
            field_manager: Some(MANAGED_BY.to_string()),
        };
        let verb = request.verb().word();
        let result = match request {
            Request::Create(secret) => api
                .create(&params, &to_api(secret, &Preconditions::default()))
                .await
                .map(|written| self.expect_version(&id, &written)),
            Request::Replace {
                secret,
                preconditions,
            } => api
                .replace(&id.name, &params, &to_api(secret, preconditions))
                .await
                .map(|written| self.expect_version(&id, &written)),
            Request::Delete { preconditions, .. } => {
                let params = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        uid: preconditions.uid.clone(),
                        resource_version: preconditions.resource_version.clone(),
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&id.name, &params).await.map(|_| {
                    if let Some(uid) = &preconditions.uid {
                        self.expect(Expect::Gone(id.clone(), uid.clone()));
                    }
                })
            }
        };
        match result {
            Ok(()) => {
                self.metrics.write(verb, "ok");
                tracing::info!(verb, secret = %id, "done");
                Ok(())
            }
            // Changed or gone since it was read, or made meanwhile: the plan is stale.
            Err(kube::Error::Api(status)) if matches!(status.code, 409 | 404) => {
                self.metrics.write(verb, "conflict");
                Err(Refusal::Stale {
                    secret: id,
                    source: kube::Error::Api(status),
                })
            }
            Err(source) => {
                self.metrics.write(verb, "error");
                Err(Refusal::Failed {
                    verb,
                    secret: id,
                    source,
                })
            }
        }
    }

    fn expect_version(&mut self, id: &SecretId, written: &Secret) {
        if let Some(version) = written.resource_version() {
            self.expect(Expect::Version(id.clone(), version));
        }
    }

    fn expect(&mut self, expect: Expect) {
        self.written.push(expect.clone());
        self.pending.push(expect);
    }

    /// Waits, briefly, until `caches` show what was last written: a plan made from caches that
    /// do not yet would create again what was just created.
    pub async fn await_own_writes(&mut self, caches: &Caches) {
        if self.pending.is_empty() {
            return;
        }
        let deadline = Instant::now() + READ_YOUR_WRITES;
        loop {
            self.pending.retain(|expect| match expect {
                Expect::Version(id, version) => caches
                    .secret(id)
                    .is_none_or(|s| s.resource_version().as_deref() != Some(version.as_str())),
                Expect::Gone(id, uid) => caches
                    .secret(id)
                    .is_some_and(|s| s.uid().as_deref() == Some(uid.as_str())),
            });
            if self.pending.is_empty() || Instant::now() >= deadline {
                self.pending.clear();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The client's Secret for the core's, field by field.
fn to_api(secret: &capi2argo_core::Secret, conditions: &Preconditions) -> Secret {
    let map = |pairs: &[(String, String)]| {
        (!pairs.is_empty()).then(|| pairs.iter().cloned().collect::<BTreeMap<_, _>>())
    };
    Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            namespace: Some(secret.namespace.clone()),
            uid: conditions.uid.clone(),
            resource_version: conditions.resource_version.clone(),
            labels: map(&secret.labels),
            annotations: map(&secret.annotations),
            ..ObjectMeta::default()
        },
        type_: Some(secret.type_.clone()),
        data: Some(
            secret
                .data
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone())))
                .collect(),
        ),
        ..Secret::default()
    }
}
