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
    #[error(
        "settings: seal is for output that is committed (kpt, kustomize, a CI job); the controller writes Argo CD's cluster Secrets to its namespace itself, where a SealedSecret would protect nothing and Argo CD would wait for the Sealed Secrets controller: remove seal from its settings"
    )]
    Sealed,
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
        if reads.seals {
            return Err(SettingsError::Sealed);
        }
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

/// The settings at `path`: a file as it is, or a directory of one file per setting (a mounted
/// ConfigMap) as the ConfigMap it was mounted from.
fn read(path: &Path) -> Result<String, SettingsError> {
    let unreadable = |source| SettingsError::Unreadable {
        path: path.display().to_string(),
        source,
    };
    if !path.is_dir() {
        return std::fs::read_to_string(path).map_err(unreadable);
    }
    let mut settings = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(path).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // A ConfigMap volume keeps its data in `..data`, `..<timestamp>` directories: each key
        // is a link beside them.
        if name.starts_with("..") || entry.path().is_dir() {
            continue;
        }
        let value = std::fs::read_to_string(entry.path()).map_err(unreadable)?;
        settings.insert(name, value);
    }
    Ok(config_map(&settings))
}

/// A ConfigMap holding `settings`, as the function takes one as its settings, in JSON (which
/// YAML reads as it is, and which quotes every value whatever it holds).
fn config_map(settings: &std::collections::BTreeMap<String, String>) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "capi2argo-controller-settings"},
        "data": settings,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// deploy/controller mounts its settings ConfigMap as a directory, as kubelet lays one out:
    /// each key a link into `..data`.
    #[test]
    fn a_mounted_config_map_is_read_as_its_settings() {
        let dir = std::env::temp_dir().join(format!("capi2argo-settings-{}", std::process::id()));
        let data = dir.join("..2026_11_27_00_00_00.000000000");
        std::fs::create_dir_all(&data).expect("dir");
        for (key, value) in [("maxPrune", "10%"), ("readApplications", "true")] {
            std::fs::write(data.join(key), value).expect("written");
            std::os::unix::fs::symlink(format!("..data/{key}"), dir.join(key)).expect("link");
        }
        std::os::unix::fs::symlink(data.file_name().expect("a name"), dir.join("..data"))
            .expect("link");
        let settings =
            Settings::new(Some(read(&dir).expect("read")), Vec::new(), &[]).expect("the settings");
        let reads = settings.reads;
        assert!(reads.reads(capi2argo_core::well_known::APPLICATIONS));
        std::fs::remove_dir_all(&dir).expect("removed");
        // A bad setting there is refused as one given any other way.
        let bad = config_map(&[("maxPrune".to_string(), "lots".to_string())].into());
        assert!(Settings::new(Some(bad), Vec::new(), &[]).is_err());
    }

    /// The controller writes Argo CD's Secrets itself: sealing them is refused, saying why.
    #[test]
    fn seal_is_refused() {
        let refused = Settings::new(None, vec!["seal=sealedSecrets".into()], &[]);
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("seal is for output that is committed"),
            "{message}"
        );
    }
}
