//! The function's settings, as the controller runs them: the --config file (a Capi2Argo object or
//! a ConfigMap), then argoNamespace from --argo-namespace, then every --set; and what they say
//! to read.

use std::path::Path;

use capi2argo_core::{Options, ReadSet};

use crate::flags::Flags;

/// Why the settings cannot be used: nothing is read or written then.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("--config {path}: {source}")]
    Unreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("settings: {0}")]
    Refused(#[source] capi2argo_core::RunError),
    #[error(
        "--control-plane {0}: expected RESOURCE.GROUP, such as kubeadmcontrolplanes.controlplane.cluster.x-k8s.io"
    )]
    ControlPlane(String),
}

/// The settings of every plan, and what to read for them.
#[derive(Debug, Clone)]
pub struct Settings {
    pub options: Options,
    pub reads: ReadSet,
    /// Control plane resources to read, as (resource, group).
    pub control_planes: Vec<(String, String)>,
}

impl Settings {
    /// The settings the flags give.
    pub fn load(flags: &Flags) -> Result<Settings, SettingsError> {
        let function_config = match &flags.config {
            Some(path) => Some(read(path)?),
            None => None,
        };
        let mut overrides = Vec::new();
        if let Some(ns) = &flags.argo_namespace {
            overrides.push(format!("argoNamespace={ns}"));
        }
        overrides.extend(flags.set.iter().cloned());
        Settings::new(function_config, overrides, &flags.control_planes)
    }

    /// The settings of a functionConfig and `KEY=VALUE` settings over it, reading the control
    /// planes named `RESOURCE.GROUP` too.
    pub fn new(
        function_config: Option<String>,
        overrides: Vec<String>,
        control_planes: &[String],
    ) -> Result<Settings, SettingsError> {
        let options = Options {
            function_config,
            overrides,
            ..Options::default()
        };
        let reads = capi2argo_core::read_set(&options).map_err(SettingsError::Refused)?;
        // A plan only runs over what was listed from the API server: absent is absent.
        let options = Options {
            host_listed: true,
            ..options
        };
        let control_planes = control_planes
            .iter()
            .map(|r| match r.split_once('.') {
                Some((resource, group)) if !resource.is_empty() && group.contains('.') => {
                    Ok((resource.to_string(), group.to_string()))
                }
                _ => Err(SettingsError::ControlPlane(r.clone())),
            })
            .collect::<Result<_, _>>()?;
        Ok(Settings {
            options,
            reads,
            control_planes,
        })
    }

    /// The options of one plan: these settings, the host's time now.
    pub fn plan_options(&self, now: i64) -> Options {
        Options {
            now: Some(now),
            ..self.options.clone()
        }
    }
}

fn read(path: &Path) -> Result<String, SettingsError> {
    std::fs::read_to_string(path).map_err(|source| SettingsError::Unreadable {
        path: path.display().to_string(),
        source,
    })
}
